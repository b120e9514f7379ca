package postgram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/chunk"
	"github.com/postgram-go/postgram/internal/fusion"
	"github.com/postgram-go/postgram/internal/query"
	"github.com/postgram-go/postgram/internal/rank"
	"github.com/postgram-go/postgram/internal/validate"
)

// SearchRequest is a hybrid search. Zero values take defaults.
type SearchRequest struct {
	Query           string       `json:"query"`
	Types           []EntityType `json:"types,omitempty"`
	Tags            []string     `json:"tags,omitempty"` // every tag must be present
	Visibilities    []Visibility `json:"visibilities,omitempty"`
	Owner           string       `json:"owner,omitempty"`
	MemoryRole      MemoryRole   `json:"memory_role,omitempty"`
	IncludeArchived bool         `json:"include_archived,omitempty"`
	// Limit is the number of results (default SearchConfig.DefaultLimit,
	// at most SearchConfig.MaxLimit).
	Limit int `json:"limit,omitempty"`
	// Threshold is the cosine floor (0..1) for candidates that do not cover
	// enough query terms. Nil takes SearchConfig.DefaultThreshold.
	Threshold *float64 `json:"threshold,omitempty"`
	// RecencyWeight (0..1) blends a 30-day half-life into the ordering.
	RecencyWeight float64 `json:"recency_weight,omitempty"`
	// ExpandGraph adds each result's 1-hop neighbours.
	ExpandGraph bool `json:"expand_graph,omitempty"`
	// IncludeContent returns full entity content (default true); false
	// returns only the matched chunk.
	IncludeContent *bool `json:"include_content,omitempty"`
	// Strategy selects the vector plan (default auto).
	Strategy Strategy `json:"strategy,omitempty"`
	// Ranking selects how candidates are ordered (default
	// SearchConfig.Ranking).
	Ranking RankingMode `json:"ranking,omitempty"`
	// Explain adds each result's ranking components (SearchResult.Explain).
	Explain bool `json:"explain,omitempty"`
}

// SearchResponse is a ranked answer.
type SearchResponse struct {
	Results []SearchResult `json:"results"`
	// Degraded names the branches that could not run, with the reason.
	Degraded []Degradation `json:"degraded,omitempty"`
	Stats    SearchStats   `json:"stats"`
}

// Degradation explains a missing branch.
type Degradation struct {
	Component string `json:"component"` // "vector"
	Reason    string `json:"reason"`
}

// UnmarshalJSON reads a {component, reason} object or a bare component
// name ("vector"), the reference server's form.
func (d *Degradation) UnmarshalJSON(b []byte) error {
	var name string
	if err := json.Unmarshal(b, &name); err == nil {
		*d = Degradation{Component: name}
		return nil
	}
	type plain Degradation
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*d = Degradation(p)
	return nil
}

// SearchStats describes how a search ran.
type SearchStats struct {
	Terms            []string             `json:"terms"`             // retained keyword terms
	DroppedStopwords int                  `json:"dropped_stopwords"` // stopword terms dropped
	TruncatedTerms   int                  `json:"truncated_terms"`   // distinct terms beyond 24
	KeywordPool      int                  `json:"keyword_pool"`      // chunks in the keyword pool
	KeywordProbe     string               `json:"keyword_probe"`     // "and", "or", "per_term" or "none"
	VectorCandidates int                  `json:"vector_candidates"` // chunks from the vector branch
	VectorPlan       string               `json:"vector_plan"`       // "exact", "hnsw", "hnsw+exact" or "none"
	QueryEmbedding   QueryEmbeddingSource `json:"query_embedding,omitempty"`
	// Ranking is the ranking that ordered the results.
	Ranking RankingMode `json:"ranking,omitempty"`
	// Expansions lists, per term, the inflections and typo corrections
	// ranking v2 also matched it by (lexeme and kind).
	Expansions map[string][]string `json:"expansions,omitempty"`
}

