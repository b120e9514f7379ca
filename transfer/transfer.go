// Package transfer moves one workspace between Postgram stores (SQLite to
// PostgreSQL and back) as JSON Lines, losslessly and in constant memory.
// pgm-admin export and import are thin wrappers around Export and Import.
//
// # Format (version 1)
//
// One JSON object per line, each with a "kind":
//
//	{"kind":"header","format":"postgram-export","version":1,"workspace":"default",
//	 "exported_at":"…","model":{"provider":"…","name":"…","dimensions":1024},"embeddings":true}
//	{"kind":"entity","id":"…","type":"memory","content":"…", …every entity field…,
//	 "chunks":[{"id":"…","index":0,"content":"…","start":0,"end":812,"embedding":"<base64>"}]}
//	… one line per entity, ordered by id …
//	{"kind":"edge","id":"…","source_id":"…","target_id":"…","relation":"…", …every edge field…}
//	… one line per edge, ordered by id …
//	{"kind":"end","entities":N,"chunks":N,"embeddings":N,"edges":N}
//
// The header names the source workspace and its active embedding model
// (null when it has none); "embeddings" says whether chunks carry vectors.
// An entity line holds every stored field: id, type, content, visibility,
// owner, status, tags, source, metadata (the stored JSON object), client
// id, version, enrichment and extraction state and attempts and errors,
// created and updated timestamps (RFC 3339, microseconds), and its chunks
// with index, content, byte offsets and, when exported, the embedding as
// base64 of little-endian float32s. An edge line holds every column of the
// edges table (provenance and timestamps included). The end line's counts
// let an import prove the file is complete: a file without it is
// truncated.
//
// Excluded: API keys (secrets stay with the store that issued them; create
// new keys on the target), the audit log (it records who did what through
// the source store's keys, which do not travel; the export and the import
// are themselves audited in their stores as admin.export, and
// admin.import.start and admin.import, and fail when the audit log cannot
// record them), the persisted query-embedding cache (derived data),
// queue leases and retry times (process-local).
//
// # Import rules
//
// Ids, versions, timestamps, metadata, tags and extraction state are kept.
// An entity whose chunks all arrive with embeddings made by the target's
// active model is marked completed; every other entity (embeddings not
// exported, dropped with NoEmbeddings, or partial) is queued for
// enrichment as pending, with no attempts, and is embedded by the target's
// worker. A file whose embeddings were made by another model than the
// target's active one is refused before anything is written, unless
// NoEmbeddings is set; a target without an active model adopts the file's.
// An entity or edge id that already exists in the target workspace fails
// the import (naming the line), unless SkipExisting is set: nothing is
// ever duplicated. When the input can be rewound (a file), the whole file
// is checked first (syntax, version, counts, embedding model, existing
// ids), so a bad or truncated file imports nothing; from a pipe, entities
// are written in batches as they are read, the error says up to which line
// the import got, and rerunning with SkipExisting completes it.
package transfer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// FormatName and FormatVersion identify the file format.
const (
	FormatName    = "postgram-export"
	FormatVersion = 1
)

// MaxLineBytes bounds one line of an export (an entity with its chunks and
// their embeddings); a longer line is refused as corrupt.
const MaxLineBytes = 256 << 20

// Header is the first line of an export.
type Header struct {
	Kind       string              `json:"kind"`
	Format     string              `json:"format"`
	Version    int                 `json:"version"`
	Workspace  string              `json:"workspace"`
	ExportedAt time.Time           `json:"exported_at"`
	Model      *postgram.ModelInfo `json:"model"`
	Embeddings bool                `json:"embeddings"`
}

