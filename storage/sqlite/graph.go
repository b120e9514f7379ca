package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/vecscan"
)

// edgeColsBare is the column list scanEdge reads, unqualified.
const edgeColsBare = `id, source_id, target_id, relation, confidence, source, metadata,
	origin_id, provider, model, prompt_version, created_at, updated_at`

// edgeCols is the same list for alias ed.
const edgeCols = `ed.id, ed.source_id, ed.target_id, ed.relation, ed.confidence, ed.source, ed.metadata,
	ed.origin_id, ed.provider, ed.model, ed.prompt_version, ed.created_at, ed.updated_at`

func scanEdge(row scanner) (driver.Edge, error) {
	var e driver.Edge
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
	if meta != "{}" { // most edges carry none: skip the decoder
		if err := json.Unmarshal([]byte(meta), &e.Metadata); err != nil {
			return e, fmt.Errorf("decode metadata of edge %s: %w", id, err)
		}
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

// upsertEdgeExecSQL inserts one edge; on a duplicate it replaces the
// stored one when the new source's precedence is at least the old one's.
var upsertEdgeExecSQL = `INSERT INTO edges AS ed (workspace_id, id, source_id, target_id, relation, confidence, source, metadata,
		origin_id, provider, model, prompt_version, created_at, updated_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (workspace_id, source_id, target_id, relation) DO UPDATE SET
		confidence = excluded.confidence, source = excluded.source, metadata = json_patch(ed.metadata, excluded.metadata),
		origin_id = excluded.origin_id, provider = excluded.provider, model = excluded.model,
		prompt_version = excluded.prompt_version, updated_at = excluded.updated_at
	WHERE ` + edgeRank("excluded.source") + ` >= ` + edgeRank("ed.source")

// upsertEdgeSQL is upsertEdgeExecSQL returning the edge written.
var upsertEdgeSQL = upsertEdgeExecSQL + `
	RETURNING ` + edgeColsBare

func originArg(o *uuid.UUID) any {
	if o == nil {
		return nil
	}
	return o.String()
}

func upsertEdges(ctx context.Context, tx *wtx, ws string, edges []driver.Edge) ([]driver.Edge, error) {
	if len(edges) == 0 {
		return nil, nil
	}
	st, err := tx.PrepareContext(ctx, upsertEdgeSQL)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	var out []driver.Edge
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

// UpsertEdges implements driver.GraphStorage.
func (s *Store) UpsertEdges(ctx context.Context, ws string, edges []driver.Edge, audit *driver.AuditEntry) ([]driver.Edge, error) {
	var out []driver.Edge
	err := s.write(ctx, func(tx *wtx) error {
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

// GetEdge implements driver.GraphStorage.
func (s *Store) GetEdge(ctx context.Context, ws string, id uuid.UUID) (*driver.Edge, error) {
	e, err := scanEdge(s.queryRow(ctx, "SELECT "+edgeCols+" FROM edges ed WHERE ed.workspace_id = ? AND ed.id = ?", ws, id.String()))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("edge %s: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: get edge: %w", mapErr(err))
	}
	return &e, nil
}

// DeleteEdges implements driver.GraphStorage.
func (s *Store) DeleteEdges(ctx context.Context, ws string, ids []uuid.UUID, audit *driver.AuditEntry) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	var n int64
	err := s.write(ctx, func(tx *wtx) error {
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

// FindEdges implements driver.GraphStorage.
func (s *Store) FindEdges(ctx context.Context, ws string, q driver.EdgeQuery) ([]driver.Edge, error) {
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
			// The unary + keeps target_id out of the index search: seeking
			// every (source, target) pair of the list costs n² probes,
			// where filtering the sources' edges by a membership test
			// costs one probe per edge.
			from = "SELECT * FROM edges WHERE workspace_id = ? AND " + pre(&args, ws) + in("source_id") + " AND +" + in("target_id")
		case q.Direction == driver.DirectionSource:
			from = "SELECT * FROM edges WHERE workspace_id = ? AND " + pre(&args, ws) + in("source_id")
		case q.Direction == driver.DirectionTarget:
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
	// Without a limit Go sorts the result: SQLite's sorter copies every
	// wide row (metadata included) into a temporary b-tree, several times
	// the cost of the query itself for a graph's edges.
	if q.Limit > 0 {
		query += " ORDER BY ed.confidence DESC, ed.id LIMIT ?"
		args = append(args, q.Limit)
	}
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: find edges: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.Edge
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
	if q.Limit <= 0 {
		// ORDER BY ed.confidence DESC, ed.id: the ids are stored as
		// canonical lower-case text, whose BINARY order is their bytes'.
		slices.SortFunc(out, func(a, b driver.Edge) int {
			if c := cmp.Compare(b.Confidence, a.Confidence); c != 0 {
				return c
			}
			return bytes.Compare(a.ID[:], b.ID[:])
		})
	}
	return out, nil
}

var _ driver.ExpandLevelStorage = (*Store)(nil)

// ExpandLevel implements driver.ExpandLevelStorage.
//
// A step needs the Limit+1 best unseen entities, not every edge incident to
// the frontier: with a hub in the frontier those are thousands of edges,
// each a row handed to Go. So one statement keeps only the k best incident
// edges (k a little over Limit+1, see expandCut), each with whether the
// filter admits its other end, and Go ranks those. Through the
// confidence-ordered covering indexes (edges_source_rank and its target
// twin) the statement finds, for every frontier entity and end, the
// confidence of its k-th best edge; the highest of these, T, is a bound
// that at least k incident edges reach. It then reads the edges of
// confidence >= T (at least k, usually not many more) and keeps the k best
// of them, ties broken by id as FindEdges orders. Those are the k best
// incident edges overall, so every entity whose best edge is among them is
// ranked exactly as the full walk would rank it, and before every other.
// If they yield fewer than Limit+1 admitted unseen entities (many seen
// ends, duplicates, filtered ends), k grows and the step runs again; once
// k exceeds the number of incident edges nothing is cut and the answer is
// the full one.
func (s *Store) ExpandLevel(ctx context.Context, ws string, q driver.ExpandLevelQuery) ([]uuid.UUID, bool, error) {
	if len(q.Frontier) == 0 {
		return nil, false, nil
	}
	seen := make(map[string]bool, len(q.Seen))
	for _, id := range q.Seen {
		seen[id.String()] = true
	}
	query, args := expandLevelSQL(ws, q)
	want := q.Limit + 1
	for k := expandCut(want); ; k *= 4 {
		args[2] = k
		out, cut, err := s.expandLevel(ctx, query, args, seen, want)
		if err != nil {
			return nil, false, fmt.Errorf("sqlite: expand level: %w", err)
		}
		if len(out) >= want || !cut {
			if len(out) > q.Limit {
				return out[:q.Limit], true, nil
			}
			return out, false, nil
		}
	}
}

// expandCut is how many of a frontier's best incident edges a step reads
// first to find want entities: a margin over want for ends already seen,
// an entity reached by several edges, and ends the filter rejects.
func expandCut(want int) int64 { return int64(want + want/4 + 16) }

// expandLevelSQL returns ExpandLevel's statement and its arguments; the
// third, k, is set per try. The text depends only on which edge and entity
// filters are set. Each row is an edge among the k best: the other end, the
// confidence and id that rank it, whether edges were cut, and whether the
// filter admits the other end.
func expandLevelSQL(ws string, q driver.ExpandLevelQuery) (string, []any) {
	args := []any{idsJSON(q.Frontier), ws, int64(0)}
	var cond string
	if len(q.Relations) > 0 {
		args = append(args, stringsJSON(q.Relations))
		cond += fmt.Sprintf(" AND $.relation IN (SELECT value FROM json_each(?%d))", len(args))
	}
	if q.MinConfidence > 0 {
		args = append(args, q.MinConfidence)
		cond += fmt.Sprintf(" AND $.confidence >= ?%d", len(args))
	}
	on := func(alias string) string { return strings.ReplaceAll(cond, "$", alias) }
	// The k-th best edge of each end of each frontier entity: a backward
	// scan of k entries of the covering index.
	kth := func(end string) string {
		return "SELECT (SELECT e.confidence FROM edges e WHERE e.workspace_id = ?2 AND e." + end + " = f.id" + on("e") +
			" ORDER BY e.confidence DESC LIMIT 1 OFFSET ?3 - 1) AS c FROM f"
	}
	arm := func(other, end string) string {
		return "SELECT ed." + other + ", ed.confidence, ed.id FROM bound CROSS JOIN f CROSS JOIN edges ed" +
			" ON ed.workspace_id = ?2 AND ed." + end + " = f.id AND ed.confidence >= ifnull(bound.c, -1)" + on("ed")
	}
	admit := "1"
	if q.Filter != nil {
		// Last in the text: its parameters are numbered after the others.
		admit = "EXISTS (SELECT 1 FROM entities e WHERE e.workspace_id = ?2 AND e.id = inc.other AND " + filterSQL(*q.Filter, &args) + ")"
	}
	query := "WITH f(id) AS MATERIALIZED (SELECT value FROM json_each(?1))," +
		" bound(c) AS MATERIALIZED (SELECT max(c) FROM (" + kth("source_id") + " UNION ALL " + kth("target_id") + "))," +
		" inc(other, conf, id) AS MATERIALIZED (" + arm("target_id", "source_id") + " UNION ALL " + arm("source_id", "target_id") + ")," +
		" kth(conf, id) AS MATERIALIZED (SELECT conf, id FROM inc ORDER BY conf DESC, id LIMIT 1 OFFSET ?3 - 1)" +
		" SELECT inc.other, inc.conf, inc.id, kth.id IS NOT NULL, " + admit + " FROM inc LEFT JOIN kth" +
		" WHERE kth.id IS NULL OR inc.conf > kth.conf OR (inc.conf = kth.conf AND inc.id <= kth.id)"
	return query, args
}

// expandLevel runs one try of ExpandLevel: the first want admitted unseen
// entities among the k best incident edges, and whether edges were cut.
func (s *Store) expandLevel(ctx context.Context, query string, args []any, seen map[string]bool, want int) ([]uuid.UUID, bool, error) {
	type cand struct {
		id, edge string
		conf     float64
	}
	var cands []cand
	at := map[string]int{}
	cut := false
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, false, mapErr(err)
	}
	for rows.Next() {
		var c cand
		var admitted bool
		if err := rows.Scan(&c.id, &c.conf, &c.edge, &cut, &admitted); err != nil {
			rows.Close()
			return nil, false, err
		}
		if !admitted || seen[c.id] {
			continue
		}
		if i, ok := at[c.id]; ok {
			if b := &cands[i]; c.conf > b.conf || c.conf == b.conf && c.edge < b.edge {
				b.conf, b.edge = c.conf, c.edge
			}
			continue
		}
		at[c.id] = len(cands)
		cands = append(cands, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, mapErr(err)
	}
	// FindEdges' order: confidence descending, then id (BINARY collation,
	// which is Go's string order).
	slices.SortFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.conf, a.conf); c != 0 {
			return c
		}
		return strings.Compare(a.edge, b.edge)
	})
	out := make([]uuid.UUID, 0, min(want, len(cands)))
	for _, c := range cands[:min(want, len(cands))] {
		id, err := uuid.Parse(c.id)
		if err != nil {
			return nil, false, fmt.Errorf("entity id %q: %w", c.id, err)
		}
		out = append(out, id)
	}
	return out, cut, nil
}

// pre appends v to args and returns "" (for building SQL in argument order).
func pre(args *[]any, v any) string {
	*args = append(*args, v)
	return ""
}

// deleteDerivedSQL deletes the edges of one origin and source.
const deleteDerivedSQL = "DELETE FROM edges WHERE workspace_id = ? AND origin_id = ? AND source = ?"

// ReplaceDerivedEdges implements driver.GraphStorage. Its statements are
// prepared once on the writer connection (through the statement cache), not
// in every transaction: link-neighbors runs one per entity, and preparing
// the upsert cost as much as running it.
func (s *Store) ReplaceDerivedEdges(ctx context.Context, ws string, origin uuid.UUID, source string, edges []driver.Edge, audit *driver.AuditEntry) (int, error) {
	metas := make([]string, len(edges))
	for i, e := range edges {
		m, err := metadataJSON(e.Metadata)
		if err != nil {
			return 0, fmt.Errorf("sqlite: replace derived edges: %w", err)
		}
		metas[i] = m
	}
	// Prepared before the transaction, which holds the writer's only
	// connection.
	del, err := s.writerStmt(ctx, deleteDerivedSQL)
	if err != nil {
		return 0, fmt.Errorf("sqlite: replace derived edges: %w", mapErr(err))
	}
	defer del.release()
	// The edges written are not returned: no RETURNING to decode.
	up, err := s.writerStmt(ctx, upsertEdgeExecSQL)
	if err != nil {
		return 0, fmt.Errorf("sqlite: replace derived edges: %w", mapErr(err))
	}
	defer up.release()
	var n int64
	err = s.write(ctx, func(tx *wtx) error {
		res, err := tx.StmtContext(ctx, del.st).ExecContext(ctx, ws, origin.String(), source)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		st := tx.StmtContext(ctx, up.st)
		for i, e := range edges {
			if _, err := st.ExecContext(ctx, ws, e.ID.String(), e.SourceID.String(), e.TargetID.String(), e.Relation,
				e.Confidence, e.Source, metas[i], originArg(e.OriginID), e.Provider, e.Model, e.PromptVersion,
				micros(e.CreatedAt), micros(e.UpdatedAt)); err != nil {
				return err
			}
		}
		return auditInsert(ctx, tx, ws, audit)
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: replace derived edges: %w", mapErr(err))
	}
	return int(n), nil
}

// cachedStmt is a statement from the statement cache, or one prepared for a
// single use when the cache is full.
type cachedStmt struct {
	st     *sql.Stmt
	cached bool
}

func (c cachedStmt) release() {
	if !c.cached {
		c.st.Close()
	}
}

// writerStmt returns q prepared on the writer connection. It must not be
// called inside a write transaction (which holds that connection).
func (s *Store) writerStmt(ctx context.Context, q string) (cachedStmt, error) {
	st, cached, err := s.stmts.get(ctx, s.w, q)
	return cachedStmt{st, cached}, err
}

// ChunkVectors implements driver.GraphStorage.
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
		out = append(out, vecscan.DecodeVector(b, nil))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: chunk vectors: %w", mapErr(err))
	}
	return out, nil
}
