package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/vecscan"
)

// exportPage is how many entities (and their chunks) one page of an export
// reads; exportEdgePage how many edges.
const (
	exportPage     = 200
	exportEdgePage = 1000
)

// ExportWorkspace implements driver.TransferStorage. It reads in one read
// transaction of a read connection (a WAL snapshot), page by page along
// the (workspace_id, id) keys.
func (s *Store) ExportWorkspace(ctx context.Context, ws string, modelID int64, entity func(*driver.EntityRecord) error, edge func(*driver.Edge) error) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlite: export workspace: store is closed: %w", driver.ErrUnavailable)
	}
	conn, err := s.r.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: export workspace: %w", mapErr(err))
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return fmt.Errorf("sqlite: export workspace: %w", mapErr(err))
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")

	after := ""
	for {
		recs, err := exportEntityPage(ctx, conn, ws, modelID, after)
		if err != nil {
			return fmt.Errorf("sqlite: export workspace: %w", mapErr(err))
		}
		for _, r := range recs {
			if err := entity(r); err != nil {
				return err
			}
		}
		if len(recs) < exportPage {
			break
		}
		after = recs[len(recs)-1].Entity.ID.String()
	}
	after = ""
	for {
		rows, err := conn.QueryContext(ctx, "SELECT "+edgeCols+` FROM edges ed
			WHERE ed.workspace_id = ? AND ed.id > ? ORDER BY ed.id LIMIT ?`, ws, after, exportEdgePage)
		if err != nil {
			return fmt.Errorf("sqlite: export edges: %w", mapErr(err))
		}
		var edges []driver.Edge
		for rows.Next() {
			e, err := scanEdge(rows)
			if err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: export edges: %w", err)
			}
			edges = append(edges, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: export edges: %w", mapErr(err))
		}
		for i := range edges {
			if err := edge(&edges[i]); err != nil {
				return err
			}
		}
		if len(edges) < exportEdgePage {
			return nil
		}
		after = edges[len(edges)-1].ID.String()
	}
}