// entityLine is an entity line: every field, none omitted.
type entityLine struct {
	Kind               string               `json:"kind"`
	ID                 uuid.UUID            `json:"id"`
	Type               postgram.EntityType  `json:"type"`
	Content            string               `json:"content"`
	Visibility         postgram.Visibility  `json:"visibility"`
	Owner              string               `json:"owner"`
	Status             postgram.Status      `json:"status"`
	Tags               []string             `json:"tags"`
	Source             string               `json:"source"`
	Metadata           json.RawMessage      `json:"metadata"`
	ClientID           string               `json:"client_id"`
	Version            int64                `json:"version"`
	EnrichmentStatus   postgram.StageStatus `json:"enrichment_status"`
	EnrichmentAttempts int                  `json:"enrichment_attempts"`
	EnrichmentError    string               `json:"enrichment_error"`
	ExtractionStatus   postgram.StageStatus `json:"extraction_status"`
	ExtractionAttempts int                  `json:"extraction_attempts"`
	ExtractionError    string               `json:"extraction_error"`
	CreatedAt          time.Time            `json:"created_at"`
	UpdatedAt          time.Time            `json:"updated_at"`
	Chunks             []chunkLine          `json:"chunks"`
}

type chunkLine struct {
	ID        uuid.UUID `json:"id"`
	Index     int       `json:"index"`
	Content   string    `json:"content"`
	Start     int       `json:"start"`
	End       int       `json:"end"`
	Embedding *string   `json:"embedding,omitempty"` // base64 of little-endian float32s
}

type edgeLine struct {
	Kind string `json:"kind"`
	postgram.Edge
}

// Counts are what an export holds; the end line carries them.
type Counts struct {
	Entities   int `json:"entities"`
	Chunks     int `json:"chunks"`
	Embeddings int `json:"embeddings"`
	Edges      int `json:"edges"`
}

type endLine struct {
	Kind string `json:"kind"`
	Counts
}

// ExportOptions configures Export.
type ExportOptions struct {
	// NoEmbeddings leaves embeddings out (the target re-embeds).
	NoEmbeddings bool
	// Progress, when set, is called after each entity and edge written with
	// the number written so far.
	Progress func(done int)
	// Now is the export time written in the header. Default time.Now.
	Now func() time.Time
}