// SearchResult is one entity.
type SearchResult struct {
	// Entity is the matched entity; with IncludeContent false its Content
	// is empty and ChunkContent holds the evidence.
	Entity       *Entity `json:"entity"`
	ChunkContent string  `json:"chunk_content"`
	// Similarity is the raw cosine similarity of the matched chunk (nil
	// when unknown).
	Similarity *float64 `json:"similarity"`
	// Score is an ordering value, not a probability. Ranking v2 (the
	// default): the fused keyword and vector evidence relative to the
	// search's best, in (0, 1]. The seed ranking: the relative RRF score;
	// first in both branches scores 2/61 ≈ 0.03279.
	Score float64 `json:"score"`
	// RecencyScore is Score with the recency multiplier applied (equal to
	// Score when recency is off); results are ordered by it.
	RecencyScore float64      `json:"recency_score"`
	VectorRank   int          `json:"vector_rank,omitempty"`
	KeywordRank  int          `json:"keyword_rank,omitempty"`
	Edges        *EdgeSummary `json:"edges,omitempty"`
	Related      []Related    `json:"related,omitempty"`
	// Section is the heading path of the matched chunk in a Markdown
	// entity ("Guide › Install"; ingested documents keep their structure
	// as headings), empty when the content has no heading before it.
	Section string `json:"section,omitempty"`
	// Explain holds the ranking components when the request asked.
	Explain *Explanation `json:"explain,omitempty"`
}

// sectionOf is the heading path in force where chunk starts in content.
func sectionOf(content, chunkText string) string {
	if chunkText == "" || !strings.HasPrefix(content, "#") && !strings.Contains(content, "\n#") {
		return "" // no heading anywhere: the common case costs one scan
	}
	i := strings.Index(content, chunkText)
	if i < 0 {
		return ""
	}
	// Headings that open the chunk are its own section's.
	for rest := chunkText; rest != ""; {
		line, after, _ := strings.Cut(rest, "\n")
		if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
			break
		}
		i += len(line) + 1
		rest = after
	}
	return strings.Join(chunk.SectionAt(content, min(i, len(content))), chunk.SectionSeparator)
}

// Related is a 1-hop neighbour of a result.
type Related struct {
	Entity    *Entity `json:"entity"`
	Relation  string  `json:"relation"`
	Direction string  `json:"direction"` // "outgoing" or "incoming"
}

