package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
)

// VectorSearch implements postgram.Storage. Every strategy ranks exactly
// (see the package documentation), so the plan is always "exact".
func (s *Store) VectorSearch(ctx context.Context, ws string, q postgram.VectorQuery) (postgram.VectorResult, error) {
	m, err := s.model(ctx, q.ModelID)
	if err != nil {
		return postgram.VectorResult{}, err
	}
	if len(q.Vector) != m.Dimensions {
		return postgram.VectorResult{}, fmt.Errorf("sqlite: vector search: query has %d dimensions, model %s has %d: %w",
			len(q.Vector), m.Name, m.Dimensions, postgram.ErrInvalidArgument)
	}
	res := postgram.VectorResult{Plan: "exact"}
	if err := s.idx.ensureFresh(ctx); err != nil {
		return res, fmt.Errorf("sqlite: vector search: %w", err)
	}
	top, err := s.idx.searchVectors(ws, q.ModelID, q.Vector, &q.Filter, q.Limit)
	if err != nil {
		return res, fmt.Errorf("sqlite: vector search: %w", err)
	}
	if len(q.Also) > 0 {
		res.Similarities = s.idx.similaritiesOf(ws, q.ModelID, q.Vector, q.Also)
	}
	if len(top) == 0 {
		res.Hits = []postgram.VectorHit{}
		return res, nil
	}
	rids := make([]int64, len(top))
	for i, t := range top {
		rids[i] = t.rid
	}
	rows, err := s.chunkRows(ctx, ws, rids, q.Filter)
	if err != nil {
		return res, fmt.Errorf("sqlite: vector search: %w", err)
	}
	type distHit struct {
		dist float64 // cosine distance, as pgvector's <=> computes it
		hit  postgram.VectorHit
	}
	hits := make([]distHit, 0, len(top))
	for _, t := range top {
		r, ok := rows[t.rid]
		if !ok {
			continue // changed since the index was read
		}
		h := postgram.VectorHit{ChunkID: t.chunk, EntityID: r.entity, Content: r.content, UpdatedAt: r.updated}
		dist := 1 - t.sim
		h.Similarity = 1 - dist
		hits = append(hits, distHit{dist, h})
	}
	// PostgreSQL's outer ORDER BY r.dist, r.id (NaN distances last).
	slices.SortStableFunc(hits, func(a, b distHit) int {
		an, bn := math.IsNaN(a.dist), math.IsNaN(b.dist)
		switch {
		case an != bn:
			if an {
				return 1
			}
			return -1
		case !an && a.dist != b.dist:
			if a.dist < b.dist {
				return -1
			}
			return 1
		}
		return bytes.Compare(a.hit.ChunkID[:], b.hit.ChunkID[:])
	})
	res.Hits = make([]postgram.VectorHit, len(hits))
	for i, h := range hits {
		res.Hits[i] = h.hit
	}
	return res, nil
}

type chunkRow struct {
	entity  uuid.UUID
	content string
	updated time.Time
}

// chunkRows reads chunks by rid, with their entity's update time, among
// the entities f admits (re-checked in SQL, so a row changed since the index
// was read is dropped rather than returned against the filter).
func (s *Store) chunkRows(ctx context.Context, ws string, rids []int64, f postgram.EntityFilter) (map[int64]chunkRow, error) {
	var b strings.Builder
	b.WriteByte('[')
	for i, r := range rids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatInt(r, 10))
	}
	b.WriteByte(']')
	args := []any{b.String(), ws}
	where := filterSQL(f, &args)
	rows, err := s.query(ctx, `SELECT c.rid, c.entity_id, c.content, e.updated_at
		FROM (SELECT DISTINCT value FROM json_each(?)) j CROSS JOIN chunks c ON c.rid = j.value CROSS JOIN entities e ON e.rid = c.entity_rid
		WHERE c.workspace_id = ? AND `+where, args...)
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	out := make(map[int64]chunkRow, len(rids))
	for rows.Next() {
		var rid, updated int64
		var eid string
		var r chunkRow
		if err := rows.Scan(&rid, &eid, &r.content, &updated); err != nil {
			return nil, err
		}
		if r.entity, err = uuid.Parse(eid); err != nil {
			return nil, err
		}
		r.updated = fromMicros(updated)
		out[rid] = r
	}
	return out, mapErr(rows.Err())
}

