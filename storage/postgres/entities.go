package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/entcache"
	"github.com/postgram-go/postgram/internal/rank"
)

// entityCols is the column list scanEntity reads, for alias e.
const entityCols = `e.id, e.type, e.content, e.visibility, e.owner, e.status, e.tags, e.source, e.metadata,
	e.client_id, e.version, e.enrichment_status, e.enrichment_attempts, e.enrichment_error,
	e.extraction_status, e.extraction_attempts, e.extraction_error, e.created_at, e.updated_at`

func scanEntity(row pgx.Row, extra ...any) (*driver.Entity, error) {
	var e driver.Entity
	var meta []byte
	dest := []any{&e.ID, &e.Type, &e.Content, &e.Visibility, &e.Owner, &e.Status, &e.Tags, &e.Source, &meta,
		&e.ClientID, &e.Version, &e.EnrichmentStatus, &e.EnrichmentAttempts, &e.EnrichmentError,
		&e.ExtractionStatus, &e.ExtractionAttempts, &e.ExtractionError, &e.CreatedAt, &e.UpdatedAt}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	if len(meta) > 0 {
		if err := json.Unmarshal(meta, &e.Metadata); err != nil {
			return nil, fmt.Errorf("decode metadata of %s: %w", e.ID, err)
		}
	}
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	if e.Tags == nil {
		e.Tags = []string{}
	}
	e.CreatedAt = e.CreatedAt.UTC()
	e.UpdatedAt = e.UpdatedAt.UTC()
	return &e, nil
}

func metadataJSON(m map[string]any) ([]byte, error) {
	if m == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(m)
}

func tagsOrEmpty(t []string) []string {
	if t == nil {
		return []string{}
	}
	return t
}

// chunkArrays splits chunks into parallel arrays for unnest.
func chunkArrays(chunks []driver.ChunkInput) (ids []uuid.UUID, idx []int32, content []string, starts, ends []int32) {
	for _, c := range chunks {
		ids = append(ids, c.ID)
		idx = append(idx, int32(c.Index))
		content = append(content, c.Content)
		starts = append(starts, int32(c.Start))
		ends = append(ends, int32(c.End))
	}
	return
}

// CreateEntity implements driver.Storage: one statement inserts the
// entity and its chunks (and so the keyword index) and notifies workers at
// commit.
func (s *Store) CreateEntity(ctx context.Context, ws string, e *driver.Entity, chunks []driver.ChunkInput, audit *driver.AuditEntry) error {
	ctx = withWS(ctx, ws)
	meta, err := metadataJSON(e.Metadata)
	if err != nil {
		return fmt.Errorf("postgres: create entity: %w", err)
	}
	aID, aAt, aKey, aClient, aOp, aEntity, aDetails, err := auditArgs(audit)
	if err != nil {
		return fmt.Errorf("postgres: create entity: %w", err)
	}
	ids, idx, content, starts, ends := chunkArrays(chunks)
	var queuedAt *time.Time
	if e.EnrichmentStatus == driver.StagePending {
		queuedAt = &e.CreatedAt
	}
	ev := driver.EntityChange(driver.EventEntityCreated, e)
	_, err = s.pool.Exec(ctx, `
		WITH ent AS (
			INSERT INTO entities (workspace_id, id, type, content, visibility, owner, status, tags, source, metadata,
				client_id, version, enrichment_status, enrichment_queued_at, extraction_status, created_at, updated_at, head)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, to_tsvector('simple', $31))
			RETURNING id
		), ch AS (
			INSERT INTO chunks (workspace_id, id, entity_id, chunk_index, content, start_offset, end_offset)
			SELECT $1, u.id, (SELECT id FROM ent), u.idx, u.content, u.s, u.e
			FROM unnest($18::uuid[], $19::int[], $20::text[], $21::int[], $22::int[]) AS u(id, idx, content, s, e)
		), au AS (
			INSERT INTO audit_log (workspace_id, id, at, key_id, client_id, operation, entity_id, details)
			SELECT $1, $24, $25, $26, $27, $28, $29, $30 WHERE $24::uuid IS NOT NULL
		), ev AS (
			INSERT INTO events (workspace_id, kind, entity_id, type, visibility, owner, role, client_id, data, created_at)
			SELECT $1, $32, (SELECT id FROM ent), $3, $5, $6, $33, $11, $34::jsonb, date_trunc('microseconds', clock_timestamp())
		)
		SELECT CASE WHEN $13 = 'pending' THEN pg_notify($23, $1) END`,
		ws, e.ID, e.Type, e.Content, e.Visibility, e.Owner, e.Status, tagsOrEmpty(e.Tags), e.Source, meta,
		e.ClientID, e.Version, e.EnrichmentStatus, queuedAt, e.ExtractionStatus, e.CreatedAt, e.UpdatedAt,
		ids, idx, content, starts, ends, s.cfg.NotifyChannel,
		aID, aAt, aKey, aClient, aOp, aEntity, aDetails, rank.Head(e.Content, e.Metadata),
		ev.Kind, string(ev.Role), string(ev.Data))
	if err != nil {
		if isUniqueViolation(err) {
			return fmt.Errorf("postgres: create entity %s: %w: id already exists", e.ID, driver.ErrConflict)
		}
		return fmt.Errorf("postgres: create entity: %w", mapErr(err))
	}
	s.eventsCommitted(ws)
	return nil
}

