package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/entcache"
	"github.com/postgram-go/postgram/internal/kwindex"
	"github.com/postgram-go/postgram/internal/rank"
)

// entityCols is the column list scanEntity reads, for alias e.
const entityCols = `e.id, e.type, e.content, e.visibility, e.owner, e.status, e.tags, e.source, e.metadata,
	e.client_id, e.version, e.enrichment_status, e.enrichment_attempts, e.enrichment_error,
	e.extraction_status, e.extraction_attempts, e.extraction_error, e.created_at, e.updated_at`

type scanner interface {
	Scan(dest ...any) error
}

func scanEntity(row scanner, extra ...any) (*driver.Entity, error) {
	var e driver.Entity
	var id, tags, meta string
	var created, updated int64
	dest := []any{&id, &e.Type, &e.Content, &e.Visibility, &e.Owner, &e.Status, &tags, &e.Source, &meta,
		&e.ClientID, &e.Version, &e.EnrichmentStatus, &e.EnrichmentAttempts, &e.EnrichmentError,
		&e.ExtractionStatus, &e.ExtractionAttempts, &e.ExtractionError, &created, &updated}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	var err error
	if e.ID, err = uuid.Parse(id); err != nil {
		return nil, fmt.Errorf("entity id %q: %w", id, err)
	}
	if err := json.Unmarshal([]byte(tags), &e.Tags); err != nil {
		return nil, fmt.Errorf("decode tags of %s: %w", e.ID, err)
	}
	if err := json.Unmarshal([]byte(meta), &e.Metadata); err != nil {
		return nil, fmt.Errorf("decode metadata of %s: %w", e.ID, err)
	}
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	if e.Tags == nil {
		e.Tags = []string{}
	}
	e.CreatedAt = fromMicros(created)
	e.UpdatedAt = fromMicros(updated)
	return &e, nil
}

func metadataJSON(m map[string]any) (string, error) {
	if m == nil {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	return string(b), err
}

func stringsJSON[T ~string](v []T) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v) // strings always marshal
	return string(b)
}

func idsJSON(ids []uuid.UUID) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(id.String())
		b.WriteByte('"')
	}
	b.WriteByte(']')
	return b.String()
}

// preparedChunk is a chunk with its keyword index entries, computed before
// the write transaction so the lock is held only for the inserts.
type preparedChunk struct {
	driver.ChunkInput
	tsv []byte
}

func prepareChunks(ws string, chunks []driver.ChunkInput) []preparedChunk {
	out := make([]preparedChunk, len(chunks))
	for i, c := range chunks {
		v := chunkVector(c.Content)
		out[i] = preparedChunk{ChunkInput: c, tsv: kwindex.Encode(v)}
	}
	return out
}

