package sqlite

import (
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/kwindex"
)

// The keyword index (internal/kwindex) answers the keyword branch from
// memory, beside the vector index and kept current the same way
// (change_log): per workspace a kwindex.Set of every chunk (slots in chunk
// rid order) and the entities' heads (space.heads). This file reads it
// under the index's read lock.

// kwView returns ws's keyword state for filter f; ok is false when the
// workspace has no chunk. The caller holds ix.mu for reading.
func (ix *index) kwView(ws string, f *driver.EntityFilter) (kwindex.View, bool) {
	sp := ix.spaces[ws]
	if sp == nil || sp.kw.Live() == 0 {
		return kwindex.View{}, false
	}
	return kwindex.View{Set: sp.kw, Heads: sp.heads, Admit: sp.admitted(f),
		Ent: func(slot int32) *kwindex.Entity { return &sp.ents[slot].Entity }}, true
}

// termCounts counts the live chunks of ws holding every lexeme of each
// term, up to limit (0 for a term without lexemes), and the workspace's
// live chunks.
func (ix *index) termCounts(ws string, q *kwindex.Terms, limit int) ([]int, int) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var ks *kwindex.Set
	if sp := ix.spaces[ws]; sp != nil {
		ks = sp.kw
	}
	return ks.TermCounts(q, limit)
}

// chunkTexts returns, for the chunks of ws with the given rids that are
// live and admitted by f, their entity id, content and entity update time.
func (ix *index) chunkTexts(ws string, rids []int64, f *driver.EntityFilter) map[int64]chunkRow {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make(map[int64]chunkRow, len(rids))
	sp := ix.spaces[ws]
	if sp == nil || sp.kw == nil {
		return out
	}
	match := f.Matcher()
	for _, rid := range rids {
		ent, content, ok := sp.kw.Lookup(rid)
		if !ok {
			continue
		}
		e := &sp.ents[ent]
		if !admits(match, e) {
			continue
		}
		out[rid] = chunkRow{entity: e.ID, content: content, updated: fromMicros(e.UpdatedAt)}
	}
	return out
}

// keywordProbe runs a probe (see Store.KeywordProbe) over the terms in use,
// which all have lexemes. It returns the hits and their chunk rids.
func (ix *index) keywordProbe(ws string, q *driver.KeywordQuery, t *kwindex.Terms, use []int, holds func(uint32) bool) ([]driver.KeywordHit, []int64, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if !ix.loaded {
		return nil, nil, errNotMigrated
	}
	v, ok := ix.kwView(ws, &q.Filter)
	if !ok {
		return nil, nil, nil
	}
	return v.Probe(q, t, use, holds)
}

// keywordFill builds a keyword pool (see Store.KeywordFill).
func (ix *index) keywordFill(ws string, q *driver.KeywordFillQuery, t *kwindex.Terms) (driver.KeywordFillResult, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if !ix.loaded {
		return driver.KeywordFillResult{}, errNotMigrated
	}
	v, ok := ix.kwView(ws, &q.Filter)
	if !ok {
		return driver.KeywordFillResult{}, nil
	}
	return v.Fill(q, t)
}

// lexemeStats reads ws's corpus statistics (see Store.LexemeStats).
func (ix *index) lexemeStats(ws string, lexemes []string) driver.LexemeStats {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	var ks *kwindex.Set
	if sp := ix.spaces[ws]; sp != nil {
		ks = sp.kw
	}
	return ks.Stats(lexemes)
}
