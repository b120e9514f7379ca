package transfer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/transfer"
)

const dims = 64

func openSQLite(t *testing.T) driver.Storage {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "p.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

func openPostgres(t *testing.T) driver.Storage {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, postgres.Config{URL: pgtest.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// populate fills workspace "default" of st with entities of every type
// and status (archived ones included), metadata, tags, a client id,
// multi-chunk content, embeddings for most entities (some left pending)
// and manual and derived edges.
func populate(t *testing.T, st driver.Storage) []uuid.UUID {
	t.Helper()
	ctx := context.Background()
	clock := time.Date(2024, 5, 6, 7, 8, 9, 123456000, time.UTC)
	c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(dims),
		Now: func() time.Time { clock = clock.Add(1234567 * time.Microsecond); return clock }})
	if err != nil {
		t.Fatal(err)
	}
	var ids []uuid.UUID
	long := strings.Repeat("A long document about the migration of the ABC-1234 ledger, written in several paragraphs. ", 40)
	for i, typ := range postgram.EntityTypes {
		in := postgram.StoreInput{Type: typ, Content: fmt.Sprintf("%s number %d about project Orion and e-mail v1.2.3", typ, i),
			Tags: []string{"t" + fmt.Sprint(i), "shared"}, Source: "test://" + string(typ), Owner: "owner" + fmt.Sprint(i%2),
			Visibility: postgram.Visibilities[i%3],
			Metadata:   map[string]any{"n": float64(i), "nested": map[string]any{"list": []any{"a", 1.5, true, nil}}, "unicode": "café ✓"}}
		if typ == postgram.TypeDocument {
			in.Content = long
		}
		e, err := c.Store(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	// Session context written by a client (client_id set).
	sc := postgramtest.Admin(t, c).As(postgram.Principal{ClientID: "agent-7", Scopes: postgram.AllScopes})
	e, err := sc.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "working context of agent seven",
		Metadata: map[string]any{"memory_role": "session_context"}})
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, e.ID)
	// An updated entity (version 3) and an archived one.
	u, err := c.Update(ctx, ids[0], postgram.UpdateInput{Version: 1, Content: ptr("memory number 0, revised twice")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Update(ctx, ids[0], postgram.UpdateInput{Version: u.Version, Tags: &[]string{"revised"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Delete(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	// Written after enrichment: stays pending.
	for i := range 3 {
		e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeTask, Content: fmt.Sprintf("pending task %d", i), Status: postgram.StatusNext})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if _, err := c.Link(ctx, postgram.LinkInput{SourceID: ids[0], TargetID: ids[2], Relation: "mentions", Confidence: ptr(0.7),
		Metadata: map[string]any{"why": "test"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Link(ctx, postgram.LinkInput{SourceID: ids[5], TargetID: ids[1], Relation: "part_of"}); err != nil {
		t.Fatal(err)
	}
	origin := ids[5]
	at := clock.Add(time.Second)
	if _, err := st.UpsertEdges(ctx, "default", []postgram.Edge{{ID: uuid.New(), SourceID: ids[3], TargetID: ids[4], Relation: "works_on",
		Confidence: 0.55, Source: postgram.EdgeSourceLLM, Metadata: map[string]any{"evidence": "quote"}, OriginID: &origin,
		Provider: "openai", Model: "gpt-x", PromptVersion: "v3", CreatedAt: at, UpdatedAt: at.Add(time.Minute)}}, nil); err != nil {
		t.Fatal(err)
	}
	return ids
}

func ptr[T any](v T) *T { return &v }

// snapshot reads everything ExportWorkspace yields, with the active
// model's embeddings.
type snapshot struct {
	Entities []*driver.EntityRecord
	Edges    []postgram.Edge
}

func read(t *testing.T, st driver.Storage, ws string) snapshot {
	t.Helper()
	ctx := context.Background()
	id, _, _, err := st.ActiveModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var s snapshot
	err = st.ExportWorkspace(ctx, ws, id, func(r *driver.EntityRecord) error {
		s.Entities = append(s.Entities, r)
		return nil
	}, func(e *postgram.Edge) error {
		s.Edges = append(s.Edges, *e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// metadataAsValue compares JSON metadata by value (PostgreSQL's jsonb
// orders keys its own way).
var metadataAsValue = cmp.Transformer("json", func(m json.RawMessage) any {
	var v any
	if err := json.Unmarshal(m, &v); err != nil {
		return string(m)
	}
	return v
})

func export(t *testing.T, st driver.Storage, opts transfer.ExportOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := transfer.Export(context.Background(), adminFor(t, st), &buf, opts); err != nil {
		t.Fatalf("export from %s: %v", st.Name(), err)
	}
	return buf.Bytes()
}

func importInto(t *testing.T, st driver.Storage, data []byte, opts transfer.ImportOptions) transfer.ImportStats {
	t.Helper()
	s, err := transfer.Import(context.Background(), adminFor(t, st), bytes.NewReader(data), opts)
	if err != nil {
		t.Fatalf("import into %s: %v", st.Name(), err)
	}
	return s
}

// withoutHeader drops the first line (its exported_at differs).
func withoutHeader(b []byte) string {
	_, rest, _ := bytes.Cut(b, []byte("\n"))
	return string(rest)
}

// TestRoundTrip moves a workspace SQLite → PostgreSQL → SQLite and
// compares every field of every entity, chunk, embedding and edge, then
// checks that search answers the same on the copy.
func TestRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := openSQLite(t)
	ids := populate(t, src)
	want := read(t, src, "default")
	if len(want.Entities) != len(ids) || len(want.Edges) != 3 {
		t.Fatalf("fixture: %d entities, %d edges", len(want.Entities), len(want.Edges))
	}
	pending, multi := 0, false
	for _, r := range want.Entities {
		if r.Entity.EnrichmentStatus == postgram.StagePending {
			pending++
		}
		if len(r.Chunks) > 1 {
			multi = true
		}
	}
	if pending != 3 || !multi {
		t.Fatalf("fixture: %d pending, multi-chunk %v", pending, multi)
	}

	data1 := export(t, src, transfer.ExportOptions{})
	pg := openPostgres(t)
	st := importInto(t, pg, data1, transfer.ImportOptions{})
	if st.Entities != len(ids) || st.Edges != 3 || st.Pending != 3 {
		t.Fatalf("import into postgres: %+v", st)
	}
	if diff := cmp.Diff(want, read(t, pg, "default"), metadataAsValue); diff != "" {
		t.Fatalf("SQLite → PostgreSQL changed the workspace (-sqlite +postgres):\n%s", diff)
	}
	// The imported workspace is in the store's directory.
	if ws, err := pg.(driver.WorkspaceStorage).Workspaces(ctx); err != nil || len(ws) != 1 || ws[0].Name != "default" {
		t.Fatalf("workspaces after import: %+v %v", ws, err)
	}

	data2 := export(t, pg, transfer.ExportOptions{})
	back := openSQLite(t)
	importInto(t, back, data2, transfer.ImportOptions{})
	if diff := cmp.Diff(want, read(t, back, "default"), metadataAsValue); diff != "" {
		t.Fatalf("SQLite → PostgreSQL → SQLite changed the workspace (-before +after):\n%s", diff)
	}
	// The copy of the copy exports byte for byte like the copy.
	if d := cmp.Diff(withoutHeader(data2), withoutHeader(export(t, back, transfer.ExportOptions{}))); d != "" {
		t.Fatalf("re-export differs:\n%s", d)
	}

	// Search answers the same everywhere; pending entities get embedded on
	// the copy.
	for _, st := range []driver.Storage{src, pg, back} {
		c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(dims)})
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.Search(ctx, postgram.SearchRequest{Query: "ABC-1234 ledger migration"})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Results) == 0 || r.Results[0].Entity.ID != ids[5] || len(r.Degraded) != 0 {
			t.Fatalf("%s: search after import: %+v", st.Name(), r.Results)
		}
		es, err := postgramtest.Admin(t, c).EnrichPending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if es.Entities != 3 && st != src {
			t.Fatalf("%s: %d entities embedded after import, want the 3 pending", st.Name(), es.Entities)
		}
	}
}

// TestImportRules: embeddings dropped or absent queue every entity; a
// model mismatch is refused before anything is written; existing ids fail
// or are skipped, never duplicated.
func TestImportRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := openSQLite(t)
	ids := populate(t, src)
	full := export(t, src, transfer.ExportOptions{})
	bare := export(t, src, transfer.ExportOptions{NoEmbeddings: true})
	if bytes.Contains(bare, []byte(`"embedding"`)) || !bytes.Contains(full, []byte(`"embedding"`)) {
		t.Fatal("--no-embeddings export still holds embeddings, or the full one none")
	}

	// Without embeddings: all pending, everything else equal.
	dst := openSQLite(t)
	st := importInto(t, dst, bare, transfer.ImportOptions{})
	if st.Pending != len(ids) || st.Embeddings != 0 {
		t.Fatalf("bare import: %+v", st)
	}
	got := read(t, dst, "default")
	for _, r := range got.Entities {
		if r.Entity.EnrichmentStatus != postgram.StagePending {
			t.Fatalf("entity %s imported without embeddings is %s", r.Entity.ID, r.Entity.EnrichmentStatus)
		}
	}

	// Importing again fails on the first existing id, naming it and the line.
	_, err := transfer.Import(ctx, adminFor(t, dst), bytes.NewReader(bare), transfer.ImportOptions{})
	var le *transfer.LineError
	if !errors.Is(err, postgram.ErrConflict) || !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("re-import: %v", err)
	}
	st = importInto(t, dst, bare, transfer.ImportOptions{SkipExisting: true})
	if st.Entities != 0 || st.SkippedEntities != len(ids) || st.SkippedEdges != 3 {
		t.Fatalf("re-import with skip-existing: %+v", st)
	}
	if n := len(read(t, dst, "default").Entities); n != len(ids) {
		t.Fatalf("%d entities after re-import, want %d", n, len(ids))
	}

	// A store with another active model refuses the embeddings, and
	// imports with NoEmbeddings.
	other := openSQLite(t)
	if _, err := other.EnsureModel(ctx, postgram.ModelInfo{Provider: "openai", Name: "text-embedding-3-small", Dimensions: 1536}); err != nil {
		t.Fatal(err)
	}
	_, err = transfer.Import(ctx, adminFor(t, other), bytes.NewReader(full), transfer.ImportOptions{})
	if !errors.Is(err, postgram.ErrModelMismatch) || !strings.Contains(err.Error(), "--no-embeddings") {
		t.Fatalf("model mismatch: %v", err)
	}
	if n := len(read(t, other, "default").Entities); n != 0 {
		t.Fatalf("a refused import wrote %d entities", n)
	}
	st = importInto(t, other, full, transfer.ImportOptions{NoEmbeddings: true})
	if st.Pending != len(ids) {
		t.Fatalf("import with NoEmbeddings: %+v", st)
	}
}

// TestBadInput: truncated files, garbage and newer versions fail with the
// line number, and a checked file imports nothing.
func TestBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := openSQLite(t)
	populate(t, src)
	good := export(t, src, transfer.ExportOptions{})
	lines := strings.SplitAfter(string(good), "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	n := len(lines)

	cases := []struct {
		name  string
		data  string
		line  int
		words string
	}{
		{"empty", "", 1, "empty"},
		{"not json", "hello\n", 1, "not a Postgram export"},
		{"newer version", strings.Replace(lines[0], `"version":1`, `"version":2`, 1) + strings.Join(lines[1:], ""), 1, "format version 2, newer"},
		{"truncated mid-line", string(good[:len(good)-len(lines[n-1])-len(lines[n-2])/2]), n - 1, "truncated"},
		{"truncated at a line", strings.Join(lines[:n-2], ""), n - 2, "without its end record"},
		{"garbage line", strings.Join(lines[:3], "") + "{{{ garbage\n" + strings.Join(lines[3:], ""), 4, "not a JSON object"},
		{"unknown kind", strings.Join(lines[:2], "") + `{"kind":"keys"}` + "\n" + strings.Join(lines[2:], ""), 3, `unknown kind "keys"`},
		{"bad field", strings.Replace(string(good), `"visibility":"work"`, `"visibility":"everyone"`, 1), -1, `visibility "everyone"`},
		{"wrong count", strings.Join(lines[:2], "") + strings.Join(lines[3:], ""), n - 1, "end record counts"},
		{"bad embedding", strings.Replace(string(good), `"embedding":"`, `"embedding":"!!`, 1), -1, "not base64"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := openSQLite(t)
			// Through a rewindable reader (checked first) and a pipe-like
			// one (no pre-check: what came before the error may be written).
			for _, r := range []io.Reader{strings.NewReader(tc.data), io.MultiReader(strings.NewReader(tc.data))} {
				_, err := transfer.Import(ctx, adminFor(t, dst), r, transfer.ImportOptions{})
				var le *transfer.LineError
				if !errors.As(err, &le) || !errors.Is(err, postgram.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.words) ||
					(tc.line > 0 && le.Line != tc.line) {
					t.Fatalf("want a line %d error about %q, got %v", tc.line, tc.words, err)
				}
			}
			if _, err := transfer.Check(ctx, adminFor(t, dst), strings.NewReader(tc.data), transfer.ImportOptions{}); err == nil {
				t.Fatal("Check accepted it")
			}
		})
	}
	// A truncated file read from a rewindable input writes nothing.
	dst := openSQLite(t)
	if _, err := transfer.Import(ctx, adminFor(t, dst), strings.NewReader(strings.Join(lines[:n-2], "")), transfer.ImportOptions{}); err == nil {
		t.Fatal("truncated import succeeded")
	}
	if got := read(t, dst, "default"); len(got.Entities) != 0 {
		t.Fatalf("a truncated file imported %d entities", len(got.Entities))
	}
}

// auditFails is a real store whose audit log refuses appends after the
// first ok ones (a full disk, a revoked privilege).
type auditFails struct {
	driver.Storage
	ok int
}

func (a *auditFails) AppendAudit(ctx context.Context, ws string, e *postgram.AuditEntry) error {
	if a.ok > 0 {
		a.ok--
		return a.Storage.AppendAudit(ctx, ws, e)
	}
	return errors.New("disk full")
}

// TestAuditFailureFails: an export or import the audit log cannot record
// fails (issue 14): the export's file lacks its end line, so no import
// takes it; an import writes nothing when its start cannot be recorded and
// reports an error when its end cannot, on both backends.
func TestAuditFailureFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, backend := range []struct {
		name string
		open func(*testing.T) driver.Storage
	}{{"sqlite", openSQLite}, {"postgres", openPostgres}} {
		t.Run(backend.name, func(t *testing.T) {
			src := backend.open(t)
			populate(t, src)
			var buf bytes.Buffer
			if _, err := transfer.Export(ctx, adminFor(t, &auditFails{Storage: src}), &buf, transfer.ExportOptions{}); err == nil ||
				!strings.Contains(err.Error(), "audit") {
				t.Fatalf("export without audit: %v", err)
			}
			if _, err := transfer.Check(ctx, adminFor(t, backend.open(t)), bytes.NewReader(buf.Bytes()), transfer.ImportOptions{}); err == nil {
				t.Fatal("the file of an unaudited export imports")
			}
			data := export(t, src, transfer.ExportOptions{})

			for _, in := range []struct {
				name string
				r    func() io.Reader
			}{
				{"file", func() io.Reader { return bytes.NewReader(data) }},
				{"pipe", func() io.Reader { return io.MultiReader(bytes.NewReader(data)) }},
			} {
				dst := backend.open(t)
				if _, err := transfer.Import(ctx, adminFor(t, &auditFails{Storage: dst}), in.r(), transfer.ImportOptions{}); err == nil ||
					!strings.Contains(err.Error(), "audit") {
					t.Fatalf("%s: import without audit: %v", in.name, err)
				}
				if n := len(read(t, dst, "default").Entities); n != 0 {
					t.Fatalf("%s: an unaudited import wrote %d entities", in.name, n)
				}
				// The start is recorded, the end is not: the import fails.
				if st, err := transfer.Import(ctx, adminFor(t, &auditFails{Storage: dst, ok: 1}), in.r(), transfer.ImportOptions{}); err == nil ||
					!strings.Contains(err.Error(), "audit") || st.Entities == 0 {
					t.Fatalf("%s: import whose end is not audited: %+v, %v", in.name, st, err)
				}
			}
		})
	}
}

// adminFor is the operator API of st's default workspace.
func adminFor(t testing.TB, st driver.Storage) *postgram.Admin {
	t.Helper()
	c, err := postgram.New(context.Background(), postgram.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	return postgramtest.Admin(t, c)
}