// Search runs hybrid search (DESIGN.md §4): a vector branch over chunk
// embeddings and a keyword branch over the chunks' full-text index, fused
// with reciprocal-rank fusion. When the embedder is unavailable it answers
// from keywords and says so in Degraded.
func (c *Client) Search(ctx context.Context, req SearchRequest) (*SearchResponse, error) {
	if err := c.principal.need(ScopeRead, "search"); err != nil {
		return nil, err
	}
	p, err := c.prepareSearch(req)
	if err != nil {
		return nil, err
	}
	resp := &SearchResponse{Results: []SearchResult{}, Stats: SearchStats{
		Terms: p.terms.Terms, DroppedStopwords: p.terms.Dropped, TruncatedTerms: p.terms.Truncated,
		KeywordProbe: "none", VectorPlan: "none", Ranking: p.ranking,
	}}
	if resp.Stats.Terms == nil {
		resp.Stats.Terms = []string{}
	}
	f, ok := c.principal.restrict(p.filter)
	if !ok {
		return resp, nil
	}
	p.filter = f
	if r, ok := c.store.(driver.Refresher); ok {
		if ctx, err = r.Refresh(ctx); err != nil {
			return nil, fmt.Errorf("search: %w", err)
		}
	}

	var (
		wg                sync.WaitGroup
		qvec              []float32
		vres              driver.VectorResult
		verr, kerr        error
		kwHits            []driver.KeywordHit
		kwProbe           string
		plan              *rank.Plan         // ranking v2's analysed query
		asked             map[uuid.UUID]bool // keyword chunks whose similarity came with the vector search
		vectorCandidateNo = min(KeywordPoolSize, max(c.cfg.Search.VectorCandidates, 5*p.limit))
	)
	if p.ranking == RankingV2 && len(p.terms.Terms) == 0 {
		plan = rank.NewPlan(rank.Analyze(nil), rank.Stats{}, c.rankParams())
	}
	// With a SimilarityScorer the keyword pool is built without
	// similarities (the few that matter are fetched after fusion has
	// ordered the candidates, fusion.Unsettled), so it needs no query
	// vector and runs while the query is embedded: it starts when the
	// query-embedding caches have answered or missed (so it does not slow
	// the persisted cache's read), and beside the vector search otherwise.
	scorer := c.store
	kwDone := make(chan struct{})
	keyword := func(vec []float32) {
		defer wg.Done()
		defer close(kwDone)
		if p.ranking == RankingV2 {
			if plan, kerr = c.rankPlan(ctx, p.terms.Terms); kerr != nil {
				return
			}
		}
		kwHits, kwProbe, kerr = c.keywordPool(ctx, p.filter, p.terms.Terms, vec, plan)
	}
	startKeyword := func() {}
	if len(p.terms.Terms) > 0 {
		startKeyword = sync.OnceFunc(func() {
			wg.Add(1)
			go keyword(nil)
		})
	}
	if c.embedder == nil {
		startKeyword()
	}

	// Vector branch: embed the whole query (through the caches). A new
	// query embedding is written to the store's cache beside the vector
	// search.
	switch {
	case c.embedder == nil:
		resp.Degraded = append(resp.Degraded, Degradation{"vector", "no embedding provider is configured"})
	default:
		v, src, persist, err := c.embedQuery(ctx, req.Query, startKeyword)
		startKeyword()
		resp.Stats.QueryEmbedding = src
		switch {
		case err != nil && ctx.Err() != nil:
			wg.Wait()
			return nil, ctx.Err()
		case err != nil:
			c.log.Warn("search: query embedding failed; answering from keywords", "err", err)
			resp.Degraded = append(resp.Degraded, Degradation{"vector", "embedding provider failed: " + err.Error()})
		default:
			qvec = v
		}
		if persist != nil {
			wg.Add(1)
			go func() {
				defer wg.Done()
				persist(ctx)
			}()
		}
	}
	if qvec != nil {
		vq := driver.VectorQuery{Filter: p.filter, ModelID: c.modelID, Vector: qvec, Limit: vectorCandidateNo, Strategy: p.strategy}
		// When the keyword pool is ready (it was built while the provider
		// embedded the query), the similarities the first settling round
		// would fetch come with the vector search.
		select {
		case <-kwDone:
			if kerr == nil {
				vq.Also = topKeywordChunks(kwHits, p.limit, plan)
				asked = make(map[uuid.UUID]bool, len(vq.Also))
				for _, id := range vq.Also {
					asked[id] = true
				}
			}
		default:
		}
		vres, verr = c.store.VectorSearch(ctx, c.ws, vq)
	}
	wg.Wait()
	lazy := qvec != nil
	if kerr != nil {
		return nil, fmt.Errorf("search: keyword branch: %w", kerr)
	}
	if verr != nil {
		return nil, fmt.Errorf("search: vector branch: %w", verr)
	}
	if kwProbe != "" {
		resp.Stats.KeywordProbe = kwProbe
	}
	if plan != nil {
		// The statistics are the workspace's: an expansion is reported only
		// when a hit the caller may read holds it.
		tf, head := make([][]uint16, len(kwHits)), make([][]uint16, len(kwHits))
		for i, h := range kwHits {
			tf[i], head[i] = h.TF, h.HeadPos
		}
		if x := plan.Expansions(plan.Seen(tf, head)); len(x) > 0 {
			resp.Stats.Expansions = x
		}
	}
	resp.Stats.KeywordPool = len(kwHits)
	if qvec != nil {
		resp.Stats.VectorPlan = vres.Plan
		resp.Stats.VectorCandidates = len(vres.Hits)
	}

	vec := make([]fusion.VectorItem, len(vres.Hits))
	for i, h := range vres.Hits {
		vec[i] = fusion.VectorItem{ChunkID: h.ChunkID, EntityID: h.EntityID, Content: h.Content,
			Similarity: h.Similarity, UpdatedAt: h.UpdatedAt}
	}
	kw := make([]fusion.KeywordItem, len(kwHits))
	var feats []fusion.Features // one allocation for every hit's features
	if plan != nil {
		feats = make([]fusion.Features, len(kwHits))
	}
	for i, h := range kwHits {
		sim, pending := h.Similarity, lazy
		if lazy && asked[h.ChunkID] {
			pending = false // answered with the vector search; absent: no embedding
			if s, ok := vres.Similarities[h.ChunkID]; ok {
				sim = &s
			}
		}
		kw[i] = fusion.KeywordItem{ChunkID: h.ChunkID, EntityID: h.EntityID, Content: h.Content, Rank: h.Rank,
			Matched: bits.OnesCount32(h.Matched), Similarity: sim, SimilarityPending: pending, UpdatedAt: h.UpdatedAt}
		if plan != nil {
			feats[i] = fusion.Features{Length: h.Length, TF: h.TF, HeadPos: h.HeadPos, HeadLen: h.HeadLen,
				Type: string(h.Type), Tags: h.Tags}
			kw[i].Features = &feats[i]
			// Stores need not compute ts_rank_cd with features: the
			// keyword order of chunks is their BM25.
			kw[i].Rank = plan.ChunkScore(h.TF, h.Length)
		}
	}
	params := fusion.Params{
		Threshold: p.threshold, Terms: len(p.terms.Terms), RecencyWeight: req.RecencyWeight, Now: c.now(),
	}
	cands := fusion.Merge(vec, kw)
	unsettled := func(limit int) []int { return fusion.Unsettled(cands, params, limit) }
	var scored *rank.Scoring
	if plan != nil {
		scored = rank.Score(plan, cands, params)
		defer scored.Release()
		unsettled = scored.Unsettled
	}
	if lazy {
		if err := c.settleSimilarities(ctx, scorer, cands, unsettled, p.limit, qvec); err != nil {
			return nil, err
		}
	}
	var (
		fused []fusion.Result
		why   []*Explanation
	)
	if plan != nil {
		rs := scored.Fuse(p.limit)
		fused = make([]fusion.Result, len(rs))
		for i := range rs {
			fused[i] = rs[i].Result
		}
		if p.explain {
			why = make([]*Explanation, len(rs))
			for i := range rs {
				why[i] = explainV2(plan, &rs[i])
			}
		}
	} else {
		fused = fusion.Fuse(cands, params)
		if p.explain {
			why = make([]*Explanation, len(fused))
			for i := range fused {
				why[i] = explainSeed(&fused[i])
			}
		}
	}
	if len(fused) > p.limit {
		fused = fused[:p.limit]
	}
	if len(fused) == 0 {
		return resp, nil
	}

	var shown func(context.Context, []uuid.UUID) (map[uuid.UUID]float64, error)
	if lazy {
		shown = func(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]float64, error) {
			return scorer.ChunkSimilarities(ctx, c.ws, c.modelID, qvec, ids)
		}
	}
	if err := c.hydrate(ctx, resp, fused, why, p, shown); err != nil {
		return nil, err
	}
	return resp, nil
}