// Export writes the Admin's workspace to w. It reads one consistent snapshot
// page by page and writes line by line, so memory does not grow with the
// workspace. The caller's w should be buffered only if it wants; Export
// buffers itself and flushes before returning.
func Export(ctx context.Context, adm *postgram.Admin, w io.Writer, opts ExportOptions) (Counts, error) {
	st, ws := adm.Storage(), adm.Workspace()
	var n Counts
	if opts.Now == nil {
		opts.Now = time.Now
	}
	modelID, model, ok, err := st.ActiveModel(ctx)
	if err != nil {
		return n, fmt.Errorf("export: %w", err)
	}
	h := Header{Kind: "header", Format: FormatName, Version: FormatVersion, Workspace: ws,
		ExportedAt: opts.Now().UTC().Truncate(time.Microsecond)}
	if ok {
		h.Model = &model
		h.Embeddings = !opts.NoEmbeddings
	}
	if !h.Embeddings {
		modelID = 0
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return n, fmt.Errorf("export: write header: %w", err)
	}
	done := 0
	progress := func() {
		done++
		if opts.Progress != nil {
			opts.Progress(done)
		}
	}
	err = st.ExportWorkspace(ctx, ws, modelID, func(r *driver.EntityRecord) error {
		line := toEntityLine(r)
		n.Entities++
		n.Chunks += len(line.Chunks)
		for _, c := range line.Chunks {
			if c.Embedding != nil {
				n.Embeddings++
			}
		}
		if err := enc.Encode(line); err != nil {
			return fmt.Errorf("write entity %s: %w", r.Entity.ID, err)
		}
		progress()
		return nil
	}, func(e *postgram.Edge) error {
		n.Edges++
		if err := enc.Encode(edgeLine{Kind: "edge", Edge: *e}); err != nil {
			return fmt.Errorf("write edge %s: %w", e.ID, err)
		}
		progress()
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("export: %w", err)
	}
	// Audited before the end line: an export the audit log does not
	// record fails, and its file lacks the end line, so no import takes it.
	if err := audit(ctx, st, ws, "admin.export", map[string]any{"entities": n.Entities, "chunks": n.Chunks,
		"embeddings": n.Embeddings, "edges": n.Edges}, opts.Now); err != nil {
		_ = bw.Flush()
		return n, fmt.Errorf("export: %w", err)
	}
	if err := enc.Encode(endLine{Kind: "end", Counts: n}); err != nil {
		return n, fmt.Errorf("export: write end: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return n, fmt.Errorf("export: %w", err)
	}
	return n, nil
}

// audit records an export or import in the store's audit log. An export
// or import that cannot be audited fails.
func audit(ctx context.Context, st driver.Storage, ws, op string, details map[string]any, now func() time.Time) error {
	err := st.AppendAudit(ctx, ws, &postgram.AuditEntry{ID: uuid.New(), At: now().UTC().Truncate(time.Microsecond),
		Operation: op, Details: details})
	if err != nil {
		return fmt.Errorf("record %s in the audit log: %w", op, err)
	}
	return nil
}

func toEntityLine(r *driver.EntityRecord) *entityLine {
	e := &r.Entity
	meta := r.Metadata
	if len(meta) == 0 {
		meta = json.RawMessage("{}")
	} else if bytes.ContainsAny(meta, " \t\r\n") {
		var b bytes.Buffer
		if json.Compact(&b, meta) == nil {
			meta = b.Bytes()
		}
	}
	tags := e.Tags
	if tags == nil {
		tags = []string{}
	}
	l := &entityLine{Kind: "entity", ID: e.ID, Type: e.Type, Content: e.Content, Visibility: e.Visibility, Owner: e.Owner,
		Status: e.Status, Tags: tags, Source: e.Source, Metadata: meta, ClientID: e.ClientID, Version: e.Version,
		EnrichmentStatus: e.EnrichmentStatus, EnrichmentAttempts: e.EnrichmentAttempts, EnrichmentError: e.EnrichmentError,
		ExtractionStatus: e.ExtractionStatus, ExtractionAttempts: e.ExtractionAttempts, ExtractionError: e.ExtractionError,
		CreatedAt: e.CreatedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC(), Chunks: make([]chunkLine, len(r.Chunks))}
	for i, c := range r.Chunks {
		l.Chunks[i] = chunkLine{ID: c.ID, Index: c.Index, Content: c.Content, Start: c.Start, End: c.End}
		if c.Embedding != nil {
			s := encodeVector(c.Embedding)
			l.Chunks[i].Embedding = &s
		}
	}
	return l
}

func encodeVector(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func decodeVector(s string) ([]float32, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("is not base64: %v", err)
	}
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("is %d bytes, not a whole number of float32s", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if f := float64(v[i]); math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("has a component that is not finite")
		}
	}
	return v, nil
}

// ImportOptions configures Import.
type ImportOptions struct {
	// NoEmbeddings drops the file's embeddings: every entity is queued
	// for enrichment with the target's model. Use it to import into a
	// store whose active model differs from the file's.
	NoEmbeddings bool
	// SkipExisting skips entities and edges whose ids already exist in the
	// target workspace instead of failing.
	SkipExisting bool
	// Progress, when set, is called as input is consumed with the number
	// of bytes read so far.
	Progress func(bytesRead int64)
	// BatchEntities bounds the entities written per transaction. Default 100.
	BatchEntities int
	// Now stamps the import's audit entry. Default time.Now.
	Now func() time.Time
}

// ImportStats says what Import did.
type ImportStats struct {
	Header Header `json:"header"`
	// Entities and Edges were inserted; Skipped* existed already.
	Entities        int `json:"entities"`
	Edges           int `json:"edges"`
	SkippedEntities int `json:"skipped_entities"`
	SkippedEdges    int `json:"skipped_edges"`
	Chunks          int `json:"chunks"`
	Embeddings      int `json:"embeddings"`
	// Pending entities were queued for enrichment.
	Pending int `json:"pending"`
}

// LineError is a problem with one line of the input.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

func lineErr(line int, format string, args ...any) error {
	return &LineError{Line: line, Err: fmt.Errorf("%w: "+format, append([]any{postgram.ErrInvalidArgument}, args...)...)}
}

// Import reads an export from r into the Admin's workspace (see the
// package documentation for the rules).
func Import(ctx context.Context, adm *postgram.Admin, r io.Reader, opts ImportOptions) (ImportStats, error) {
	st, ws := adm.Storage(), adm.Workspace()
	if opts.BatchEntities <= 0 {
		opts.BatchEntities = 100
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	// A rewindable input is checked whole before anything is written.
	if rs, ok := r.(io.ReadSeeker); ok {
		if start, err := rs.Seek(0, io.SeekCurrent); err == nil {
			quiet := opts
			quiet.Progress = nil
			if _, err := run(ctx, st, ws, rs, quiet, true); err != nil {
				return ImportStats{}, err
			}
			if _, err := rs.Seek(start, io.SeekStart); err != nil {
				return ImportStats{}, fmt.Errorf("import: rewind the input: %w", err)
			}
		}
	}
	// An import the audit log cannot record does not start; one whose
	// completion it cannot record fails (the start entry stays).
	if err := audit(ctx, st, ws, "admin.import.start", map[string]any{"skip_existing": opts.SkipExisting,
		"no_embeddings": opts.NoEmbeddings}, opts.Now); err != nil {
		return ImportStats{}, fmt.Errorf("import: nothing was imported: %w", err)
	}
	stats, err := run(ctx, st, ws, r, opts, false)
	if err != nil {
		return stats, err
	}
	if err := audit(ctx, st, ws, "admin.import", map[string]any{"from_workspace": stats.Header.Workspace, "entities": stats.Entities,
		"edges": stats.Edges, "skipped_entities": stats.SkippedEntities, "skipped_edges": stats.SkippedEdges,
		"embeddings": stats.Embeddings, "pending": stats.Pending}, opts.Now); err != nil {
		return stats, fmt.Errorf("import: the data was imported, but %w", err)
	}
	return stats, nil
}

// Check reads a whole export and reports what is wrong with it, without
// writing anything: syntax, format version, completeness, the embedding
// model against the store's and, unless SkipExisting, ids that exist in
// the Admin's workspace.
func Check(ctx context.Context, adm *postgram.Admin, r io.Reader, opts ImportOptions) (ImportStats, error) {
	st, ws := adm.Storage(), adm.Workspace()
	return run(ctx, st, ws, r, opts, true)
}

// lineReader reads newline-terminated lines, counting them and the bytes.
type lineReader struct {
	r     *bufio.Reader
	line  int
	bytes int64
	buf   []byte
}

// next returns the next line without its newline; io.EOF at a clean end.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		lr.buf = append(lr.buf, chunk...)
		lr.bytes += int64(len(chunk))
		if len(lr.buf) > MaxLineBytes {
			return nil, lineErr(lr.line+1, "longer than %d bytes: not a Postgram export, or corrupt", MaxLineBytes)
		}
		switch {
		case err == nil:
			lr.line++
			return bytes.TrimRight(lr.buf, "\r\n"), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(lr.buf) == 0 {
				return nil, io.EOF
			}
			lr.line++
			return nil, lineErr(lr.line, "the file ends in the middle of this line: it is truncated")
		default:
			return nil, fmt.Errorf("import: read line %d: %w", lr.line+1, err)
		}
	}
}