// GetEntity implements driver.Storage.
// It reads the primary, as GetEntities does, never a replica: the library
// reads an entity before it changes it (versions, rights), which must see
// every committed write.
func (s *Store) GetEntity(ctx context.Context, ws string, id uuid.UUID) (*driver.Entity, error) {
	ctx = withWS(ctx, ws)
	e, err := scanEntity(s.pool.QueryRow(ctx, "SELECT "+entityCols+" FROM entities e WHERE e.workspace_id = $1 AND e.id = $2", ws, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("entity %s: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get entity: %w", mapErr(err))
	}
	return e, nil
}

// GetEntities implements driver.Storage.
func (s *Store) GetEntities(ctx context.Context, ws string, ids []uuid.UUID) ([]*driver.Entity, error) {
	ctx = withWS(ctx, ws)
	if len(ids) == 0 {
		return nil, nil
	}
	// A search's reads (under Refresh) find the entities it returned
	// before in the in-memory index's cache, as fresh as the index.
	cache := s.mem.entityCache(ctx, ws)
	out, missing, gen := make([]*driver.Entity, 0, len(ids)), ids, uint64(0)
	if cache != nil {
		out, missing, gen = cache.Lookup(ws, ids)
		if len(missing) == 0 {
			return out, nil
		}
	}
	rows, err := s.pool.Query(ctx, "SELECT "+entityCols+", coalesce(pg_column_size(e.metadata), 0) FROM entities e WHERE e.workspace_id = $1 AND e.id = ANY($2)",
		ws, uuidArray(missing))
	if err != nil {
		return nil, fmt.Errorf("postgres: get entities: %w", mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var metaLen int
		e, err := scanEntity(rows, &metaLen)
		if err != nil {
			return nil, fmt.Errorf("postgres: get entities: %w", err)
		}
		out = append(out, e)
		if cache != nil {
			cache.Put(gen, ws, 0, entcache.Clone(e), metaLen)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: get entities: %w", mapErr(err))
	}
	return out, nil
}

// UpdateEntity implements driver.Storage.
func (s *Store) UpdateEntity(ctx context.Context, ws string, e *driver.Entity, expected int64, chunks []driver.ChunkInput, audit *driver.AuditEntry) error {
	ctx = withWS(ctx, ws)
	// updateTx's UPDATE locks the entity before the chunks are replaced
	// (see the lock order in tx.go).
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		if err := updateTx(ctx, tx, ws, e, expected, chunks); err != nil {
			return err
		}
		if err := auditInsert(ctx, tx, ws, audit); err != nil {
			return err
		}
		if err := s.insertEventsTx(ctx, tx, ws, []driver.ChangeEvent{driver.EntityChange(driver.ChangeKindOf(e), e)}); err != nil {
			return err
		}
		if chunks != nil && e.EnrichmentStatus == driver.StagePending {
			if _, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", s.cfg.NotifyChannel, ws); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		var ce *driver.ConflictError
		if errors.As(err, &ce) || errors.Is(err, driver.ErrNotFound) {
			return err
		}
		return fmt.Errorf("postgres: update entity: %w", mapErr(err))
	}
	s.eventsCommitted(ws)
	return nil
}

// filterSQL renders f's conditions (driver.EntityFilter.Conds, the one
// definition of the filter's rules) as a SQL condition over alias e,
// appending their arguments to args. It never interpolates values.
func filterSQL(f driver.EntityFilter, args *[]any) string {
	var b strings.Builder
	b.WriteString("TRUE")
	arg := func(v any) string {
		*args = append(*args, v)
		return "$" + strconv.Itoa(len(*args))
	}
	for _, c := range f.Conds() {
		col := "e." + c.Field.Column()
		switch c.Op {
		case driver.OpIn:
			fmt.Fprintf(&b, " AND %s = ANY(%s::text[])", col, arg(c.Values))
		case driver.OpEq:
			fmt.Fprintf(&b, " AND %s = %s", col, arg(c.Value))
		case driver.OpNotEq:
			fmt.Fprintf(&b, " AND %s <> %s", col, arg(c.Value))
		case driver.OpHasAll:
			fmt.Fprintf(&b, " AND %s @> %s::text[]", col, arg(c.Values))
		case driver.OpOwnSession:
			fmt.Fprintf(&b, " AND (%s IS DISTINCT FROM 'session_context' OR e.client_id = %s)", col, arg(c.Value))
		case driver.OpBefore:
			fmt.Fprintf(&b, " AND %s < %s", col, arg(c.Time))
		case driver.OpAfter:
			fmt.Fprintf(&b, " AND %s > %s", col, arg(c.Time))
		default:
			panic(fmt.Sprintf("postgres: filter operation %d is not rendered", c.Op))
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
	ctx = withWS(ctx, ws)
	var out []*driver.Entity
	var total int
	err := s.read(ctx, ws, func(r reader) error {
		var err error
		out, total, err = s.listEntities(withReader(ctx, r), ws, f, limit, offset, maxBytes)
		return err
	})
	return out, total, err
}

func (s *Store) listEntities(ctx context.Context, ws string, f driver.EntityFilter, limit, offset int, maxBytes int64) ([]*driver.Entity, int, error) {
	ctx = withWS(ctx, ws)
	args := []any{ws}
	where := filterSQL(f, &args)
	args = append(args, limit, offset)
	q := fmt.Sprintf(`SELECT %s, count(*) OVER () FROM entities e WHERE e.workspace_id = $1 AND %s
		ORDER BY e.created_at DESC, e.id DESC LIMIT $%d OFFSET $%d`, entityCols, where, len(args)-1, len(args))
	if maxBytes > 0 {
		// Rows that start beyond the budget are never sent (nor their
		// content detoasted): octet_length reads a TOASTed value's size
		// without decompressing it. The first row over the budget is sent,
		// so that the scan below knows the page was cut.
		args = append(args, maxBytes)
		q = fmt.Sprintf(`SELECT %s, p.total FROM (
				SELECT p.*, sum(octet_length(p.content)) OVER (ORDER BY p.created_at DESC, p.id DESC ROWS UNBOUNDED PRECEDING) AS upto
				FROM (SELECT %s, count(*) OVER () AS total FROM entities e WHERE e.workspace_id = $1 AND %s
					ORDER BY e.created_at DESC, e.id DESC LIMIT $%d OFFSET $%d) p) p
			WHERE p.upto - octet_length(p.content) <= $%d
			ORDER BY p.created_at DESC, p.id DESC`,
			strings.ReplaceAll(entityCols, "e.", "p."), entityCols, where, len(args)-2, len(args)-1, len(args))
	}
	rows, err := s.rd(ctx).pool.Query(ctx, q, args...)
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: list entities: %w", mapErr(err))
	}
	defer rows.Close()
	var out []*driver.Entity
	total := 0
	var size int64
	for rows.Next() {
		e, err := scanEntity(rows, &total)
		if err != nil {
			return nil, 0, fmt.Errorf("postgres: list entities: %w", err)
		}
		if size += int64(len(e.Content)); maxBytes > 0 && size > maxBytes {
			return nil, 0, &driver.PageTooLargeError{Fit: len(out), MaxBytes: maxBytes}
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, fmt.Errorf("postgres: list entities: %w", mapErr(err))
	}
	if len(out) == 0 && offset > 0 {
		// Past the end: the window count saw no row; count separately.
		cargs := []any{ws}
		cwhere := filterSQL(f, &cargs)
		if err := s.rd(ctx).pool.QueryRow(ctx, "SELECT count(*) FROM entities e WHERE e.workspace_id = $1 AND "+cwhere, cargs...).Scan(&total); err != nil {
			return nil, 0, fmt.Errorf("postgres: count entities: %w", mapErr(err))
		}
	}
	return out, total, nil
}