// KeywordProbe implements postgram.Storage. FTS5 finds the chunks whose
// lexemes satisfy the probe; with Only, the listed chunks are read by id
// instead and the probe is checked on their stored tsvector (the same
// lexeme sets, so the same answer), which keeps scoring a pool independent
// of how common its terms are.
func (s *Store) KeywordProbe(ctx context.Context, ws string, q postgram.KeywordQuery) ([]postgram.KeywordHit, error) {
	if len(q.Terms) == 0 || len(q.Terms) > 32 {
		return nil, fmt.Errorf("sqlite: keyword probe: need 1 to 32 terms, got %d", len(q.Terms))
	}
	terms := compileTerms(q.Terms)
	all := make([]int, len(q.Terms))
	for i := range all {
		all[i] = i
	}
	var (
		match string
		holds func(mask uint32) bool // the probe, on a chunk's term mask
	)
	switch q.Mode {
	case postgram.ProbeAll:
		match = terms.match(ws, "AND", all)
		var need uint32
		for i, ls := range terms.Of {
			if len(ls) > 0 {
				need |= 1 << i
			}
		}
		holds = func(m uint32) bool { return m&need == need }
	case postgram.ProbeAny:
		match = terms.match(ws, "OR", all)
		holds = func(m uint32) bool { return m != 0 }
	case postgram.ProbeTerm:
		if q.Term < 0 || q.Term >= len(q.Terms) {
			return nil, fmt.Errorf("sqlite: keyword probe: term %d out of range", q.Term)
		}
		match = terms.match(ws, "AND", []int{q.Term})
		bit := uint32(1) << q.Term
		holds = func(m uint32) bool { return m&bit != 0 }
	default:
		return nil, fmt.Errorf("sqlite: keyword probe: unknown mode %d", q.Mode)
	}
	useVec := false
	if len(q.Vector) > 0 && !q.Bare {
		m, err := s.model(ctx, q.ModelID)
		if err != nil {
			return nil, err
		}
		useVec = len(q.Vector) == m.Dimensions
	}
	if match == "" || q.Limit <= 0 {
		return nil, nil // an empty tsquery matches nothing
	}
	cols := "c.rid, c.id, c.entity_id, c.content, c.tsv, e.updated_at"
	if q.Bare && len(q.Only) == 0 {
		cols = "c.rid, c.id, c.entity_id, NULL, NULL, NULL"
	}
	var (
		sqlText string
		args    []any
	)
	if len(q.Only) > 0 {
		// Read the listed chunks; the probe is checked below. No LIMIT:
		// it applies to the chunks that pass.
		args = []any{idsJSON(q.Only), ws}
		where := filterSQL(q.Filter, &args)
		sqlText = `SELECT ` + cols + ` FROM (SELECT DISTINCT value FROM json_each(?)) j
			CROSS JOIN chunks c ON c.workspace_id = ? AND c.id = j.value
			CROSS JOIN entities e ON e.rid = c.entity_rid
			WHERE ` + where
	} else {
		// FTS5 drives the join (CROSS JOIN fixes the order): it yields the
		// matching chunks of the workspace, the joins apply the filter.
		args = []any{match, ws}
		where := filterSQL(q.Filter, &args)
		sqlText = `SELECT ` + cols + ` FROM chunk_fts CROSS JOIN chunks c ON c.rid = chunk_fts.rowid
			CROSS JOIN entities e ON e.rid = c.entity_rid
			WHERE chunk_fts MATCH ? AND c.workspace_id = ? AND ` + where
	}
	if len(q.Exclude) > 0 {
		sqlText += " AND c.id NOT IN (SELECT value FROM json_each(?))"
		args = append(args, idsJSON(q.Exclude))
	}
	if len(q.Only) == 0 {
		sqlText += " LIMIT ?"
		args = append(args, q.Limit)
	}
	rows, err := s.query(ctx, sqlText, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: keyword probe: %w", mapErr(err))
	}
	defer rows.Close()
	var hits []postgram.KeywordHit
	var rids []int64
	var d docTerms
	for rows.Next() && len(hits) < q.Limit {
		var h postgram.KeywordHit
		var rid int64
		var updated sql.NullInt64
		var cid, eid string
		var content sql.NullString
		var tsv []byte
		if err := rows.Scan(&rid, &cid, &eid, &content, &tsv, &updated); err != nil {
			return nil, fmt.Errorf("sqlite: keyword probe: %w", err)
		}
		if h.ChunkID, err = uuid.Parse(cid); err != nil {
			return nil, fmt.Errorf("sqlite: keyword probe: %w", err)
		}
		if h.EntityID, err = uuid.Parse(eid); err != nil {
			return nil, fmt.Errorf("sqlite: keyword probe: %w", err)
		}
		if tsv != nil {
			if err := terms.scan(tsv, &d); err != nil {
				return nil, fmt.Errorf("sqlite: keyword probe: chunk %s: %w", h.ChunkID, err)
			}
			h.Matched = terms.mask(&d)
			if len(q.Only) > 0 && !holds(h.Matched) {
				continue
			}
			if q.Bare {
				h.Matched = 0
			} else {
				h.Rank = float64(terms.rankCD(&d))
				h.Content = content.String
				h.UpdatedAt = fromMicros(updated.Int64)
			}
		}
		hits = append(hits, h)
		rids = append(rids, rid)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: keyword probe: %w", mapErr(err))
	}
	if useVec && len(hits) > 0 {
		if err := s.idx.ensureFresh(ctx); err != nil {
			return nil, fmt.Errorf("sqlite: keyword probe: %w", err)
		}
		sims := s.idx.similarities(ws, q.ModelID, q.Vector, rids)
		for i, rid := range rids {
			if sim, ok := sims[rid]; ok {
				hits[i].Similarity = &sim
			}
		}
	}
	return hits, nil
}