// insertChunks inserts chunks (the in-memory keyword index reads them
// through change_log).
func insertChunks(ctx context.Context, tx *wtx, ws string, entityID uuid.UUID, entityRID int64, chunks []preparedChunk) error {
	if len(chunks) == 0 {
		return nil
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO chunks (workspace_id, id, entity_id, entity_rid, chunk_index, content, start_offset, end_offset, tsv)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	eid := entityID.String()
	for _, c := range chunks {
		if _, err := ins.ExecContext(ctx, ws, c.ID.String(), eid, entityRID, c.Index, c.Content, c.Start, c.End, c.tsv); err != nil {
			return err
		}
	}
	return nil
}

// headTSV returns the encoded tsvector of an entity's head (rank.Head).
func headTSV(e *driver.Entity) []byte {
	return kwindex.Encode(chunkVector(rank.Head(e.Content, e.Metadata)))
}

// putHead writes an entity's head; an unchanged head writes nothing (and so
// logs no change).
func putHead(ctx context.Context, tx *wtx, rid int64, e *driver.Entity) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO entity_heads (rid, tsv) VALUES (?, ?)
		ON CONFLICT (rid) DO UPDATE SET tsv = excluded.tsv WHERE tsv IS NOT excluded.tsv`, rid, headTSV(e))
	return err
}

// CreateEntity implements driver.Storage: the entity, its chunks (and so
// the keyword index), its head and the audit entry commit in one
// transaction.
func (s *Store) CreateEntity(ctx context.Context, ws string, e *driver.Entity, chunks []driver.ChunkInput, audit *driver.AuditEntry) error {
	prepared := prepareChunks(ws, chunks)
	err := s.write(ctx, func(tx *wtx) error {
		if err := createTx(ctx, tx, ws, e, prepared); err != nil {
			return err
		}
		if err := auditInsert(ctx, tx, ws, audit); err != nil {
			return err
		}
		return insertEvents(ctx, tx, ws, []driver.ChangeEvent{driver.EntityChange(driver.EventEntityCreated, e)})
	})
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("sqlite: create entity %s: %w: id already exists", e.ID, driver.ErrConflict)
		}
		return fmt.Errorf("sqlite: create entity: %w", mapErr(err))
	}
	s.eventSignal.Notify(ws)
	return nil
}

// GetEntity implements driver.Storage.
func (s *Store) GetEntity(ctx context.Context, ws string, id uuid.UUID) (*driver.Entity, error) {
	e, err := scanEntity(s.queryRow(ctx, "SELECT "+entityCols+" FROM entities e WHERE e.workspace_id = ? AND e.id = ?", ws, id.String()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("entity %s: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get entity: %w", mapErr(err))
	}
	return e, nil
}

// GetEntities implements driver.Storage.
func (s *Store) GetEntities(ctx context.Context, ws string, ids []uuid.UUID) ([]*driver.Entity, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	// The cache is as fresh as the index (see internal/entcache); without the
	// index (a store not migrated yet), or disabled, it is not used.
	cache := s.ents
	if !s.idx.isLoaded() || !cache.Enabled() {
		cache = nil
	} else if err := s.idx.ensureFresh(ctx); err != nil {
		return nil, fmt.Errorf("sqlite: get entities: %w", err)
	}
	out := make([]*driver.Entity, 0, len(ids))
	missing := ids
	var gen uint64
	if cache != nil {
		out, missing, gen = cache.Lookup(ws, ids)
		if len(missing) == 0 {
			return out, nil
		}
	}
	rows, err := s.query(ctx, "SELECT "+entityCols+`, e.rid, length(e.metadata) FROM (SELECT DISTINCT value FROM json_each(?)) j
		CROSS JOIN entities e ON e.workspace_id = ? AND e.id = j.value`, idsJSON(missing), ws)
	if err != nil {
		return nil, fmt.Errorf("sqlite: get entities: %w", mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var rid int64
		var metaLen int
		e, err := scanEntity(rows, &rid, &metaLen)
		if err != nil {
			return nil, fmt.Errorf("sqlite: get entities: %w", err)
		}
		out = append(out, e)
		if cache != nil {
			cache.Put(gen, ws, rid, entcache.Clone(e), metaLen)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: get entities: %w", mapErr(err))
	}
	return out, nil
}

// UpdateEntity implements driver.Storage.
func (s *Store) UpdateEntity(ctx context.Context, ws string, e *driver.Entity, expected int64, chunks []driver.ChunkInput, audit *driver.AuditEntry) error {
	rechunk := chunks != nil
	var prepared []preparedChunk
	if rechunk {
		prepared = prepareChunks(ws, chunks)
	}
	err := s.write(ctx, func(tx *wtx) error {
		if err := updateTx(ctx, tx, ws, e, expected, rechunk, prepared); err != nil {
			return err
		}
		if err := auditInsert(ctx, tx, ws, audit); err != nil {
			return err
		}
		return insertEvents(ctx, tx, ws, []driver.ChangeEvent{driver.EntityChange(driver.ChangeKindOf(e), e)})
	})
	if err != nil {
		var ce *driver.ConflictError
		if errors.As(err, &ce) || errors.Is(err, driver.ErrNotFound) {
			return err
		}
		return fmt.Errorf("sqlite: update entity: %w", mapErr(err))
	}
	s.eventSignal.Notify(ws)
	return nil
}

// filterSQL renders f's conditions (driver.EntityFilter.Conds, the one
// definition of the filter's rules) as a SQL condition over alias e,
// appending their arguments to args. It never interpolates values. Lists
// are JSON parameters, so the statement text depends only on which
// conditions are present (and prepared statements are reused).
func filterSQL(f driver.EntityFilter, args *[]any) string {
	var b strings.Builder
	b.WriteString("1")
	for _, c := range f.Conds() {
		col := "e." + c.Field.Column()
		switch c.Op {
		case driver.OpIn:
			b.WriteString(" AND " + col + " IN (SELECT value FROM json_each(?))")
			*args = append(*args, stringsJSON(c.Values))
		case driver.OpEq:
			b.WriteString(" AND " + col + " = ?")
			*args = append(*args, c.Value)
		case driver.OpNotEq:
			b.WriteString(" AND " + col + " <> ?")
			*args = append(*args, c.Value)
		case driver.OpHasAll:
			b.WriteString(" AND NOT EXISTS (SELECT 1 FROM json_each(?) ft WHERE ft.value NOT IN (SELECT value FROM json_each(" + col + ")))")
			*args = append(*args, stringsJSON(c.Values))
		case driver.OpOwnSession:
			b.WriteString(" AND (" + col + " IS NOT 'session_context' OR e.client_id = ?)")
			*args = append(*args, c.Value)
		case driver.OpBefore:
			b.WriteString(" AND " + col + " < ?")
			*args = append(*args, micros(c.Time))
		case driver.OpAfter:
			b.WriteString(" AND " + col + " > ?")
			*args = append(*args, micros(c.Time))
		default:
			panic(fmt.Sprintf("sqlite: filter operation %d is not rendered", c.Op))
		}
	}
	return b.String()
}

func toStrings[T ~string](in []T) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

// ListEntities implements driver.Storage.
func (s *Store) ListEntities(ctx context.Context, ws string, f driver.EntityFilter, limit, offset int, maxBytes int64) ([]*driver.Entity, int, error) {
	args := []any{ws}
	where := filterSQL(f, &args)
	args = append(args, limit, offset)
	rows, err := s.query(ctx, `SELECT `+entityCols+`, count(*) OVER () FROM entities e
		WHERE e.workspace_id = ? AND `+where+`
		ORDER BY e.created_at DESC, e.id DESC LIMIT ? OFFSET ?`, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("sqlite: list entities: %w", mapErr(err))
	}
	defer rows.Close()
	var out []*driver.Entity
	total := 0
	var size int64
	for rows.Next() {
		e, err := scanEntity(rows, &total)
		if err != nil {
			return nil, 0, fmt.Errorf("sqlite: list entities: %w", err)
		}
		if size += int64(len(e.Content)); maxBytes > 0 && size > maxBytes {
			return nil, 0, &driver.PageTooLargeError{Fit: len(out), MaxBytes: maxBytes}
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("sqlite: list entities: %w", mapErr(err))
	}
	if len(out) == 0 && offset > 0 {
		// Past the end: the window count saw no row; count separately.
		cargs := []any{ws}
		cwhere := filterSQL(f, &cargs)
		if err := s.queryRow(ctx, "SELECT count(*) FROM entities e WHERE e.workspace_id = ? AND "+cwhere, cargs...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("sqlite: count entities: %w", mapErr(err))
		}
	}
	return out, total, nil
}