func exportEntityPage(ctx context.Context, conn *sql.Conn, ws string, modelID int64, after string) ([]*driver.EntityRecord, error) {
	rows, err := conn.QueryContext(ctx, "SELECT "+entityCols+`, e.metadata FROM entities e
		WHERE e.workspace_id = ? AND e.id > ? ORDER BY e.id LIMIT ?`, ws, after, exportPage)
	if err != nil {
		return nil, err
	}
	var recs []*driver.EntityRecord
	byID := map[string]*driver.EntityRecord{}
	for rows.Next() {
		var raw string
		e, err := scanEntity(rows, &raw)
		if err != nil {
			rows.Close()
			return nil, err
		}
		e.Metadata = nil
		r := &driver.EntityRecord{Entity: *e, Metadata: json.RawMessage(raw)}
		recs = append(recs, r)
		byID[e.ID.String()] = r
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
	crows, err := conn.QueryContext(ctx, `SELECT c.entity_id, c.id, c.chunk_index, c.content, c.start_offset, c.end_offset, v.embedding
		FROM (SELECT DISTINCT value FROM json_each(?)) j
		CROSS JOIN chunks c ON c.workspace_id = ? AND c.entity_id = j.value
		LEFT JOIN chunk_embeddings v ON v.chunk_rid = c.rid AND v.model_id = ?
		ORDER BY c.entity_id, c.chunk_index`, idsJSON(ids), ws, modelID)
	if err != nil {
		return nil, err
	}
	defer crows.Close()
	for crows.Next() {
		var eid, cid string
		var c driver.ChunkRecord
		var blob []byte
		if err := crows.Scan(&eid, &cid, &c.Index, &c.Content, &c.Start, &c.End, &blob); err != nil {
			return nil, err
		}
		if c.ID, err = uuid.Parse(cid); err != nil {
			return nil, fmt.Errorf("chunk id %q: %w", cid, err)
		}
		if blob != nil {
			c.Embedding = vecscan.DecodeVector(blob, nil)
		}
		if r := byID[eid]; r != nil {
			r.Chunks = append(r.Chunks, c)
		}
	}
	return recs, crows.Err()
}

// ImportEntities implements driver.TransferStorage.
func (s *Store) ImportEntities(ctx context.Context, ws string, modelID int64, recs []*driver.EntityRecord, skipExisting bool) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	dims := 0
	for _, r := range recs {
		for _, c := range r.Chunks {
			if c.Embedding != nil && dims == 0 {
				m, err := s.model(ctx, modelID)
				if err != nil {
					return 0, fmt.Errorf("sqlite: import entities: %w", err)
				}
				dims = m.Dimensions
			}
			if c.Embedding != nil {
				if err := checkVector(c.Embedding, dims); err != nil {
					return 0, fmt.Errorf("sqlite: import entities: chunk %s: %w", c.ID, err)
				}
			}
		}
	}
	prepared := make([][]preparedChunk, len(recs))
	for i, r := range recs {
		in := make([]driver.ChunkInput, len(r.Chunks))
		for j, c := range r.Chunks {
			in[j] = driver.ChunkInput{ID: c.ID, Index: c.Index, Content: c.Content, Start: c.Start, End: c.End}
		}
		prepared[i] = prepareChunks(ws, in)
	}
	ids := make([]uuid.UUID, len(recs))
	for i, r := range recs {
		ids[i] = r.Entity.ID
	}
	inserted := 0
	err := s.write(ctx, func(tx *wtx) error {
		if err := registerWorkspace(ctx, tx, ws, recs[0].Entity.CreatedAt); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT e.id FROM (SELECT DISTINCT value FROM json_each(?)) j
			CROSS JOIN entities e ON e.workspace_id = ? AND e.id = j.value`, idsJSON(ids), ws)
		if err != nil {
			return err
		}
		skip := map[uuid.UUID]bool{}
		for rows.Next() {
			var id string
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return err
			}
			u, err := uuid.Parse(id)
			if err != nil {
				rows.Close()
				return err
			}
			skip[u] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(skip) > 0 && !skipExisting {
			for _, r := range recs {
				if skip[r.Entity.ID] {
					return fmt.Errorf("entity %s already exists in workspace %q: %w", r.Entity.ID, ws, driver.ErrConflict)
				}
			}
		}
		ent, err := tx.PrepareContext(ctx, `INSERT INTO entities (workspace_id, id, type, content, visibility, owner, status, tags, source,
				metadata, client_id, version, enrichment_status, enrichment_attempts, enrichment_error, enrichment_queued_at,
				extraction_status, extraction_attempts, extraction_error, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING rid`)
		if err != nil {
			return err
		}
		defer ent.Close()
		vec, err := tx.PrepareContext(ctx, `INSERT INTO chunk_embeddings (chunk_rid, workspace_id, chunk_id, entity_rid, model_id, embedding)
			SELECT rid, workspace_id, id, entity_rid, ?3, ?4 FROM chunks WHERE workspace_id = ?1 AND id = ?2`)
		if err != nil {
			return err
		}
		defer vec.Close()
		t := micros(now())
		for i, r := range recs {
			e := &r.Entity
			if skip[e.ID] {
				continue
			}
			skip[e.ID] = true // a duplicate within recs is skipped too
			meta := string(r.Metadata)
			if len(meta) == 0 {
				meta = "{}"
			}
			var queuedAt any
			if e.EnrichmentStatus == driver.StagePending || e.EnrichmentStatus == driver.StageFailed {
				queuedAt = t
			}
			var rid int64
			if err := ent.QueryRowContext(ctx, ws, e.ID.String(), e.Type, e.Content, e.Visibility, e.Owner, e.Status, stringsJSON(e.Tags),
				e.Source, meta, e.ClientID, e.Version, e.EnrichmentStatus, e.EnrichmentAttempts, e.EnrichmentError, queuedAt,
				e.ExtractionStatus, e.ExtractionAttempts, e.ExtractionError, micros(e.CreatedAt), micros(e.UpdatedAt)).Scan(&rid); err != nil {
				return fmt.Errorf("entity %s: %w", e.ID, err)
			}
			if err := putHead(ctx, tx, rid, withMetadata(e, r.Metadata)); err != nil {
				return fmt.Errorf("head of entity %s: %w", e.ID, err)
			}
			if err := insertChunks(ctx, tx, ws, e.ID, rid, prepared[i]); err != nil {
				return fmt.Errorf("chunks of entity %s: %w", e.ID, err)
			}
			for _, c := range r.Chunks {
				if c.Embedding == nil {
					continue
				}
				if _, err := vec.ExecContext(ctx, ws, c.ID.String(), modelID, vecscan.EncodeVector(c.Embedding)); err != nil {
					return fmt.Errorf("embedding of chunk %s: %w", c.ID, err)
				}
			}
			inserted++
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, driver.ErrConflict) {
			return 0, fmt.Errorf("sqlite: import entities: %w", err)
		}
		if isUniqueViolation(err) {
			return 0, fmt.Errorf("sqlite: import entities: %w: an entity or chunk id already exists (%v)", driver.ErrConflict, err)
		}
		return 0, fmt.Errorf("sqlite: import entities: %w", mapErr(err))
	}
	return inserted, nil
}

// ImportEdges implements driver.TransferStorage.
func (s *Store) ImportEdges(ctx context.Context, ws string, edges []driver.Edge, skipExisting bool) (int, error) {
	if len(edges) == 0 {
		return 0, nil
	}
	metas := make([]string, len(edges))
	for i, e := range edges {
		m, err := metadataJSON(e.Metadata)
		if err != nil {
			return 0, fmt.Errorf("sqlite: import edges: metadata of edge %s: %w", e.ID, err)
		}
		metas[i] = m
	}
	inserted := 0
	err := s.write(ctx, func(tx *wtx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO edges (workspace_id, id, source_id, target_id, relation, confidence, source, metadata,
				origin_id, provider, model, prompt_version, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT DO NOTHING RETURNING id`)
		if err != nil {
			return err
		}
		defer st.Close()
		for i, e := range edges {
			var id string
			err := st.QueryRowContext(ctx, ws, e.ID.String(), e.SourceID.String(), e.TargetID.String(), e.Relation, e.Confidence,
				e.Source, metas[i], originArg(e.OriginID), e.Provider, e.Model, e.PromptVersion, micros(e.CreatedAt), micros(e.UpdatedAt)).Scan(&id)
			switch {
			case errors.Is(err, sql.ErrNoRows):
				if !skipExisting {
					return fmt.Errorf("edge %s (%s -[%s]-> %s) already exists in workspace %q: %w",
						e.ID, e.SourceID, e.Relation, e.TargetID, ws, driver.ErrConflict)
				}
			case err != nil:
				return fmt.Errorf("edge %s: %w", e.ID, err)
			default:
				inserted++
			}
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, driver.ErrConflict) {
			return 0, fmt.Errorf("sqlite: import edges: %w", err)
		}
		return 0, fmt.Errorf("sqlite: import edges: %w", mapErr(err))
	}
	return inserted, nil
}

// withMetadata returns e with its metadata decoded from raw (an export
// record keeps it apart), for what is derived from it (the head).
func withMetadata(e *driver.Entity, raw json.RawMessage) *driver.Entity {
	if e.Metadata != nil || len(raw) == 0 {
		return e
	}
	c := *e
	if err := json.Unmarshal(raw, &c.Metadata); err != nil {
		c.Metadata = nil
	}
	return &c
}