func strictUnmarshal(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one JSON value on the line")
	}
	return nil
}

// pendingEntity is an entity read but not yet written.
type pendingEntity struct {
	rec  *driver.EntityRecord
	line int
}

func run(ctx context.Context, st driver.Storage, ws string, r io.Reader, opts ImportOptions, dry bool) (ImportStats, error) {
	var stats ImportStats
	lr := &lineReader{r: bufio.NewReaderSize(r, 1<<20)}
	first, err := lr.next()
	if errors.Is(err, io.EOF) {
		return stats, lineErr(1, "the input is empty: not a Postgram export")
	}
	if err != nil {
		return stats, err
	}
	h, err := parseHeader(first)
	if err != nil {
		return stats, &LineError{Line: 1, Err: err}
	}
	stats.Header = h
	withVectors := h.Embeddings && !opts.NoEmbeddings
	modelID, err := targetModel(ctx, st, h, withVectors, dry)
	if err != nil {
		return stats, err
	}

	var batch []pendingEntity
	batchBytes := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		defer func() { batch, batchBytes = batch[:0], 0 }()
		if dry {
			if opts.SkipExisting {
				return nil
			}
			ids := make([]uuid.UUID, len(batch))
			for i, p := range batch {
				ids[i] = p.rec.Entity.ID
			}
			found, err := st.GetEntities(ctx, ws, ids)
			if err != nil {
				return fmt.Errorf("import: look up existing ids: %w", err)
			}
			if len(found) > 0 {
				exists := map[uuid.UUID]bool{}
				for _, e := range found {
					exists[e.ID] = true
				}
				for _, p := range batch {
					if exists[p.rec.Entity.ID] {
						return &LineError{Line: p.line, Err: fmt.Errorf("%w: entity %s already exists in workspace %q; nothing was imported "+
							"(use --skip-existing to import only what is missing)", postgram.ErrConflict, p.rec.Entity.ID, ws)}
					}
				}
			}
			return nil
		}
		recs := make([]*driver.EntityRecord, len(batch))
		for i, p := range batch {
			recs[i] = p.rec
		}
		n, err := st.ImportEntities(ctx, ws, modelID, recs, opts.SkipExisting)
		if err != nil {
			return &LineError{Line: batch[0].line, Err: fmt.Errorf("%w (the entities of lines %d-%d were not imported; the lines before %d were: "+
				"rerun with --skip-existing to continue)", err, batch[0].line, batch[len(batch)-1].line, batch[0].line)}
		}
		stats.Entities += n
		stats.SkippedEntities += len(batch) - n
		return nil
	}

	var edges []postgram.Edge
	var edgeLines []int
	flushEdges := func() error {
		if len(edges) == 0 || dry {
			edges, edgeLines = edges[:0], edgeLines[:0]
			return nil
		}
		n, err := st.ImportEdges(ctx, ws, edges, opts.SkipExisting)
		if err != nil {
			return &LineError{Line: edgeLines[0], Err: fmt.Errorf("%w (the edges of lines %d-%d were not imported; everything before line %d was: "+
				"rerun with --skip-existing to continue)", err, edgeLines[0], edgeLines[len(edgeLines)-1], edgeLines[0])}
		}
		stats.Edges += n
		stats.SkippedEdges += len(edges) - n
		edges, edgeLines = edges[:0], edgeLines[:0]
		return nil
	}

	var seen Counts
	var end *endLine
	inEdges := false
	for {
		if err := ctx.Err(); err != nil {
			return stats, err
		}
		b, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return stats, err
		}
		if opts.Progress != nil {
			opts.Progress(lr.bytes)
		}
		ln := lr.line
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		if end != nil {
			return stats, lineErr(ln, "data after the end record")
		}
		var k struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(b, &k); err != nil {
			return stats, lineErr(ln, "not a JSON object: %v", shortErr(err))
		}
		switch k.Kind {
		case "entity":
			if inEdges {
				return stats, lineErr(ln, "an entity after the edges: entities must come first")
			}
			rec, nc, err := parseEntity(b, h, withVectors)
			if err != nil {
				return stats, &LineError{Line: ln, Err: err}
			}
			seen.Entities++
			seen.Chunks += len(rec.Chunks)
			seen.Embeddings += nc
			stats.Chunks += len(rec.Chunks)
			if withVectors {
				stats.Embeddings += nc
			}
			if rec.Entity.EnrichmentStatus == postgram.StagePending {
				stats.Pending++
			}
			batch = append(batch, pendingEntity{rec: rec, line: ln})
			batchBytes += len(b)
			if len(batch) >= opts.BatchEntities || batchBytes >= 16<<20 {
				if err := flush(); err != nil {
					return stats, err
				}
			}
		case "edge":
			if !inEdges {
				if err := flush(); err != nil {
					return stats, err
				}
				inEdges = true
			}
			e, err := parseEdge(b)
			if err != nil {
				return stats, &LineError{Line: ln, Err: err}
			}
			seen.Edges++
			edges = append(edges, e)
			edgeLines = append(edgeLines, ln)
			if len(edges) >= 500 {
				if err := flushEdges(); err != nil {
					return stats, err
				}
			}
		case "end":
			var e endLine
			if err := strictUnmarshal(b, &e); err != nil {
				return stats, lineErr(ln, "bad end record: %v", shortErr(err))
			}
			if e.Counts != seen {
				return stats, lineErr(ln, "the end record counts %+v but the file holds %+v: it is damaged", e.Counts, seen)
			}
			end = &e
		case "header":
			return stats, lineErr(ln, "a second header: two exports were concatenated")
		case "":
			return stats, lineErr(ln, `no "kind": not a line of a Postgram export`)
		default:
			return stats, lineErr(ln, "unknown kind %q", k.Kind)
		}
	}
	if end == nil {
		return stats, lineErr(lr.line, "the file ends without its end record: it is truncated (%d entities and %d edges read)", seen.Entities, seen.Edges)
	}
	if err := flush(); err != nil {
		return stats, err
	}
	if err := flushEdges(); err != nil {
		return stats, err
	}
	if dry {
		stats.Entities, stats.Edges = seen.Entities, seen.Edges
	}
	return stats, nil
}

