package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/postgram-go/postgram/driver"
)

// exportPage is how many entities (and their chunks) one page of an export
// reads; exportEdgePage how many edges.
const (
	exportPage     = 200
	exportEdgePage = 1000
)

// ExportWorkspace implements driver.TransferStorage. It reads in one
// REPEATABLE READ, read-only transaction (one snapshot), page by page
// along the primary key.
func (s *Store) ExportWorkspace(ctx context.Context, ws string, modelID int64, entity func(*driver.EntityRecord) error, edge func(*driver.Edge) error) error {
	ctx = withWS(ctx, ws)
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var after *uuid.UUID
		for {
			recs, err := exportEntityPage(ctx, tx, ws, modelID, after)
			if err != nil {
				return err
			}
			for _, r := range recs {
				if err := entity(r); err != nil {
					return errCallback{err}
				}
			}
			if len(recs) < exportPage {
				break
			}
			after = &recs[len(recs)-1].Entity.ID
		}
		after = nil
		for {
			rows, err := tx.Query(ctx, "SELECT "+edgeCols+` FROM edges ed
				WHERE ed.workspace_id = $1 AND ($2::uuid IS NULL OR ed.id > $2) ORDER BY ed.id LIMIT $3`, ws, after, exportEdgePage)
			if err != nil {
				return err
			}
			edges, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.Edge, error) { return scanEdge(r) })
			if err != nil {
				return err
			}
			for i := range edges {
				edges[i].Confidence = float32Value(edges[i].Confidence)
				if err := edge(&edges[i]); err != nil {
					return errCallback{err}
				}
			}
			if len(edges) < exportEdgePage {
				return nil
			}
			after = &edges[len(edges)-1].ID
		}
	})
	var cb errCallback
	if errors.As(err, &cb) {
		return cb.err
	}
	if err != nil {
		return fmt.Errorf("postgres: export workspace: %w", mapErr(err))
	}
	return nil
}

// errCallback carries a callback's error through the transaction unchanged.
type errCallback struct{ err error }

func (e errCallback) Error() string { return e.err.Error() }

// float32Value returns the shortest decimal that reads back as the real
// (float32) column's value, so 0.7 stored as real exports as 0.7, not as
// 0.699999988079071.
func float32Value(v float64) float64 {
	f, err := strconv.ParseFloat(strconv.FormatFloat(float64(float32(v)), 'g', -1, 32), 64)
	if err != nil {
		return v
	}
	return f
}

func exportEntityPage(ctx context.Context, tx pgx.Tx, ws string, modelID int64, after *uuid.UUID) ([]*driver.EntityRecord, error) {
	rows, err := tx.Query(ctx, "SELECT "+entityCols+`, e.metadata FROM entities e
		WHERE e.workspace_id = $1 AND ($2::uuid IS NULL OR e.id > $2) ORDER BY e.id LIMIT $3`, ws, after, exportPage)
	if err != nil {
		return nil, err
	}
	var recs []*driver.EntityRecord
	byID := map[uuid.UUID]*driver.EntityRecord{}
	for rows.Next() {
		var raw []byte
		e, err := scanEntity(rows, &raw)
		if err != nil {
			rows.Close()
			return nil, err
		}
		e.Metadata = nil
		r := &driver.EntityRecord{Entity: *e, Metadata: json.RawMessage(raw)}
		recs = append(recs, r)
		byID[e.ID] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(recs) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(recs))
	for i, r := range recs {
		ids[i] = r.Entity.ID
	}
	crows, err := tx.Query(ctx, `SELECT entity_id, id, chunk_index, content, start_offset, end_offset,
			CASE WHEN model_id = $3 THEN embedding END
		FROM chunks WHERE workspace_id = $1 AND entity_id = ANY($2) ORDER BY entity_id, chunk_index`, ws, ids, modelID)
	if err != nil {
		return nil, err
	}
	defer crows.Close()
	for crows.Next() {
		var eid uuid.UUID
		var c driver.ChunkRecord
		var vec *pgvector.Vector
		if err := crows.Scan(&eid, &c.ID, &c.Index, &c.Content, &c.Start, &c.End, &vec); err != nil {
			return nil, err
		}
		if vec != nil {
			c.Embedding = vec.Slice()
		}
		if r := byID[eid]; r != nil {
			r.Chunks = append(r.Chunks, c)
		}
	}
	return recs, crows.Err()
}