// rankPlan analyses the terms for ranking v2 and reads the workspace
// statistics of their lexemes and expansion candidates (one store call).
func (c *Client) rankPlan(ctx context.Context, terms []string) (*rank.Plan, error) {
	a, params := c.analyzer.Analyze(terms), c.rankParams()
	st, err := c.store.LexemeStats(ctx, c.ws, a.Lookups())
	if err != nil {
		return nil, fmt.Errorf("search: lexeme statistics: %w", err)
	}
	// Typo candidates only for the terms the workspace does not hold: a
	// second, rarer lookup.
	if more := a.TypoLookups(st.DF, params); len(more) > 0 {
		st2, err := c.store.LexemeStats(ctx, c.ws, more)
		if err != nil {
			return nil, fmt.Errorf("search: lexeme statistics: %w", err)
		}
		for l, n := range st2.DF {
			st.DF[l] = n
		}
	}
	return rank.NewPlan(a, rank.Stats{Chunks: st.Chunks, Length: st.Length, DF: st.DF}, params), nil
}

// rankParams returns ranking v2's weights.
func (c *Client) rankParams() rank.Params {
	if w := c.cfg.Search.Weights; w != nil {
		return w.params()
	}
	return rank.DefaultParams()
}

// explainSeed explains a seed-ranked result.
func explainSeed(r *fusion.Result) *Explanation {
	x := &Explanation{Ranking: RankingSeed, KeywordRank: r.KeywordRank, VectorRank: r.VectorRank, Matched: r.Matched}
	x.KeywordPart = fusion.RRF(0, r.KeywordRank)
	x.VectorPart = fusion.RRF(r.VectorRank, 0)
	return x
}