func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

func parseHeader(b []byte) (Header, error) {
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(b, &probe); err != nil {
		return Header{}, fmt.Errorf("%w: not a Postgram export (the first line is not a JSON object)", postgram.ErrInvalidArgument)
	}
	var h Header
	if err := json.Unmarshal(b, &h); err != nil || h.Kind != "header" || h.Format != FormatName {
		return Header{}, fmt.Errorf("%w: not a Postgram export (the first line is not its header)", postgram.ErrInvalidArgument)
	}
	if h.Version > FormatVersion {
		return Header{}, fmt.Errorf("%w: the export has format version %d, newer than this Postgram reads (%d): upgrade Postgram to import it",
			postgram.ErrInvalidArgument, h.Version, FormatVersion)
	}
	if h.Version < 1 {
		return Header{}, fmt.Errorf("%w: format version %d is not valid", postgram.ErrInvalidArgument, h.Version)
	}
	if err := strictUnmarshal(b, &h); err != nil {
		return Header{}, fmt.Errorf("%w: bad header: %s", postgram.ErrInvalidArgument, shortErr(err))
	}
	if h.Embeddings && (h.Model == nil || h.Model.Dimensions <= 0 || h.Model.Name == "") {
		return Header{}, fmt.Errorf("%w: the header says chunks carry embeddings but names no model with dimensions", postgram.ErrInvalidArgument)
	}
	return h, nil
}

