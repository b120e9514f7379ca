package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
)

// edgeColsBare is the column list scanEdge reads, unqualified.
const edgeColsBare = `id, source_id, target_id, relation, confidence, source, metadata,
	origin_id, provider, model, prompt_version, created_at, updated_at`

// edgeCols is the same list for alias ed.
const edgeCols = `ed.id, ed.source_id, ed.target_id, ed.relation, ed.confidence, ed.source, ed.metadata,
	ed.origin_id, ed.provider, ed.model, ed.prompt_version, ed.created_at, ed.updated_at`

func scanEdge(row scanner) (postgram.Edge, error) {
	var e postgram.Edge
	var id, src, dst, meta string
	var origin sql.NullString
	var created, updated int64
	if err := row.Scan(&id, &src, &dst, &e.Relation, &e.Confidence, &e.Source, &meta,
		&origin, &e.Provider, &e.Model, &e.PromptVersion, &created, &updated); err != nil {
		return e, err
	}
	var err error
	if e.ID, err = uuid.Parse(id); err != nil {
		return e, fmt.Errorf("edge id %q: %w", id, err)
	}
	if e.SourceID, err = uuid.Parse(src); err != nil {
		return e, fmt.Errorf("edge %s source_id %q: %w", id, src, err)
	}
	if e.TargetID, err = uuid.Parse(dst); err != nil {
		return e, fmt.Errorf("edge %s target_id %q: %w", id, dst, err)
	}
	if origin.Valid {
		o, err := uuid.Parse(origin.String)
		if err != nil {
			return e, fmt.Errorf("edge %s origin_id %q: %w", id, origin.String, err)
		}
		e.OriginID = &o
	}
	if err := json.Unmarshal([]byte(meta), &e.Metadata); err != nil {
		return e, fmt.Errorf("decode metadata of edge %s: %w", id, err)
	}
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	e.CreatedAt = fromMicros(created)
	if updated == 0 {
		updated = created
	}
	e.UpdatedAt = fromMicros(updated)
	return e, nil
}

// edgeRank orders edge sources for UpsertEdges' precedence.
func edgeRank(col string) string {
	return "(CASE " + col + " WHEN 'manual' THEN 2 WHEN 'semantic-neighbor' THEN 0 ELSE 1 END)"
}

// upsertEdgeSQL inserts one edge; on a duplicate it replaces the stored one
// when the new source's precedence is at least the old one's.
var upsertEdgeSQL = `INSERT INTO edges AS ed (workspace_id, id, source_id, target_id, relation, confidence, source, metadata,
		origin_id, provider, model, prompt_version, created_at, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (workspace_id, source_id, target_id, relation) DO UPDATE SET
		confidence = excluded.confidence, source = excluded.source, metadata = json_patch(ed.metadata, excluded.metadata),
		origin_id = excluded.origin_id, provider = excluded.provider, model = excluded.model,
		prompt_version = excluded.prompt_version, updated_at = excluded.updated_at
	WHERE ` + edgeRank("excluded.source") + ` >= ` + edgeRank("ed.source") + `
	RETURNING ` + edgeColsBare

func originArg(o *uuid.UUID) any {
	if o == nil {
		return nil
	}
	return o.String()
}

func upsertEdges(ctx context.Context, tx *sql.Tx, ws string, edges []postgram.Edge) ([]postgram.Edge, error) {
	if len(edges) == 0 {
		return nil, nil
	}
	st, err := tx.PrepareContext(ctx, upsertEdgeSQL)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var out []postgram.Edge
	for _, e := range edges {
		meta, err := metadataJSON(e.Metadata)
		if err != nil {
			return nil, err
		}
		got, err := scanEdge(st.QueryRowContext(ctx, ws, e.ID.String(), e.SourceID.String(), e.TargetID.String(), e.Relation,
			e.Confidence, e.Source, meta, originArg(e.OriginID), e.Provider, e.Model, e.PromptVersion,
			micros(e.CreatedAt), micros(e.UpdatedAt)))
		if errors.Is(err, sql.ErrNoRows) {
			continue // blocked by precedence
		}
		if err != nil {
			return nil, err
		}
		out = append(out, got)
	}
	return out, nil
}

// UpsertEdges implements postgram.GraphStorage.
func (s *Store) UpsertEdges(ctx context.Context, ws string, edges []postgram.Edge, audit *postgram.AuditEntry) ([]postgram.Edge, error) {
	var out []postgram.Edge
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		if out, err = upsertEdges(ctx, tx, ws, edges); err != nil {
			return err
		}
		return auditInsert(ctx, tx, ws, audit)
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: upsert edges: %w", mapErr(err))
	}
	return out, nil
}

// GetEdge implements postgram.GraphStorage.
func (s *Store) GetEdge(ctx context.Context, ws string, id uuid.UUID) (*postgram.Edge, error) {
	e, err := scanEdge(s.queryRow(ctx, "SELECT "+edgeCols+" FROM edges ed WHERE ed.workspace_id = ? AND ed.id = ?", ws, id.String()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("edge %s: %w", id, postgram.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get edge: %w", mapErr(err))
	}
	return &e, nil
}

// DeleteEdges implements postgram.GraphStorage.
func (s *Store) DeleteEdges(ctx context.Context, ws string, ids []uuid.UUID, audit *postgram.AuditEntry) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM edges WHERE workspace_id = ? AND id IN (SELECT value FROM json_each(?))", ws, idsJSON(ids))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		return auditInsert(ctx, tx, ws, audit)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete edges: %w", mapErr(err))
	}
	return int(n), nil
}