// explainV2 explains a result of ranking v2.
func explainV2(pl *rank.Plan, r *rank.Result) *Explanation {
	w := r.Why.VectorWeight
	x := &Explanation{Ranking: RankingV2, KeywordRank: r.KeywordRank, VectorRank: r.VectorRank,
		KeywordPart: (1 - w) * r.Why.KeywordShare, VectorPart: w * r.Why.Vector,
		BM25: r.Why.Body, MoreChunks: r.Why.MoreChunks, Head: r.Why.Head,
		KeywordShare: r.Why.KeywordShare, VectorShare: r.Why.Vector, Coverage: r.Why.Coverage, Chunks: r.Why.Chunks}
	for i, m := range r.Matched(pl) {
		x.Terms = append(x.Terms, TermMatch{Term: pl.Terms[i], Match: m})
	}
	return x
}

// settleSimilarities fetches the similarities fusion needs to fix the
// first limit results (see fusion.Unsettled). Each round fetches what
// would settle the first limit·2^round results, so a query whose top
// keyword candidates mostly prove ineligible (long queries, whose coverage
// rule few chunks pass) settles in two or three round trips; after a few
// rounds every pending similarity is fetched at once, which bounds them.
func (c *Client) settleSimilarities(ctx context.Context, scorer driver.SimilarityScorer, cands []fusion.Candidate,
	unsettled func(limit int) []int, limit int, qvec []float32) error {
	const maxRounds = 3
	for round := 0; ; round++ {
		need := unsettled(limit)
		if len(need) == 0 {
			return nil
		}
		if round > 0 {
			need = unsettled(limit << round)
		}
		if round == maxRounds {
			need = need[:0]
			for i := range cands {
				if cands[i].SimilarityPending {
					need = append(need, i)
				}
			}
		}
		ids := make([]uuid.UUID, len(need))
		for j, i := range need {
			ids[j] = cands[i].ChunkID
		}
		sims, err := scorer.ChunkSimilarities(ctx, c.ws, c.modelID, qvec, ids)
		if err != nil {
			return fmt.Errorf("search: keyword similarities: %w", err)
		}
		for _, i := range need {
			if sim, ok := sims[cands[i].ChunkID]; ok {
				cands[i].Similarity = &sim
			}
			cands[i].SimilarityPending = false
		}
	}
}

type searchPlan struct {
	ranking        RankingMode
	explain        bool
	terms          query.Terms
	filter         driver.EntityFilter
	limit          int
	threshold      float64
	strategy       Strategy
	includeContent bool
	expand         bool
}

func (c *Client) prepareSearch(req SearchRequest) (searchPlan, error) {
	var p searchPlan
	if !utf8.ValidString(req.Query) {
		return p, validate.Invalid("query", "must be valid UTF-8")
	}
	if strings.TrimSpace(req.Query) == "" {
		return p, validate.Invalid("query", "must not be empty or only whitespace")
	}
	if strings.IndexByte(req.Query, 0) >= 0 {
		return p, validate.Invalid("query", "must not contain NUL bytes")
	}
	if len(req.Query) > MaxQueryBytes {
		return p, validate.Invalid("query", "is %d bytes; the maximum is %d", len(req.Query), MaxQueryBytes)
	}
	switch {
	case req.Limit == 0:
		p.limit = c.cfg.Search.DefaultLimit
	case req.Limit < 0 || req.Limit > c.cfg.Search.MaxLimit:
		return p, validate.Invalid("limit", "must be between 1 and %d", c.cfg.Search.MaxLimit)
	default:
		p.limit = req.Limit
	}
	p.threshold = c.cfg.Search.DefaultThreshold
	if req.Threshold != nil {
		t := *req.Threshold
		if !(t >= 0 && t <= 1) {
			return p, validate.Invalid("threshold", "must be between 0 and 1")
		}
		p.threshold = t
	}
	if !(req.RecencyWeight >= 0 && req.RecencyWeight <= 1) {
		return p, validate.Invalid("recency_weight", "must be between 0 and 1")
	}
	switch req.Strategy {
	case "", StrategyAuto:
		p.strategy = StrategyAuto
	case StrategyExact, StrategyHNSW:
		p.strategy = req.Strategy
	default:
		return p, validate.Invalid("strategy", "%q is not one of auto, exact, hnsw", validate.Truncate(string(req.Strategy), 40))
	}
	p.ranking = c.cfg.Search.Ranking
	if req.Ranking != "" {
		if !req.Ranking.Valid() {
			return p, validate.Invalid("ranking", "%q is not one of seed, v2", validate.Truncate(string(req.Ranking), 40))
		}
		p.ranking = req.Ranking
	}
	p.explain = req.Explain
	f, err := buildFilter(req.Types, nil, req.Visibilities, req.Owner, req.Tags, req.MemoryRole, req.IncludeArchived)
	if err != nil {
		return p, err
	}
	p.filter = f
	p.terms = query.Parse(req.Query)
	p.includeContent = req.IncludeContent == nil || *req.IncludeContent
	p.expand = req.ExpandGraph
	return p, nil
}