// ImportEntities implements driver.TransferStorage.
func (s *Store) ImportEntities(ctx context.Context, ws string, modelID int64, recs []*driver.EntityRecord, skipExisting bool) (int, error) {
	ctx = withWS(ctx, ws)
	if len(recs) == 0 {
		return 0, nil
	}
	ids := make([]uuid.UUID, len(recs))
	for i, r := range recs {
		ids[i] = r.Entity.ID
	}
	inserted := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		inserted = 0
		if err := registerWorkspace(ctx, tx, ws, recs[0].Entity.CreatedAt); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT id FROM entities WHERE workspace_id = $1 AND id = ANY($2)", ws, ids)
		if err != nil {
			return err
		}
		existing, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
		if err != nil {
			return err
		}
		skip := make(map[uuid.UUID]bool, len(existing))
		for _, id := range existing {
			skip[id] = true
		}
		if len(existing) > 0 && !skipExisting {
			for _, r := range recs {
				if skip[r.Entity.ID] {
					return fmt.Errorf("entity %s already exists in workspace %q: %w", r.Entity.ID, ws, driver.ErrConflict)
				}
			}
		}
		now := time.Now().UTC()
		pending := false
		b := &pgx.Batch{}
		for _, r := range recs {
			e := &r.Entity
			if skip[e.ID] {
				continue
			}
			skip[e.ID] = true // a duplicate within recs is skipped too
			meta := []byte(r.Metadata)
			if len(meta) == 0 {
				meta = []byte("{}")
			}
			var queuedAt *time.Time
			if e.EnrichmentStatus == driver.StagePending || e.EnrichmentStatus == driver.StageFailed {
				queuedAt = &now
				pending = true
			}
			b.Queue(`INSERT INTO entities (workspace_id, id, type, content, visibility, owner, status, tags, source, metadata,
					client_id, version, enrichment_status, enrichment_attempts, enrichment_error, enrichment_queued_at,
					extraction_status, extraction_attempts, extraction_error, created_at, updated_at, head)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
					to_tsvector('simple', $22))`,
				ws, e.ID, e.Type, e.Content, e.Visibility, e.Owner, e.Status, tagsOrEmpty(e.Tags), e.Source, meta,
				e.ClientID, e.Version, e.EnrichmentStatus, e.EnrichmentAttempts, e.EnrichmentError, queuedAt,
				e.ExtractionStatus, e.ExtractionAttempts, e.ExtractionError, e.CreatedAt, e.UpdatedAt,
				entityHead(e.Content, e.Metadata, meta))
			for _, c := range r.Chunks {
				var vec *pgvector.Vector
				var model *int64
				if c.Embedding != nil {
					v := pgvector.NewVector(c.Embedding)
					vec, model = &v, &modelID
				}
				b.Queue(`INSERT INTO chunks (workspace_id, id, entity_id, chunk_index, content, start_offset, end_offset, embedding, model_id)
					VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, ws, c.ID, e.ID, c.Index, c.Content, c.Start, c.End, vec, model)
			}
			inserted++
		}
		if pending {
			b.Queue("SELECT pg_notify($1, $2)", s.cfg.NotifyChannel, ws)
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		if errors.Is(err, driver.ErrConflict) {
			return 0, fmt.Errorf("postgres: import entities: %w", err)
		}
		if isUniqueViolation(err) {
			return 0, fmt.Errorf("postgres: import entities: %w: an entity or chunk id already exists (%v)", driver.ErrConflict, err)
		}
		return 0, fmt.Errorf("postgres: import entities: %w", mapErr(err))
	}
	return inserted, nil
}

// ImportEdges implements driver.TransferStorage.
func (s *Store) ImportEdges(ctx context.Context, ws string, edges []driver.Edge, skipExisting bool) (int, error) {
	ctx = withWS(ctx, ws)
	if len(edges) == 0 {
		return 0, nil
	}
	n := len(edges)
	ids, srcs, tgts, origins := make([]uuid.UUID, n), make([]uuid.UUID, n), make([]uuid.UUID, n), make([]*uuid.UUID, n)
	rels, sources, metas := make([]string, n), make([]string, n), make([]string, n)
	providers, models, prompts := make([]string, n), make([]string, n), make([]string, n)
	confs, created, updated := make([]float64, n), make([]time.Time, n), make([]time.Time, n)
	for i, e := range edges {
		meta, err := metadataJSON(e.Metadata)
		if err != nil {
			return 0, fmt.Errorf("postgres: import edges: edge %s: %w", e.ID, err)
		}
		ids[i], srcs[i], tgts[i], origins[i] = e.ID, e.SourceID, e.TargetID, e.OriginID
		rels[i], sources[i], metas[i] = e.Relation, e.Source, string(meta)
		providers[i], models[i], prompts[i] = e.Provider, e.Model, e.PromptVersion
		confs[i], created[i], updated[i] = e.Confidence, e.CreatedAt, e.UpdatedAt
	}
	inserted := 0
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		// One statement for the whole batch (it was one per edge: the
		// round trips, and the edge triggers of migration 023, cost more
		// than the rows). In input order, so that of two edges that
		// collide the first is inserted, as it was.
		rows, err := tx.Query(ctx, `INSERT INTO edges (workspace_id, id, source_id, target_id, relation, confidence, source, metadata,
				origin_id, provider, model, prompt_version, created_at, updated_at)
			SELECT $1, u.id, u.src, u.tgt, u.rel, u.conf, u.source, u.meta::jsonb, u.origin, u.provider, u.model, u.prompt, u.created, u.updated
			FROM unnest($2::uuid[], $3::uuid[], $4::uuid[], $5::text[], $6::float8[], $7::text[], $8::text[], $9::uuid[],
				$10::text[], $11::text[], $12::text[], $13::timestamptz[], $14::timestamptz[])
				WITH ORDINALITY AS u(id, src, tgt, rel, conf, source, meta, origin, provider, model, prompt, created, updated, n)
			ORDER BY u.n
			ON CONFLICT DO NOTHING RETURNING id`,
			ws, ids, srcs, tgts, rels, confs, sources, metas, origins, providers, models, prompts, created, updated)
		if err != nil {
			return err
		}
		got := make(map[uuid.UUID]bool, n)
		var id uuid.UUID
		if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
			got[id] = true
			return nil
		}); err != nil {
			return err
		}
		inserted = len(got)
		if !skipExisting && inserted < n {
			for _, e := range edges {
				if !got[e.ID] {
					return fmt.Errorf("edge %s (%s -[%s]-> %s) already exists in workspace %q: %w",
						e.ID, e.SourceID, e.Relation, e.TargetID, ws, driver.ErrConflict)
				}
				delete(got, e.ID) // a second edge with the same id was skipped
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, driver.ErrConflict) {
			return 0, fmt.Errorf("postgres: import edges: %w", err)
		}
		return 0, fmt.Errorf("postgres: import edges: %w", mapErr(err))
	}
	return inserted, nil
}
