package sqlite

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/kwindex"
	"github.com/postgram-go/postgram/internal/vecscan"
)

// VectorSearch implements driver.Storage. Every strategy ranks exactly
// (see the package documentation), so the plan is always "exact".
func (s *Store) VectorSearch(ctx context.Context, ws string, q driver.VectorQuery) (driver.VectorResult, error) {
	m, err := s.model(ctx, q.ModelID)
	if err != nil {
		return driver.VectorResult{}, err
	}
	if len(q.Vector) != m.Dimensions {
		return driver.VectorResult{}, fmt.Errorf("sqlite: vector search: query has %d dimensions, model %s has %d: %w",
			len(q.Vector), m.Name, m.Dimensions, driver.ErrInvalidArgument)
	}
	res := driver.VectorResult{Plan: "exact"}
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
		res.Hits = []driver.VectorHit{}
		return res, nil
	}
	rids := make([]int64, len(top))
	for i, t := range top {
		rids[i] = t.RID
	}
	rows := s.idx.chunkTexts(ws, rids, &q.Filter)
	type distHit struct {
		dist float64 // cosine distance, as pgvector's <=> computes it
		hit  driver.VectorHit
	}
	hits := make([]distHit, 0, len(top))
	for _, t := range top {
		r, ok := rows[t.RID]
		if !ok {
			continue // changed since the index was read
		}
		h := driver.VectorHit{ChunkID: t.Chunk, EntityID: r.entity, Content: r.content, UpdatedAt: r.updated}
		dist := 1 - t.Sim
		h.Similarity = 1 - dist
		hits = append(hits, distHit{dist, h})
	}
	// PostgreSQL's outer ORDER BY r.dist, r.id (NaN distances last).
	slices.SortStableFunc(hits, func(a, b distHit) int {
		return vecscan.CompareDistance(a.dist, a.hit.ChunkID, b.dist, b.hit.ChunkID)
	})
	res.Hits = make([]driver.VectorHit, len(hits))
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

// KeywordProbe implements driver.Storage, from the in-memory keyword
// index (see keywords.go): the chunks whose lexemes satisfy the probe, in
// chunk rid order; with Only, the listed chunks, checked against the probe
// on their stored tsvector (the same lexeme sets, so the same answer),
// which keeps scoring a pool independent of how common its terms are.
func (s *Store) KeywordProbe(ctx context.Context, ws string, q driver.KeywordQuery) ([]driver.KeywordHit, error) {
	terms := kwindex.Compile(q.Terms, q.Alternatives)
	use, holds, err := kwindex.Plan(&q, terms)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	useVec := false
	if len(q.Vector) > 0 && !q.Bare {
		m, err := s.model(ctx, q.ModelID)
		if err != nil {
			return nil, err
		}
		useVec = len(q.Vector) == m.Dimensions
	}
	if len(use) == 0 || q.Limit <= 0 {
		return nil, nil // an empty tsquery matches nothing
	}
	if err := s.idx.ensureFresh(ctx); err != nil {
		return nil, fmt.Errorf("sqlite: keyword probe: %w", err)
	}
	hits, rids, err := s.idx.keywordProbe(ws, &q, terms, use, holds)
	if err != nil {
		return nil, fmt.Errorf("sqlite: keyword probe: %w", err)
	}
	if useVec && len(hits) > 0 {
		sims := s.idx.similarities(ws, q.ModelID, q.Vector, rids)
		for i, rid := range rids {
			if sim, ok := sims[rid]; ok {
				hits[i].Similarity = &sim
			}
		}
	}
	return hits, nil
}

var _ driver.KeywordFiller = (*Store)(nil)

// KeywordFill implements driver.KeywordFiller from the in-memory keyword
// index: each step walks the chunks matching its term in rid order and
// stops as soon as the pool is full, skipping chunks already in it; no OR
// probe is needed to learn that the union fits.
func (s *Store) KeywordFill(ctx context.Context, ws string, q driver.KeywordFillQuery) (driver.KeywordFillResult, error) {
	var res driver.KeywordFillResult
	if err := kwindex.CheckFill(&q); err != nil {
		return res, fmt.Errorf("sqlite: %w", err)
	}
	if err := s.idx.ensureFresh(ctx); err != nil {
		return res, fmt.Errorf("sqlite: keyword fill: %w", err)
	}
	res, err := s.idx.keywordFill(ws, &q, kwindex.Compile(q.Terms, q.Alternatives))
	if err != nil {
		return driver.KeywordFillResult{}, fmt.Errorf("sqlite: keyword fill: %w", err)
	}
	return res, nil
}

var _ driver.Refresher = (*Store)(nil)

// Refresh implements driver.Refresher: the index catches up with commits
// of other processes once, and reads under the returned context skip the
// check.
func (s *Store) Refresh(ctx context.Context) (context.Context, error) {
	if err := s.idx.ensureFresh(ctx); err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, freshKey{}, s.idx), nil
}

// LexemeStats implements driver.Storage from the keyword index: live
// chunks, their total length and each lexeme's live posting count.
func (s *Store) LexemeStats(ctx context.Context, ws string, lexemes []string) (driver.LexemeStats, error) {
	if err := s.idx.ensureFresh(ctx); err != nil {
		return driver.LexemeStats{}, fmt.Errorf("sqlite: lexeme stats: %w", err)
	}
	return s.idx.lexemeStats(ws, lexemes), nil
}

var _ driver.SimilarityScorer = (*Store)(nil)

// ChunkSimilarities implements driver.SimilarityScorer: with it the
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

// EdgeSummaries implements driver.Storage.
func (s *Store) EdgeSummaries(ctx context.Context, ws string, ids []uuid.UUID, f driver.EntityFilter) (map[uuid.UUID]driver.EdgeSummary, error) {
	out := make(map[uuid.UUID]driver.EdgeSummary, len(ids))
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
		var rc driver.RelationCount
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

// Neighbors implements driver.Storage.
func (s *Store) Neighbors(ctx context.Context, ws string, ids []uuid.UUID, f driver.EntityFilter) ([]driver.Neighbor, error) {
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
	var out []driver.Neighbor
	for rows.Next() {
		var n driver.Neighbor
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

var _ driver.TermStatser = (*Store)(nil)

// TermFrequencies implements driver.TermStatser: a term's frequency is
// the fraction of the workspace's chunks that match it (all its lexemes),
// counted in the keyword index up to termCountCap chunks. Terms more common
// than the cap tie (PostgreSQL's statistics, conversely, know only the
// common lexemes and give rarer ones 0); a term without lexemes gets 0, as
// on PostgreSQL. ok is false while the workspace has no chunk.
func (s *Store) TermFrequencies(ctx context.Context, ws string, terms []string) ([]float64, bool, error) {
	if err := s.idx.ensureFresh(ctx); err != nil {
		return nil, false, fmt.Errorf("sqlite: term frequencies: %w", err)
	}
	counts, total := s.idx.termCounts(ws, kwindex.Compile(terms, nil), termCountCap)
	freqs := make([]float64, len(terms))
	if total <= 0 {
		return freqs, false, nil
	}
	for i, n := range counts {
		freqs[i] = min(1, float64(n)/float64(total))
	}
	return freqs, true, nil
}

// termCountCap bounds the chunks counted per term by TermFrequencies.
const termCountCap = 1000