// keywordPool builds the keyword candidate pool (DESIGN.md §4): the full
// conjunction first; if it fills the pool it is the pool. Otherwise an OR
// probe capped at pool+1: a union that fits is the pool. Otherwise
// per-term probes fill the pool after the conjunction hits, rarest and
// compound terms first.
//
// With a ranking-v2 plan, terms also match by their alternatives
// (inflections, typos), hits carry their features, and the per-term steps
// take terms in order of the plan's exact document frequencies.
func (c *Client) keywordPool(ctx context.Context, f driver.EntityFilter, terms []string, vec []float32, plan *rank.Plan) ([]driver.KeywordHit, string, error) {
	var alts [][]string
	if plan != nil {
		alts = plan.Alternatives
	}
	// Probes return scored hits (rank, term mask, similarity when the store
	// computes it eagerly), so a pool found by the conjunction, the OR
	// probe or rarity-ordered term probes is ready as found. Only the
	// fallback without statistics probes every term bare (ids only) and
	// then scores the pool it chose in one probe restricted to it.
	full := func(q driver.KeywordQuery) ([]driver.KeywordHit, error) {
		q.Filter, q.Terms, q.Vector, q.ModelID = f, terms, vec, c.modelID
		q.Alternatives, q.Features = alts, plan != nil
		return c.store.KeywordProbe(ctx, c.ws, q)
	}
	probe := func(mode driver.ProbeMode, term, limit int) ([]driver.KeywordHit, error) {
		return c.store.KeywordProbe(ctx, c.ws, driver.KeywordQuery{Filter: f, Terms: terms, Mode: mode, Term: term,
			Limit: limit, Bare: true, Alternatives: alts})
	}
	score := func(pool []driver.KeywordHit, how string) ([]driver.KeywordHit, string, error) {
		if len(pool) == 0 {
			return nil, how, nil
		}
		ids := make([]uuid.UUID, len(pool))
		for i, h := range pool {
			ids[i] = h.ChunkID
		}
		hits, err := full(driver.KeywordQuery{Mode: driver.ProbeAny, Limit: len(ids), Only: ids})
		return hits, how, err
	}
	filler, canFill := c.store, vec == nil
	if len(terms) == 1 {
		if canFill && plan != nil && plan.Params.HeadCandidates > 0 {
			// Ranking v2 also takes the entities whose head (name) alone
			// holds the term.
			res, err := filler.KeywordFill(ctx, c.ws, driver.KeywordFillQuery{Filter: f, Terms: terms, Order: []int{0},
				Limit: KeywordPoolSize, Alternatives: alts, Features: true, Heads: plan.Params.HeadCandidates,
				HeadTerms: plan.HeadTerms([]int{0}), ScanTerms: plan.ScanTerms([]int{0}, KeywordPoolSize)})
			if err != nil {
				return nil, "", err
			}
			return res.Hits, "and", nil
		}
		all, err := full(driver.KeywordQuery{Mode: driver.ProbeAll, Limit: KeywordPoolSize})
		return all, "and", err
	}
	// Terms in order of preference for the per-term steps: compound terms,
	// then rarer ones (estimated by the store when it can), then as given.
	order := make([]termInfo, len(terms))
	for i := range terms {
		order[i] = termInfo{i: i, compound: isCompound(terms[i])}
	}
	haveStats := false
	rankTerms := func() error {
		if plan != nil {
			haveStats = true
			for i := range order {
				order[i].rarity = float64(plan.TermDF(order[i].i))
			}
			slices.SortStableFunc(order, preferTerm)
			return nil
		}
		freqs, ok, err := c.store.TermFrequencies(ctx, c.ws, terms)
		if err != nil || !ok {
			return err
		}
		haveStats = true
		for i := range order {
			order[i].rarity = freqs[i]
		}
		slices.SortStableFunc(order, preferTerm)
		return nil
	}
	if canFill {
		if err := rankTerms(); err != nil {
			return nil, "", err
		}
	}
	// A union that fits in the pool is exactly what the per-term steps
	// collect when none of them fills it, so a store that runs every step
	// in one call needs no OR probe: the steps it never reaches cost
	// nothing.
	if canFill && haveStats {
		idx := make([]int, len(order))
		for i, t := range order {
			idx[i] = t.i
		}
		q := driver.KeywordFillQuery{Filter: f, Terms: terms, Order: idx, Limit: KeywordPoolSize, Alternatives: alts}
		if plan != nil {
			q.Features, q.Heads, q.HeadTerms = true, plan.Params.HeadCandidates, plan.HeadTerms(idx)
			q.ScanTerms = plan.ScanTerms(idx, KeywordPoolSize)
		}
		res, err := filler.KeywordFill(ctx, c.ws, q)
		switch {
		case err != nil:
			return nil, "", err
		case res.Conjunction >= KeywordPoolSize:
			return res.Hits, "and", nil
		case len(res.Hits) < KeywordPoolSize:
			return res.Hits, "or", nil
		}
		return res.Hits, "per_term", nil
	}
	// The conjunction rarely fills the pool, so the capped OR probe runs
	// beside it rather than after it: one round trip of latency, not two.
	var (
		union    []driver.KeywordHit
		unionErr error
		wg       sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		union, unionErr = full(driver.KeywordQuery{Mode: driver.ProbeAny, Limit: KeywordPoolSize + 1})
	}()
	all, err := full(driver.KeywordQuery{Mode: driver.ProbeAll, Limit: KeywordPoolSize})
	wg.Wait()
	if err != nil {
		return nil, "", err
	}
	if len(all) >= KeywordPoolSize {
		return all, "and", nil
	}
	if unionErr != nil {
		return nil, "", unionErr
	}
	if len(union) <= KeywordPoolSize {
		return union, "or", nil
	}
	// Per-term fallback: the conjunction hits first, then terms in order
	// of preference, until the pool is full.
	pool := make([]driver.KeywordHit, 0, KeywordPoolSize)
	seen := make(map[uuid.UUID]bool, KeywordPoolSize)
	add := func(hs []driver.KeywordHit) {
		for _, h := range hs {
			if len(pool) < KeywordPoolSize && !seen[h.ChunkID] {
				seen[h.ChunkID] = true
				pool = append(pool, h)
			}
		}
	}
	add(all)
	if !canFill {
		if err := rankTerms(); err != nil {
			return nil, "", err
		}
	}
	if haveStats {
		// Estimated rarity: probe only as many terms as the pool needs.
		for _, t := range order {
			if len(pool) >= KeywordPoolSize {
				break
			}
			exclude := make([]uuid.UUID, 0, len(pool))
			for _, h := range pool {
				exclude = append(exclude, h.ChunkID)
			}
			hits, err := full(driver.KeywordQuery{Mode: driver.ProbeTerm, Term: t.i, Limit: KeywordPoolSize - len(pool), Exclude: exclude})
			if err != nil {
				return nil, "", err
			}
			add(hits)
		}
		return pool, "per_term", nil
	}
	// Exact rarity: probe every term (capped), then fill.
	per := make([][]driver.KeywordHit, len(terms))
	errs := make([]error, len(terms))
	sem := make(chan struct{}, 4)
	for i := range terms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			per[i], errs[i] = probe(driver.ProbeTerm, i, KeywordPoolSize+1)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, "", err
	}
	for i := range order {
		order[i].rarity = float64(len(per[order[i].i]))
	}
	slices.SortStableFunc(order, preferTerm)
	for _, t := range order {
		add(per[t.i])
	}
	return score(pool, "per_term")
}