// FindEdges implements postgram.GraphStorage.
func (s *Store) FindEdges(ctx context.Context, ws string, q postgram.EdgeQuery) ([]postgram.Edge, error) {
	args := []any{}
	var from string
	if len(q.IDs) > 0 {
		ids := idsJSON(q.IDs)
		in := func(col string) string {
			args = append(args, ids)
			return col + " IN (SELECT value FROM json_each(?))"
		}
		switch {
		case q.Among:
			from = "SELECT * FROM edges WHERE workspace_id = ? AND " + pre(&args, ws) + in("source_id") + " AND " + in("target_id")
		case q.Direction == postgram.DirectionSource:
			from = "SELECT * FROM edges WHERE workspace_id = ? AND " + pre(&args, ws) + in("source_id")
		case q.Direction == postgram.DirectionTarget:
			from = "SELECT * FROM edges WHERE workspace_id = ? AND " + pre(&args, ws) + in("target_id")
		default:
			from = "SELECT * FROM edges WHERE workspace_id = ? AND " + pre(&args, ws) + in("source_id") +
				" UNION ALL SELECT * FROM edges WHERE workspace_id = ? AND " + pre(&args, ws) + in("target_id") +
				" AND NOT " + in("source_id")
		}
	} else {
		args = append(args, ws)
		from = "SELECT * FROM edges WHERE workspace_id = ?"
	}
	var where []string
	if len(q.Relations) > 0 {
		where = append(where, "ed.relation IN (SELECT value FROM json_each(?))")
		args = append(args, stringsJSON(q.Relations))
	}
	if len(q.Sources) > 0 {
		where = append(where, "ed.source IN (SELECT value FROM json_each(?))")
		args = append(args, stringsJSON(q.Sources))
	}
	if len(q.OriginIDs) > 0 {
		where = append(where, "ed.origin_id IN (SELECT value FROM json_each(?))")
		args = append(args, idsJSON(q.OriginIDs))
	}
	if q.MinConfidence > 0 {
		where = append(where, "ed.confidence >= ?")
		args = append(args, q.MinConfidence)
	}
	if q.Below > 0 {
		where = append(where, "ed.confidence < ?")
		args = append(args, q.Below)
	}
	if q.Filter != nil {
		// Every end not among q.IDs must pass the filter (the caller vouches
		// for the listed ones).
		for _, end := range []string{"ed.source_id", "ed.target_id"} {
			var cond string
			if len(q.IDs) > 0 {
				cond = "(" + end + " IN (SELECT value FROM json_each(?)) OR "
				args = append(args, idsJSON(q.IDs))
			} else {
				cond = "("
			}
			cond += "EXISTS (SELECT 1 FROM entities e WHERE e.workspace_id = ? AND e.id = " + end + " AND "
			args = append(args, ws)
			cond += filterSQL(*q.Filter, &args) + "))"
			where = append(where, cond)
		}
	}
	query := "SELECT " + edgeCols + " FROM (" + from + ") ed"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY ed.confidence DESC, ed.id"
	if q.Limit > 0 {
		query += " LIMIT ?"
		args = append(args, q.Limit)
	}
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find edges: %w", mapErr(err))
	}
	defer rows.Close()
	var out []postgram.Edge
	for rows.Next() {
		e, err := scanEdge(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: find edges: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: find edges: %w", mapErr(err))
	}
	return out, nil
}

// pre appends v to args and returns "" (for building SQL in argument order).
func pre(args *[]any, v any) string {
	*args = append(*args, v)
	return ""
}

// ReplaceDerivedEdges implements postgram.GraphStorage.
func (s *Store) ReplaceDerivedEdges(ctx context.Context, ws string, origin uuid.UUID, source string, edges []postgram.Edge) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM edges WHERE workspace_id = ? AND origin_id = ? AND source = ?", ws, origin.String(), source)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		_, err = upsertEdges(ctx, tx, ws, edges)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: replace derived edges: %w", mapErr(err))
	}
	return int(n), nil
}

// ChunkVectors implements postgram.GraphStorage.
func (s *Store) ChunkVectors(ctx context.Context, ws string, entityID uuid.UUID, modelID int64) ([][]float32, error) {
	rows, err := s.query(ctx, `SELECT v.embedding FROM chunks c JOIN chunk_embeddings v ON v.chunk_rid = c.rid
		WHERE c.workspace_id = ? AND c.entity_id = ? AND v.model_id = ? ORDER BY c.chunk_index`, ws, entityID.String(), modelID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: chunk vectors: %w", mapErr(err))
	}
	defer rows.Close()
	var out [][]float32
	for rows.Next() {
		var b []byte
		if err := rows.Scan(&b); err != nil {
			return nil, fmt.Errorf("sqlite: chunk vectors: %w", err)
		}
		out = append(out, decodeVector(b, nil))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: chunk vectors: %w", mapErr(err))
	}
	return out, nil
}