// targetModel returns the target's model id for the file's embeddings (0
// when none are imported), making the file's model active on a store that
// has none (not when dry).
func targetModel(ctx context.Context, st driver.Storage, h Header, withVectors, dry bool) (int64, error) {
	if !withVectors {
		return 0, nil
	}
	id, cur, ok, err := st.ActiveModel(ctx)
	if err != nil {
		return 0, fmt.Errorf("import: %w", err)
	}
	if ok && cur != *h.Model {
		return 0, fmt.Errorf("import: %w: the file's embeddings were made by %s/%s (%d dimensions) but the target store's active model is %s/%s (%d dimensions); "+
			"import with --no-embeddings to drop them and have the target re-embed every chunk with its model",
			postgram.ErrModelMismatch, h.Model.Provider, h.Model.Name, h.Model.Dimensions, cur.Provider, cur.Name, cur.Dimensions)
	}
	if ok || dry {
		return id, nil
	}
	id, err = st.EnsureModel(ctx, *h.Model)
	if err != nil {
		return 0, fmt.Errorf("import: make the file's embedding model active: %w", err)
	}
	return id, nil
}

func validText(field, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", postgram.ErrInvalidArgument, field)
	}
	if bytes.IndexByte([]byte(s), 0) >= 0 {
		return fmt.Errorf("%w: %s contains a NUL character", postgram.ErrInvalidArgument, field)
	}
	return nil
}