// topKeywordChunks returns the n best-ranked chunks of a keyword pool (in
// fusion's keyword order; with a ranking-v2 plan, by BM25): the ones whose
// similarity fusion most likely needs first.
func topKeywordChunks(hits []driver.KeywordHit, n int, plan *rank.Plan) []uuid.UUID {
	rankOf := make([]float64, len(hits))
	order := make([]int, len(hits))
	for i, h := range hits {
		order[i], rankOf[i] = i, h.Rank
		if plan != nil {
			rankOf[i] = plan.ChunkScore(h.TF, h.Length)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		return fusion.KeywordOrder(rankOf[a], hits[a].ChunkID, rankOf[b], hits[b].ChunkID)
	})
	out := make([]uuid.UUID, 0, min(n, len(hits)))
	for _, i := range order[:min(n, len(hits))] {
		out = append(out, hits[i].ChunkID)
	}
	return out
}

// termInfo is a keyword term's place in the per-term order.
type termInfo struct {
	i        int
	compound bool
	rarity   float64 // lower is rarer
}

// preferTerm orders per-term steps: compound terms, then rarer ones, then
// as given.
func preferTerm(a, b termInfo) int {
	if a.compound != b.compound {
		if a.compound {
			return -1
		}
		return 1
	}
	switch {
	case a.rarity < b.rarity:
		return -1
	case a.rarity > b.rarity:
		return 1
	}
	return a.i - b.i
}