var _ postgram.KeywordFiller = (*Store)(nil)

// KeywordFill implements postgram.KeywordFiller: each step streams the
// chunks FTS5 yields for its match (the filter applied by the joins) and
// stops as soon as the pool is full, skipping chunks already in it; no OR
// probe is needed to learn that the union fits. A step reads each chunk's
// row to join it anyway, so it returns the columns the pool needs and a new
// chunk is scored as it arrives: the pool is not read a second time.
func (s *Store) KeywordFill(ctx context.Context, ws string, q postgram.KeywordFillQuery) (postgram.KeywordFillResult, error) {
	var res postgram.KeywordFillResult
	if len(q.Terms) == 0 || len(q.Terms) > 32 {
		return res, fmt.Errorf("sqlite: keyword fill: need 1 to 32 terms, got %d", len(q.Terms))
	}
	if q.Limit <= 0 {
		return res, fmt.Errorf("sqlite: keyword fill: limit %d", q.Limit)
	}
	for _, t := range q.Order {
		if t < 0 || t >= len(q.Terms) {
			return res, fmt.Errorf("sqlite: keyword fill: term %d out of range", t)
		}
	}
	terms := compileTerms(q.Terms)
	all := make([]int, len(q.Terms))
	for i := range all {
		all[i] = i
	}
	res.Hits = make([]postgram.KeywordHit, 0, q.Limit)
	seen := make(map[int64]bool, q.Limit)
	var d docTerms
	step := func(match string) error {
		if match == "" || len(res.Hits) >= q.Limit {
			return nil // an empty tsquery matches nothing
		}
		args := []any{match, ws}
		where := filterSQL(q.Filter, &args)
		rows, err := s.query(ctx, `SELECT c.rid, c.id, c.entity_id, c.content, c.tsv, e.updated_at
			FROM chunk_fts CROSS JOIN chunks c ON c.rid = chunk_fts.rowid
			CROSS JOIN entities e ON e.rid = c.entity_rid
			WHERE chunk_fts MATCH ? AND c.workspace_id = ? AND `+where, args...)
		if err != nil {
			return mapErr(err)
		}
		defer rows.Close()
		for len(res.Hits) < q.Limit && rows.Next() {
			var rid, updated int64
			var cid, eid, content, tsv sql.RawBytes
			if err := rows.Scan(&rid, &cid, &eid, &content, &tsv, &updated); err != nil {
				return err
			}
			if seen[rid] {
				continue
			}
			seen[rid] = true
			h := postgram.KeywordHit{Content: string(content), UpdatedAt: fromMicros(updated)}
			if h.ChunkID, err = uuid.ParseBytes(cid); err != nil {
				return fmt.Errorf("chunk %d: id: %w", rid, err)
			}
			if h.EntityID, err = uuid.ParseBytes(eid); err != nil {
				return fmt.Errorf("chunk %s: entity id: %w", h.ChunkID, err)
			}
			if err := terms.scan(tsv, &d); err != nil {
				return fmt.Errorf("chunk %s: %w", h.ChunkID, err)
			}
			h.Rank, h.Matched = float64(terms.rankCD(&d)), terms.mask(&d)
			res.Hits = append(res.Hits, h)
		}
		return mapErr(rows.Err())
	}
	if err := step(terms.match(ws, "AND", all)); err != nil {
		return postgram.KeywordFillResult{}, fmt.Errorf("sqlite: keyword fill: %w", err)
	}
	res.Conjunction = len(res.Hits)
	for _, t := range q.Order {
		if err := step(terms.match(ws, "AND", []int{t})); err != nil {
			return postgram.KeywordFillResult{}, fmt.Errorf("sqlite: keyword fill: %w", err)
		}
	}
	if len(res.Hits) == 0 {
		res.Hits = nil
	}
	return res, nil
}

