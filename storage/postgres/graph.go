package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/pgvector/pgvector-go"

	"github.com/postgram-go/postgram/driver"
)

// edgeCols is the column list scanEdge reads, for alias ed.
const edgeCols = `ed.id, ed.source_id, ed.target_id, ed.relation, ed.confidence::float8, ed.source, ed.metadata,
	ed.origin_id, ed.provider, ed.model, ed.prompt_version, ed.created_at, ed.updated_at`

func scanEdge(row pgx.Row) (driver.Edge, error) {
	var e driver.Edge
	var meta []byte
	// pgtype.UUID scans the binary value directly; uuid.UUID would go
	// through its sql.Scanner and a string.
	var id, src, dst, origin pgtype.UUID
	if err := row.Scan(&id, &src, &dst, &e.Relation, &e.Confidence, &e.Source, &meta,
		&origin, &e.Provider, &e.Model, &e.PromptVersion, &e.CreatedAt, &e.UpdatedAt); err != nil {
		return e, err
	}
	e.ID, e.SourceID, e.TargetID = id.Bytes, src.Bytes, dst.Bytes
	if origin.Valid {
		o := uuid.UUID(origin.Bytes)
		e.OriginID = &o
	}
	if len(meta) > 0 && string(meta) != "{}" {
		if err := json.Unmarshal(meta, &e.Metadata); err != nil {
			return e, fmt.Errorf("decode metadata of edge %s: %w", e.ID, err)
		}
	}
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
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
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
	ON CONFLICT (workspace_id, source_id, target_id, relation) DO UPDATE SET
		confidence = excluded.confidence, source = excluded.source, metadata = ed.metadata || excluded.metadata,
		origin_id = excluded.origin_id, provider = excluded.provider, model = excluded.model,
		prompt_version = excluded.prompt_version, updated_at = excluded.updated_at
	WHERE ` + edgeRank("excluded.source") + ` >= ` + edgeRank("ed.source") + `
	RETURNING ` + edgeCols

// upsertEdges upserts edges in their key order (source, target, relation),
// so writes upserting the same edges lock their rows in one order (see the
// lock order in tx.go), and returns the stored edges in the order given.
func upsertEdges(ctx context.Context, tx pgx.Tx, ws string, edges []driver.Edge) ([]driver.Edge, error) {
	if len(edges) == 0 {
		return nil, nil
	}
	order := edgeKeyOrder(edges)
	b := &pgx.Batch{}
	for _, i := range order {
		e := &edges[i]
		meta, err := metadataJSON(e.Metadata)
		if err != nil {
			return nil, err
		}
		b.Queue(upsertEdgeSQL, ws, e.ID, e.SourceID, e.TargetID, e.Relation, e.Confidence, e.Source, meta,
			e.OriginID, e.Provider, e.Model, e.PromptVersion, e.CreatedAt, e.UpdatedAt)
	}
	br := tx.SendBatch(ctx, b)
	stored := make([]*driver.Edge, len(edges))
	for _, i := range order {
		e, err := scanEdge(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			continue // blocked by precedence
		}
		if err != nil {
			br.Close()
			return nil, err
		}
		stored[i] = &e
	}
	var out []driver.Edge
	for _, e := range stored {
		if e != nil {
			out = append(out, *e)
		}
	}
	return out, br.Close()
}

// edgeKeyOrder returns the indexes of edges sorted by their unique key.
func edgeKeyOrder(edges []driver.Edge) []int {
	order := make([]int, len(edges))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := &edges[a], &edges[b]
		if c := bytes.Compare(x.SourceID[:], y.SourceID[:]); c != 0 {
			return c
		}
		if c := bytes.Compare(x.TargetID[:], y.TargetID[:]); c != 0 {
			return c
		}
		return strings.Compare(x.Relation, y.Relation)
	})
	return order
}

// UpsertEdges implements driver.GraphStorage.
func (s *Store) UpsertEdges(ctx context.Context, ws string, edges []driver.Edge, audit *driver.AuditEntry) ([]driver.Edge, error) {
	ctx = withWS(ctx, ws)
	var out []driver.Edge
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var err error
		if out, err = upsertEdges(ctx, tx, ws, edges); err != nil {
			return err
		}
		return auditInsert(ctx, tx, ws, audit)
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: upsert edges: %w", mapErr(err))
	}
	return out, nil
}

// GetEdge implements driver.GraphStorage.
func (s *Store) GetEdge(ctx context.Context, ws string, id uuid.UUID) (*driver.Edge, error) {
	ctx = withWS(ctx, ws)
	e, err := scanEdge(s.pool.QueryRow(ctx, "SELECT "+edgeCols+" FROM edges ed WHERE ed.workspace_id = $1 AND ed.id = $2", ws, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("edge %s: %w", id, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: get edge: %w", mapErr(err))
	}
	return &e, nil
}

// DeleteEdges implements driver.GraphStorage.
func (s *Store) DeleteEdges(ctx context.Context, ws string, ids []uuid.UUID, audit *driver.AuditEntry) (int, error) {
	ctx = withWS(ctx, ws)
	if len(ids) == 0 {
		return 0, nil
	}
	var n int64
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM edges WHERE workspace_id = $1 AND id = ANY($2)", ws, ids)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		return auditInsert(ctx, tx, ws, audit)
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: delete edges: %w", mapErr(err))
	}
	return int(n), nil
}

// uuidArray converts ids for a uuid[] parameter: pgx writes pgtype.UUID
// straight to the binary format, where uuid.UUID goes through its
// driver.Valuer, a string per element parsed back.
func uuidArray(ids []uuid.UUID) []pgtype.UUID {
	out := make([]pgtype.UUID, len(ids))
	for i, id := range ids {
		out[i] = pgtype.UUID{Bytes: id, Valid: true}
	}
	return out
}

// FindEdges implements driver.GraphStorage.
func (s *Store) FindEdges(ctx context.Context, ws string, q driver.EdgeQuery) ([]driver.Edge, error) {
	ctx = withWS(ctx, ws)
	args := sqlArgs{ws}
	var from string
	if len(q.IDs) > 0 {
		ids := args.add(uuidArray(q.IDs))
		switch {
		case q.Among:
			// The listed entities' outgoing edges are tested against the
			// list in the covering index edges_source_rank, an index-only
			// scan: with hubs among them most of those edges lead
			// elsewhere, and only the ones kept are then read from the
			// heap, by id. The target test is a hashed subplan: as "= ANY"
			// it would be a linear scan of the list per edge in the generic
			// plans the statement cache ends up with.
			from = "SELECT * FROM edges WHERE workspace_id = $1 AND id = ANY(ARRAY(SELECT id FROM edges WHERE workspace_id = $1" +
				" AND source_id = ANY(" + ids + ") AND (target_id IN (SELECT unnest(" + ids + "::uuid[]))) IS TRUE))"
		case q.Direction == driver.DirectionSource:
			from = "SELECT * FROM edges WHERE workspace_id = $1 AND source_id = ANY(" + ids + ")"
		case q.Direction == driver.DirectionTarget:
			from = "SELECT * FROM edges WHERE workspace_id = $1 AND target_id = ANY(" + ids + ")"
		default:
			from = "SELECT * FROM edges WHERE workspace_id = $1 AND source_id = ANY(" + ids + ")" +
				" UNION ALL SELECT * FROM edges WHERE workspace_id = $1 AND target_id = ANY(" + ids + ") AND NOT source_id = ANY(" + ids + ")"
		}
	} else {
		from = "SELECT * FROM edges WHERE workspace_id = $1"
	}
	var where []string
	if len(q.Relations) > 0 {
		where = append(where, "ed.relation = ANY("+args.add(q.Relations)+"::text[])")
	}
	if len(q.Sources) > 0 {
		where = append(where, "ed.source = ANY("+args.add(q.Sources)+"::text[])")
	}
	if len(q.OriginIDs) > 0 {
		where = append(where, "ed.origin_id = ANY("+args.add(uuidArray(q.OriginIDs))+"::uuid[])")
	}
	if q.MinConfidence > 0 {
		where = append(where, "ed.confidence >= "+args.add(q.MinConfidence)+"::real")
	}
	if q.Below > 0 {
		where = append(where, "ed.confidence < "+args.add(q.Below)+"::real")
	}
	if q.Filter != nil {
		// Every end not among q.IDs must pass the filter (the caller vouches
		// for the listed ones).
		for _, end := range []string{"ed.source_id", "ed.target_id"} {
			cond := "EXISTS (SELECT 1 FROM entities e WHERE e.workspace_id = $1 AND e.id = " + end + " AND " +
				filterSQL(*q.Filter, (*[]any)(&args)) + ")"
			if len(q.IDs) > 0 {
				cond = "(" + end + " = ANY($2) OR " + cond + ")"
			}
			where = append(where, cond)
		}
	}
	sql := "SELECT " + edgeCols + " FROM (" + from + ") ed"
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY ed.confidence DESC, ed.id"
	if q.Limit > 0 {
		sql += " LIMIT " + args.add(q.Limit)
	}
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: find edges: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.Edge
	for rows.Next() {
		e, err := scanEdge(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: find edges: %w", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: find edges: %w", mapErr(err))
	}
	return out, nil
}

var _ driver.ExpandLevelStorage = (*Store)(nil)

// ExpandLevel implements driver.ExpandLevelStorage in one statement;
// only ids leave the server.
//
// A step needs the Limit+1 best unseen entities, not every edge incident to
// the frontier, which with a hub in it are thousands. Through the
// confidence-ordered covering indexes (edges_source_rank and its target
// twin) the statement finds, for every frontier entity and end, the
// confidence of its k-th best edge (k a little over Limit+1, see
// expandCut); the highest, T, is a bound that at least k incident edges
// reach. It reads only the edges of confidence >= T (index-only): all of
// them, so every entity whose best edge reaches T is ranked exactly as over
// all edges, and before every other. From there the step is the full one:
// each other end's best edge (DISTINCT ON), the unseen ones best first, the
// filter checked only until Limit+1 have passed. When that leaves fewer
// than Limit+1 and edges were cut (many seen ends or filtered ones), k
// grows and the step runs again; once k exceeds every end's edges nothing
// is cut. Array membership that filters rows (the seen set) is a hashed
// subplan rather than "= ANY", whose per-row linear scan the generic plans
// of the statement cache would otherwise use.
func (s *Store) ExpandLevel(ctx context.Context, ws string, q driver.ExpandLevelQuery) ([]uuid.UUID, bool, error) {
	ctx = withWS(ctx, ws)
	if len(q.Frontier) == 0 {
		return nil, false, nil
	}
	args := sqlArgs{ws}
	front := args.add(uuidArray(q.Frontier))
	seen := args.add(uuidArray(q.Seen))
	want := q.Limit + 1
	n := args.add(want)
	var cond string
	if len(q.Relations) > 0 {
		cond += " AND ed.relation = ANY(" + args.add(q.Relations) + "::text[])"
	}
	if q.MinConfidence > 0 {
		cond += " AND ed.confidence >= " + args.add(q.MinConfidence) + "::real"
	}
	filter := "TRUE"
	if q.Filter != nil {
		filter = filterSQL(*q.Filter, (*[]any)(&args))
	}
	kArg := args.add(int64(0)) // k, set per try
	// The k-th best edge of each end of each frontier entity: a backward
	// index-only scan of k entries.
	kth := func(end string) string {
		return `SELECT (SELECT ed.confidence FROM edges ed WHERE ed.workspace_id = $1 AND ed.` + end + ` = f.id` + cond + `
			ORDER BY ed.confidence DESC OFFSET ` + kArg + `::bigint - 1 LIMIT 1) AS c FROM unnest(` + front + `::uuid[]) f(id)`
	}
	arm := func(other, end string) string {
		return `SELECT ed.` + other + ` AS other, ed.confidence, ed.id FROM edges ed
			WHERE ed.workspace_id = $1 AND ed.` + end + ` = ANY(` + front + `::uuid[])
			AND ed.confidence >= coalesce((SELECT c FROM bound), 0)` + cond
	}
	sql := `WITH bound AS (SELECT max(c) AS c FROM (` + kth("source_id") + ` UNION ALL ` + kth("target_id") + `) l)
	SELECT (SELECT c FROM bound) IS NOT NULL, b.other FROM (SELECT 1) one LEFT JOIN LATERAL (
		SELECT b.other, b.confidence, b.id FROM (
			SELECT other, confidence, id FROM (
				SELECT DISTINCT ON (other) other, confidence, id FROM (
					` + arm("target_id", "source_id") + `
					UNION ALL
					` + arm("source_id", "target_id") + `
				) inc
				WHERE other NOT IN (SELECT unnest(` + seen + `::uuid[]))
				ORDER BY other, confidence DESC, id
			) d
			ORDER BY confidence DESC, id
			OFFSET 0
		) b
		WHERE EXISTS (SELECT 1 FROM entities e WHERE e.workspace_id = $1 AND e.id = b.other AND ` + filter + `)
		ORDER BY b.confidence DESC, b.id
		LIMIT ` + n + `
	) b ON TRUE
	ORDER BY b.confidence DESC, b.id`
	ki := len(args) - 1
	for k := expandCut(want); ; k *= 4 {
		args[ki] = k
		ids, cut, err := s.expandLevel(ctx, sql, args)
		if err != nil {
			return nil, false, fmt.Errorf("postgres: expand level: %w", err)
		}
		if len(ids) >= want || !cut {
			if len(ids) > q.Limit {
				return ids[:q.Limit], true, nil
			}
			return ids, false, nil
		}
	}
}

// expandCut is how many of a frontier's best incident edges a step reads
// first to find want entities: a margin over want for ends already seen,
// an entity reached by several edges, and ends the filter rejects.
func expandCut(want int) int64 { return int64(want + want/4 + 16) }

// expandLevel runs one try of ExpandLevel's statement: the entities found
// and whether edges were cut.
//
// The statement runs with a generic plan, planned once per connection.
// Left to choose (plan_cache_mode auto), PostgreSQL keeps planning it anew
// for each call once cheap custom plans for one-entity frontiers (every
// first step) have set its average: about 0.5 ms of planning for a query
// that then runs in 0.1. The generic plan is the same nested loops of index
// scans whatever the frontier's size. BEGIN, SET LOCAL and ROLLBACK travel
// in the statement's round trip (ROLLBACK: nothing was written, and the
// write tracer counts a COMMIT as a write for the read replicas).
func (s *Store) expandLevel(ctx context.Context, sql string, args []any) ([]uuid.UUID, bool, error) {
	b := &pgx.Batch{}
	b.Queue("BEGIN READ ONLY")
	b.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
	level := b.Queue(sql, args...)
	b.Queue("ROLLBACK")
	var ids []uuid.UUID
	cut := false
	level.Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var id pgtype.UUID
			if err := rows.Scan(&cut, &id); err != nil {
				return err
			}
			if id.Valid {
				ids = append(ids, id.Bytes)
			}
		}
		return rows.Err()
	})
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, false, mapErr(err)
	}
	return ids, cut, nil
}

// ReplaceDerivedEdges implements driver.GraphStorage. The delete and
// the upserts travel as one batch, which PostgreSQL runs as one implicit
// transaction: a single round trip instead of four.
//
// The origin entity is locked first, then its edges are deleted and the new
// ones upserted in key order (see the lock order in tx.go).
func (s *Store) ReplaceDerivedEdges(ctx context.Context, ws string, origin uuid.UUID, source string, edges []driver.Edge, audit *driver.AuditEntry) (int, error) {
	ctx = withWS(ctx, ws)
	order := edgeKeyOrder(edges)
	aid, aat, akey, aclient, aop, aentity, adetails, err := auditArgs(audit)
	if err != nil {
		return 0, fmt.Errorf("postgres: replace derived edges: audit: %w", err)
	}
	metas := make([][]byte, len(edges))
	for i := range edges {
		meta, err := metadataJSON(edges[i].Metadata)
		if err != nil {
			return 0, fmt.Errorf("postgres: replace derived edges: %w", err)
		}
		metas[i] = meta
	}
	var tag pgconn.CommandTag
	err = s.retryAborted(ctx, func() error {
		b := &pgx.Batch{}
		b.Queue("SELECT 1 FROM entities WHERE workspace_id = $1 AND id = $2 FOR NO KEY UPDATE", ws, origin)
		b.Queue("DELETE FROM edges WHERE workspace_id = $1 AND origin_id = $2 AND source = $3", ws, origin, source)
		for _, i := range order {
			e := &edges[i]
			b.Queue(upsertEdgeSQL, ws, e.ID, e.SourceID, e.TargetID, e.Relation, e.Confidence, e.Source, metas[i],
				e.OriginID, e.Provider, e.Model, e.PromptVersion, e.CreatedAt, e.UpdatedAt)
		}
		if audit != nil {
			b.Queue(`INSERT INTO audit_log (workspace_id, id, at, key_id, client_id, operation, entity_id, details)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, ws, aid, aat, akey, aclient, aop, aentity, adetails)
		}
		br := s.pool.SendBatch(ctx, b)
		_, err := br.Exec()
		if err == nil {
			tag, err = br.Exec()
		}
		for i := 0; err == nil && i < len(edges); i++ {
			_, err = br.Exec() // an upsert blocked by precedence returns no row
		}
		if err == nil && audit != nil {
			_, err = br.Exec()
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: replace derived edges: %w", mapErr(err))
	}
	return int(tag.RowsAffected()), nil
}

// ChunkVectors implements driver.GraphStorage.
func (s *Store) ChunkVectors(ctx context.Context, ws string, entityID uuid.UUID, modelID int64) ([][]float32, error) {
	ctx = withWS(ctx, ws)
	rows, err := s.pool.Query(ctx, `SELECT embedding FROM chunks WHERE workspace_id = $1 AND entity_id = $2
		AND model_id = $3 AND embedding IS NOT NULL ORDER BY chunk_index`, ws, entityID, modelID)
	if err != nil {
		return nil, fmt.Errorf("postgres: chunk vectors: %w", mapErr(err))
	}
	defer rows.Close()
	var out [][]float32
	for rows.Next() {
		var v pgvector.Vector
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("postgres: chunk vectors: %w", err)
		}
		out = append(out, v.Slice())
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: chunk vectors: %w", mapErr(err))
	}
	return out, nil
}