// isCompound reports whether a term joins several words (ABC-1234, e-mail,
// foo.bar): such terms are specific, so the per-term fallback prefers them.
func isCompound(term string) bool {
	words, inWord := 0, false
	for _, r := range term {
		w := unicode.IsLetter(r) || unicode.IsDigit(r)
		if w && !inWord {
			words++
		}
		inWord = w
	}
	return words > 1
}

// hydrate loads the fused results' entities, edge summaries and (when
// asked) neighbours into resp.
func (c *Client) hydrate(ctx context.Context, resp *SearchResponse, fused []fusion.Result, why []*Explanation, p searchPlan,
	shown func(context.Context, []uuid.UUID) (map[uuid.UUID]float64, error)) error {
	ids := make([]uuid.UUID, len(fused))
	var pending []uuid.UUID // results eligible by coverage whose similarity is only shown
	for i, r := range fused {
		ids[i] = r.EntityID
		if r.SimilarityPending {
			pending = append(pending, r.ChunkID)
		}
	}
	// The entities, their edge summaries and the similarities still to
	// show are independent reads.
	var (
		edges           map[uuid.UUID]EdgeSummary
		sims            map[uuid.UUID]float64
		edgeErr, simErr error
		wg              sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		edges, edgeErr = c.store.EdgeSummaries(ctx, c.ws, ids, p.filter)
	}()
	if len(pending) > 0 && shown != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sims, simErr = shown(ctx, pending)
		}()
	}
	ents, err := c.store.GetEntities(ctx, c.ws, ids)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("search: load results: %w", err)
	}
	if edgeErr != nil {
		return fmt.Errorf("search: edge summaries: %w", edgeErr)
	}
	if simErr != nil {
		return fmt.Errorf("search: keyword similarities: %w", simErr)
	}
	for i := range fused {
		if fused[i].SimilarityPending {
			if sim, ok := sims[fused[i].ChunkID]; ok {
				fused[i].Similarity = &sim
			}
			fused[i].SimilarityPending = false
		}
	}
	byID := make(map[uuid.UUID]*Entity, len(ents))
	for _, e := range ents {
		if c.canSee(e) {
			byID[e.ID] = e
		}
	}
	var related map[uuid.UUID][]Related
	if p.expand {
		ns, err := c.store.Neighbors(ctx, c.ws, ids, p.filter)
		if err != nil {
			return fmt.Errorf("search: expand graph: %w", err)
		}
		related = make(map[uuid.UUID][]Related)
		for _, n := range ns {
			if !c.canSee(n.Entity) {
				continue
			}
			if !p.includeContent {
				n.Entity.Content = ""
			}
			related[n.SeedID] = append(related[n.SeedID], Related{Entity: n.Entity, Relation: n.Relation, Direction: n.Direction})
		}
	}
	for i, r := range fused {
		e, ok := byID[r.EntityID]
		if !ok {
			continue // deleted or hidden since the candidates were read
		}
		res := SearchResult{
			Entity: e, ChunkContent: r.Content, Similarity: r.Similarity, Score: r.Score,
			RecencyScore: r.Adjusted, VectorRank: r.VectorRank, KeywordRank: r.KeywordRank,
			Section: sectionOf(e.Content, r.Content),
		}
		if !p.includeContent {
			e.Content = ""
		}
		if s, ok := edges[r.EntityID]; ok && s.Count > 0 {
			s := s
			res.Edges = &s
		}
		if related != nil {
			res.Related = related[r.EntityID]
		}
		if why != nil {
			res.Explain = why[i]
		}
		resp.Results = append(resp.Results, res)
	}
	return nil
}