var _ postgram.SimilarityScorer = (*Store)(nil)

// ChunkSimilarities implements postgram.SimilarityScorer: with it the
// library scores a keyword pool without similarities and asks for the few
// that decide the results, instead of every probe computing one per hit.
// The in-memory index answers by chunk id (the same values KeywordProbe
// reports), so this reads nothing from the file.
func (s *Store) ChunkSimilarities(ctx context.Context, ws string, modelID int64, vec []float32, ids []uuid.UUID) (map[uuid.UUID]float64, error) {
	if len(ids) == 0 || len(vec) == 0 {
		return make(map[uuid.UUID]float64), nil
	}
	if err := s.idx.ensureFresh(ctx); err != nil {
		return nil, fmt.Errorf("sqlite: chunk similarities: %w", err)
	}
	return s.idx.similaritiesOf(ws, modelID, vec, ids), nil
}

// EdgeSummaries implements postgram.Storage.
func (s *Store) EdgeSummaries(ctx context.Context, ws string, ids []uuid.UUID, f postgram.EntityFilter) (map[uuid.UUID]postgram.EdgeSummary, error) {
	out := make(map[uuid.UUID]postgram.EdgeSummary, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := []any{ws, idsJSON(ids)}
	where := filterSQL(f, &args)
	rows, err := s.query(ctx, `SELECT x.id, x.relation, count(*) FROM (
			SELECT ed.source_id AS id, ed.relation, ed.target_id AS other FROM edges ed
				WHERE ed.workspace_id = ?1 AND ed.source_id IN (SELECT value FROM json_each(?2))
			UNION ALL
			SELECT ed.target_id, ed.relation, ed.source_id FROM edges ed
				WHERE ed.workspace_id = ?1 AND ed.target_id IN (SELECT value FROM json_each(?2))
		) x CROSS JOIN entities e ON e.workspace_id = ?1 AND e.id = x.other
		WHERE `+where+`
		GROUP BY x.id, x.relation ORDER BY x.id, count(*) DESC, x.relation`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: edge summaries: %w", mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var rc postgram.RelationCount
		if err := rows.Scan(&id, &rc.Relation, &rc.Count); err != nil {
			return nil, fmt.Errorf("sqlite: edge summaries: %w", err)
		}
		uid, err := uuid.Parse(id)
		if err != nil {
			return nil, fmt.Errorf("sqlite: edge summaries: %w", err)
		}
		sum := out[uid]
		sum.Count += rc.Count
		sum.Relations = append(sum.Relations, rc)
		out[uid] = sum
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: edge summaries: %w", mapErr(err))
	}
	return out, nil
}

// Neighbors implements postgram.Storage.
func (s *Store) Neighbors(ctx context.Context, ws string, ids []uuid.UUID, f postgram.EntityFilter) ([]postgram.Neighbor, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := []any{ws, idsJSON(ids)}
	where := filterSQL(f, &args)
	rows, err := s.query(ctx, `SELECT `+entityCols+`, x.seed, x.relation, x.direction FROM (
			SELECT ed.source_id AS seed, ed.target_id AS other, ed.relation, 'outgoing' AS direction FROM edges ed
				WHERE ed.workspace_id = ?1 AND ed.source_id IN (SELECT value FROM json_each(?2))
			UNION ALL
			SELECT ed.target_id, ed.source_id, ed.relation, 'incoming' FROM edges ed
				WHERE ed.workspace_id = ?1 AND ed.target_id IN (SELECT value FROM json_each(?2))
		) x CROSS JOIN entities e ON e.workspace_id = ?1 AND e.id = x.other
		WHERE `+where+`
		ORDER BY x.seed, x.relation, e.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: neighbors: %w", mapErr(err))
	}
	defer rows.Close()
	var out []postgram.Neighbor
	for rows.Next() {
		var n postgram.Neighbor
		var seed string
		e, err := scanEntity(rows, &seed, &n.Relation, &n.Direction)
		if err != nil {
			return nil, fmt.Errorf("sqlite: neighbors: %w", err)
		}
		if n.SeedID, err = uuid.Parse(seed); err != nil {
			return nil, fmt.Errorf("sqlite: neighbors: %w", err)
		}
		n.Entity = e
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: neighbors: %w", mapErr(err))
	}
	return out, nil
}

var _ postgram.TermStatser = (*Store)(nil)

// TermFrequencies implements postgram.TermStatser: a term's frequency is
// the fraction of the workspace's chunks that match it (all its lexemes),
// counted in the keyword index up to termCountCap chunks, so estimating
// costs at most a few short index scans. Terms more common than the cap tie
// (PostgreSQL's statistics, conversely, know only the common lexemes and
// give rarer ones 0); a term without lexemes gets 0, as on PostgreSQL. ok
// is false while the workspace has no chunk.
//
// (FTS5's vocabulary table would give exact counts, but it counts a common
// term's whole document list: 1.1 ms for one in 47,000 chunks, against
// 0.11 ms for counting to the cap.)
func (s *Store) TermFrequencies(ctx context.Context, ws string, terms []string) ([]float64, bool, error) {
	// One statement: the workspace's chunk count, then each term's count
	// (terms without lexemes match nothing and are not counted).
	q := compileTerms(terms)
	wsHex := hex.EncodeToString([]byte(ws))
	var b strings.Builder
	b.WriteString("SELECT coalesce((SELECT chunks FROM workspace_chunks WHERE workspace_id = ?), 0)")
	args := []any{ws}
	counted := make([]int, 0, len(terms))
	for i := range terms {
		m := q.termMatch(wsHex, i)
		if m == "" {
			continue
		}
		b.WriteString(", (SELECT count(*) FROM (SELECT 1 FROM chunk_fts WHERE chunk_fts MATCH ? LIMIT ?))")
		args = append(args, m, termCountCap)
		counted = append(counted, i)
	}
	var total int64
	counts := make([]int64, len(counted))
	dest := make([]any, 0, 1+len(counted))
	dest = append(dest, &total)
	for i := range counts {
		dest = append(dest, &counts[i])
	}
	if err := s.queryRow(ctx, b.String(), args...).Scan(dest...); err != nil {
		return nil, false, fmt.Errorf("sqlite: term frequencies: %w", mapErr(err))
	}
	freqs := make([]float64, len(terms))
	if total <= 0 {
		return freqs, false, nil
	}
	for k, i := range counted {
		freqs[i] = min(1, float64(counts[k])/float64(total))
	}
	return freqs, true, nil
}

// termCountCap bounds the chunks counted per term by TermFrequencies.
const termCountCap = 1000