// parseEntity decodes and checks an entity line and applies the import's
// enrichment rules. It returns the number of chunks carrying embeddings.
func parseEntity(b []byte, h Header, withVectors bool) (*driver.EntityRecord, int, error) {
	var l entityLine
	if err := strictUnmarshal(b, &l); err != nil {
		return nil, 0, fmt.Errorf("%w: bad entity: %s", postgram.ErrInvalidArgument, shortErr(err))
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: entity %s: "+format, append([]any{postgram.ErrInvalidArgument, l.ID}, args...)...)
	}
	switch {
	case l.ID == uuid.Nil:
		return nil, 0, bad("id is missing")
	case !l.Type.Valid():
		return nil, 0, bad("type %q is not valid", l.Type)
	case !l.Visibility.Valid():
		return nil, 0, bad("visibility %q is not valid", l.Visibility)
	case !l.Status.Valid():
		return nil, 0, bad("status %q is not valid", l.Status)
	case !validStage(l.EnrichmentStatus):
		return nil, 0, bad("enrichment_status %q is not valid", l.EnrichmentStatus)
	case !validStage(l.ExtractionStatus):
		return nil, 0, bad("extraction_status %q is not valid", l.ExtractionStatus)
	case l.Version < 1:
		return nil, 0, bad("version %d is not positive", l.Version)
	case l.CreatedAt.IsZero() || l.UpdatedAt.IsZero():
		return nil, 0, bad("created_at and updated_at are required")
	case l.EnrichmentAttempts < 0 || l.ExtractionAttempts < 0:
		return nil, 0, bad("attempts must not be negative")
	}
	for f, s := range map[string]string{"content": l.Content, "owner": l.Owner, "source": l.Source, "client_id": l.ClientID,
		"enrichment_error": l.EnrichmentError, "extraction_error": l.ExtractionError} {
		if err := validText(f, s); err != nil {
			return nil, 0, bad("%v", err)
		}
	}
	for i, t := range l.Tags {
		if err := validText(fmt.Sprintf("tags[%d]", i), t); err != nil {
			return nil, 0, bad("%v", err)
		}
	}
	meta := bytes.TrimSpace(l.Metadata)
	if len(meta) == 0 || meta[0] != '{' || bytes.Contains(meta, []byte(`\u0000`)) {
		return nil, 0, bad("metadata must be a JSON object without NUL characters")
	}
	rec := &driver.EntityRecord{Metadata: json.RawMessage(meta), Chunks: make([]driver.ChunkRecord, len(l.Chunks))}
	rec.Entity = postgram.Entity{ID: l.ID, Type: l.Type, Content: l.Content, Visibility: l.Visibility, Owner: l.Owner, Status: l.Status,
		Tags: l.Tags, Source: l.Source, Version: l.Version, ClientID: l.ClientID,
		EnrichmentStatus: l.EnrichmentStatus, EnrichmentAttempts: l.EnrichmentAttempts, EnrichmentError: l.EnrichmentError,
		ExtractionStatus: l.ExtractionStatus, ExtractionAttempts: l.ExtractionAttempts, ExtractionError: l.ExtractionError,
		CreatedAt: l.CreatedAt.UTC(), UpdatedAt: l.UpdatedAt.UTC()}
	if rec.Entity.Tags == nil {
		rec.Entity.Tags = []string{}
	}
	embedded := 0
	for i, c := range l.Chunks {
		switch {
		case c.ID == uuid.Nil:
			return nil, 0, bad("chunk %d has no id", i)
		case c.Index != i:
			return nil, 0, bad("chunk %d has index %d: chunks must be numbered 0, 1, … in order", i, c.Index)
		case c.Start < 0 || c.End < c.Start || c.End > len(l.Content):
			return nil, 0, bad("chunk %d has offsets %d-%d outside the content (%d bytes)", i, c.Start, c.End, len(l.Content))
		}
		if err := validText(fmt.Sprintf("chunk %d content", i), c.Content); err != nil {
			return nil, 0, bad("%v", err)
		}
		rec.Chunks[i] = driver.ChunkRecord{ID: c.ID, Index: c.Index, Content: c.Content, Start: c.Start, End: c.End}
		if c.Embedding == nil {
			continue
		}
		if !h.Embeddings {
			return nil, 0, bad("chunk %d carries an embedding but the header says the export has none", i)
		}
		v, err := decodeVector(*c.Embedding)
		if err != nil {
			return nil, 0, bad("the embedding of chunk %d %v", i, err)
		}
		if len(v) != h.Model.Dimensions {
			return nil, 0, bad("the embedding of chunk %d has %d dimensions; the header's model has %d", i, len(v), h.Model.Dimensions)
		}
		embedded++
		if withVectors {
			rec.Chunks[i].Embedding = v
		}
	}
	// Enrichment: completed when every chunk arrives embedded by the
	// target's model, else queued afresh.
	e := &rec.Entity
	if withVectors && embedded == len(l.Chunks) {
		e.EnrichmentStatus, e.EnrichmentError = postgram.StageCompleted, ""
	} else {
		e.EnrichmentStatus, e.EnrichmentAttempts, e.EnrichmentError = postgram.StagePending, 0, ""
	}
	return rec, embedded, nil
}

