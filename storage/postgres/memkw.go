package postgres

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/kwindex"
)

// With Config.MemoryIndex the keyword branch is answered from the same
// copy as the vector branch (memindex.go): internal/kwindex, the SQLite
// store's keyword index, over every chunk's content and tsvector and every
// entity's head. The terms' lexemes are PostgreSQL's (termLexemes), and the
// chunks' tsvectors are the ones PostgreSQL computed, so a chunk matches
// and ranks as it does in SQL; what can differ is which chunks a probe or a
// fill step takes first when more match than it has room for (the copy's
// order, the chunks' ids; SQL's, the GIN bitmap's row order).

// memView returns ws's keyword view for filter f from a ready copy, with
// sp.mu held for reading (the caller unlocks it), or false when the copy is
// not ready.
func (s *Store) memView(ctx context.Context, ws string, f *driver.EntityFilter) (*memSpace, kwindex.View, bool) {
	sp := s.mem.ready(ctx, ws)
	if sp == nil {
		return nil, kwindex.View{}, false
	}
	sp.mu.RLock()
	return sp, kwindex.View{Set: sp.kw, Heads: sp.heads, Admit: sp.admitted(f),
		Ent: func(slot int32) *kwindex.Entity { return &sp.ents[slot].Entity }}, true
}

// memKeywordProbe answers KeywordProbe from the copy, or reports false
// when it is not ready.
func (s *Store) memKeywordProbe(ctx context.Context, ws string, q driver.KeywordQuery) ([]driver.KeywordHit, bool, error) {
	termLex, err := s.termLexemes(ctx, q.Terms)
	if err != nil {
		return nil, true, fmt.Errorf("postgres: keyword probe: %w", err)
	}
	t := kwindex.CompileLexemes(termLex, q.Alternatives)
	use, holds, err := kwindex.Plan(&q, t)
	if err != nil {
		return nil, true, fmt.Errorf("postgres: %w", err)
	}
	useVec := false
	if len(q.Vector) > 0 {
		m, err := s.model(ctx, q.ModelID)
		if err != nil {
			return nil, true, err
		}
		useVec = len(q.Vector) == m.Dimensions && !q.Bare
	}
	sp, v, ok := s.memView(ctx, ws, &q.Filter)
	if !ok {
		return nil, false, nil
	}
	defer sp.mu.RUnlock()
	if len(use) == 0 || q.Limit <= 0 {
		return nil, true, nil // an empty tsquery matches nothing
	}
	hits, _, err := v.Probe(&q, t, use, holds)
	if err != nil {
		return nil, true, fmt.Errorf("postgres: keyword probe: %w", err)
	}
	if useVec && len(hits) > 0 {
		ids := make([]uuid.UUID, len(hits))
		for i := range hits {
			ids[i] = hits[i].ChunkID
		}
		sims := sp.similarities(q.ModelID, q.Vector, ids)
		for i := range hits {
			if sim, ok := sims[hits[i].ChunkID]; ok {
				hits[i].Similarity = &sim
			}
		}
	}
	return hits, true, nil
}

// memKeywordFill answers KeywordFill from the copy, or reports false when
// it is not ready.
func (s *Store) memKeywordFill(ctx context.Context, ws string, q driver.KeywordFillQuery) (driver.KeywordFillResult, bool, error) {
	if err := kwindex.CheckFill(&q); err != nil {
		return driver.KeywordFillResult{}, true, fmt.Errorf("postgres: %w", err)
	}
	termLex, err := s.termLexemes(ctx, q.Terms)
	if err != nil {
		return driver.KeywordFillResult{}, true, fmt.Errorf("postgres: keyword fill: %w", err)
	}
	t := kwindex.CompileLexemes(termLex, q.Alternatives)
	sp, v, ok := s.memView(ctx, ws, &q.Filter)
	if !ok {
		return driver.KeywordFillResult{}, false, nil
	}
	defer sp.mu.RUnlock()
	res, err := v.Fill(&q, t)
	if err != nil {
		return driver.KeywordFillResult{}, true, fmt.Errorf("postgres: keyword fill: %w", err)
	}
	return res, true, nil
}

// memLexemeStats answers LexemeStats from the copy, or reports false when
// it is not ready.
func (s *Store) memLexemeStats(ctx context.Context, ws string, lexemes []string) (driver.LexemeStats, bool) {
	sp := s.mem.ready(ctx, ws)
	if sp == nil {
		return driver.LexemeStats{}, false
	}
	sp.mu.RLock()
	defer sp.mu.RUnlock()
	return sp.kw.Stats(lexemes), true
}