func validStage(s postgram.StageStatus) bool {
	switch s {
	case postgram.StagePending, postgram.StageCompleted, postgram.StageFailed, postgram.StageSkipped:
		return true
	}
	return false
}

func parseEdge(b []byte) (postgram.Edge, error) {
	var l edgeLine
	if err := strictUnmarshal(b, &l); err != nil {
		return l.Edge, fmt.Errorf("%w: bad edge: %s", postgram.ErrInvalidArgument, shortErr(err))
	}
	e := l.Edge
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: edge %s: "+format, append([]any{postgram.ErrInvalidArgument, e.ID}, args...)...)
	}
	switch {
	case e.ID == uuid.Nil || e.SourceID == uuid.Nil || e.TargetID == uuid.Nil:
		return e, bad("id, source_id and target_id are required")
	case e.SourceID == e.TargetID:
		return e, bad("source_id equals target_id")
	case e.Relation == "":
		return e, bad("relation is required")
	case !(e.Confidence >= 0 && e.Confidence <= 1):
		return e, bad("confidence %v is not between 0 and 1", e.Confidence)
	case e.CreatedAt.IsZero():
		return e, bad("created_at is required")
	}
	for f, s := range map[string]string{"relation": e.Relation, "source": e.Source, "provider": e.Provider, "model": e.Model, "prompt_version": e.PromptVersion} {
		if err := validText(f, s); err != nil {
			return e, bad("%v", err)
		}
	}
	if e.UpdatedAt.IsZero() {
		e.UpdatedAt = e.CreatedAt
	}
	e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	return e, nil
}
