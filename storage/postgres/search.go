package postgres

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/query"
	"github.com/postgram-go/postgram/internal/tsrank"
)

// sqlArgs accumulates positional arguments.
type sqlArgs []any

func (a *sqlArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// termQueries renders one tsquery per term as scalar subqueries, which
// PostgreSQL evaluates once per statement (InitPlans), so they can drive the
// GIN index and are not re-parsed per row.
func termQueries(terms []string, args *sqlArgs) []string {
	return termQueriesAlt(terms, nil, args)
}

// termQueriesAlt is termQueries where a term with alternatives (alts[i],
// alternativesQuery's text; nil for none) also matches any one of them.
func termQueriesAlt(terms, alts []string, args *sqlArgs) []string {
	qs := make([]string, len(terms))
	for i, t := range terms {
		qs[i] = "plainto_tsquery('simple', " + args.add(t) + ")"
		if i < len(alts) && alts[i] != "" {
			qs[i] = "(" + qs[i] + " || " + args.add(alts[i]) + "::tsquery)"
		}
	}
	return qs
}

func joinQueries(qs []string, op string) string {
	if len(qs) == 0 {
		return "''::tsquery"
	}
	return "(SELECT " + strings.Join(qs, " "+op+" ") + ")"
}

// termLexemes returns each term's lexemes as PostgreSQL's 'simple'
// configuration produces them (what plainto_tsquery ANDs), from a cache:
// they depend only on the text.
func (s *Store) termLexemes(ctx context.Context, terms []string) ([][]string, error) {
	if len(terms) == 0 {
		return nil, nil
	}
	out := make([][]string, len(terms))
	var missing []string
	s.lexemes.mu.Lock()
	for i, t := range terms {
		if isASCII(t) {
			// PostgreSQL's parser classifies ASCII the same in every
			// locale, so the Go port (query.Lexemes, tested against the
			// server) is exact here and costs no round trip.
			out[i] = query.Lexemes(t)
			continue
		}
		l, ok := s.lexemes.m[t]
		if !ok {
			missing = append(missing, t)
		}
		out[i] = l
	}
	s.lexemes.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT u.t, COALESCE(tsvector_to_array(to_tsvector('simple', u.t)), '{}')
		FROM unnest($1::text[]) AS u(t)`, missing)
	if err != nil {
		return nil, fmt.Errorf("term lexemes: %w", mapErr(err))
	}
	got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (lexemeRow, error) {
		var x lexemeRow
		err := r.Scan(&x.term, &x.lexemes)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("term lexemes: %w", mapErr(err))
	}
	s.lexemes.mu.Lock()
	if s.lexemes.m == nil || len(s.lexemes.m)+len(got) > lexemeCacheMax {
		s.lexemes.m = make(map[string][]string, len(got))
	}
	for _, x := range got {
		s.lexemes.m[x.term] = x.lexemes
	}
	for i, t := range terms {
		if out[i] == nil && !isASCII(t) {
			out[i] = s.lexemes.m[t]
		}
	}
	s.lexemes.mu.Unlock()
	return out, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

type lexemeRow struct {
	term    string
	lexemes []string
}

// lexemeCacheMax bounds the cached terms; the cache starts afresh when full.
const lexemeCacheMax = 50_000

// lexemeCache maps a term to its lexemes.
type lexemeCache struct {
	mu sync.Mutex
	m  map[string][]string
}

const chunkJoin = `chunks c JOIN entities e ON e.workspace_id = c.workspace_id AND e.id = c.entity_id`

// VectorSearch implements driver.Storage.
func (s *Store) VectorSearch(ctx context.Context, ws string, q driver.VectorQuery) (driver.VectorResult, error) {
	ctx = withWS(ctx, ws)
	if s.mem != nil {
		m, err := s.model(ctx, q.ModelID)
		if err != nil {
			return driver.VectorResult{}, err
		}
		if len(q.Vector) != m.Dimensions {
			return driver.VectorResult{}, fmt.Errorf("postgres: vector search: query has %d dimensions, model %s has %d: %w",
				len(q.Vector), m.Name, m.Dimensions, driver.ErrInvalidArgument)
		}
		if res, ok, err := s.memVectorSearch(ctx, ws, q); ok {
			return res, err
		}
	}
	var res driver.VectorResult
	err := s.read(ctx, ws, func(r reader) error {
		var err error
		res, err = s.vectorSearch(withReader(ctx, r), ws, q)
		return err
	})
	return res, err
}

func (s *Store) vectorSearch(ctx context.Context, ws string, q driver.VectorQuery) (driver.VectorResult, error) {
	m, err := s.model(ctx, q.ModelID)
	if err != nil {
		return driver.VectorResult{}, err
	}
	if len(q.Vector) != m.Dimensions {
		return driver.VectorResult{}, fmt.Errorf("postgres: vector search: query has %d dimensions, model %s has %d: %w",
			len(q.Vector), m.Name, m.Dimensions, driver.ErrInvalidArgument)
	}
	strategy := q.Strategy
	if m.Dimensions > s.indexedDims() {
		strategy = driver.StrategyExact
	}
	if strategy == "" || strategy == driver.StrategyAuto {
		n, err := s.candidateCount(ctx, ws, q, s.cfg.ExactThreshold+1)
		if err != nil {
			return driver.VectorResult{}, err
		}
		if n <= s.cfg.ExactThreshold {
			strategy = driver.StrategyExact
		} else {
			strategy = driver.StrategyHNSW
		}
	}
	if strategy == driver.StrategyExact {
		hits, sims, err := s.vectorQuery(ctx, ws, q, m.Dimensions, false)
		return driver.VectorResult{Hits: hits, Plan: "exact", Similarities: sims}, err
	}
	if !broadFilter(q.Filter) {
		// A filter may admit fewer chunks than the ANN scan is asked for;
		// then the scan would walk max_scan_tuples of the graph in vain
		// before the exact fallback. Counting (capped) first is cheap and
		// goes straight to the fallback.
		n, err := s.countCandidates(ctx, ws, q, q.Limit)
		if err != nil {
			return driver.VectorResult{}, err
		}
		if n < q.Limit {
			hits, sims, err := s.vectorQuery(ctx, ws, q, m.Dimensions, false)
			return driver.VectorResult{Hits: hits, Plan: "hnsw+exact", Similarities: sims}, err
		}
	}
	hits, sims, err := s.vectorQuery(ctx, ws, q, m.Dimensions, true)
	if err != nil {
		return driver.VectorResult{}, err
	}
	if len(hits) >= q.Limit {
		return driver.VectorResult{Hits: hits, Plan: "hnsw", Similarities: sims}, nil
	}
	// The ANN scan could not fill its target (a narrow filter, or
	// max_scan_tuples reached): rank exactly rather than return fewer
	// results than exist. The similarities asked for came with the scan.
	q.Also = nil
	hits, _, err = s.vectorQuery(ctx, ws, q, m.Dimensions, false)
	return driver.VectorResult{Hits: hits, Plan: "hnsw+exact", Similarities: sims}, err
}

// candidateCount counts (up to cap) the chunks a vector query may rank.
// Broad filters (only archived rows and other clients' session context
// excluded) reuse a per-workspace count for countTTL, so most searches pay
// no extra query.
func (s *Store) candidateCount(ctx context.Context, ws string, q driver.VectorQuery, cap int) (int, error) {
	ctx = withWS(ctx, ws)
	if !broadFilter(q.Filter) {
		return s.countCandidates(ctx, ws, q, cap)
	}
	key := fmt.Sprintf("%s\x00%d", ws, q.ModelID)
	s.mu.RLock()
	c, ok := s.counts[key]
	s.mu.RUnlock()
	if ok && time.Since(c.at) < countTTL {
		return c.n, nil
	}
	n, err := s.countCandidates(ctx, ws, driver.VectorQuery{ModelID: q.ModelID, Filter: driver.EntityFilter{IncludeArchived: true}}, cap)
	if err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.counts[key] = countEntry{n: n, at: time.Now()}
	s.mu.Unlock()
	return n, nil
}

// broadFilter reports whether f excludes only archived rows and other
// clients' session context: nearly every chunk qualifies.
func broadFilter(f driver.EntityFilter) bool {
	return len(f.Types) == 0 && len(f.Statuses) == 0 && len(f.Visibilities) == 0 && f.Owner == "" &&
		len(f.Tags) == 0 && f.MemoryRole == "" && f.UpdatedBefore.IsZero() && f.UpdatedAfter.IsZero()
}

// countTTL bounds how stale a cached broad candidate count may be.
const countTTL = 30 * time.Second

type countEntry struct {
	n  int
	at time.Time
}

func (s *Store) countCandidates(ctx context.Context, ws string, q driver.VectorQuery, cap int) (int, error) {
	ctx = withWS(ctx, ws)
	args := sqlArgs{ws}
	where := filterSQL(q.Filter, (*[]any)(&args))
	sql := fmt.Sprintf(`SELECT count(*) FROM (SELECT 1 FROM %s WHERE c.workspace_id = $1 AND c.model_id = %d AND %s LIMIT %d) x`,
		chunkJoin, q.ModelID, where, cap)
	var n int
	if err := s.rd(ctx).pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count vector candidates: %w", mapErr(err))
	}
	return n, nil
}

// vectorSQL builds the vector query; its columns are id, entity_id,
// content, similarity and updated_at. With ann the ORDER BY matches the model's HNSW
// expression index (iterative scan, relaxed order: the caller re-sorts);
// the scan reads few rows, so they carry everything. Without it the order
// is an expression no index provides, so PostgreSQL ranks every filtered
// chunk exactly: that inner query carries only ids and distances, and
// content is read for the chosen rows only.
func (s *Store) vectorSQL(ws string, q driver.VectorQuery, dims int, ann bool) (string, sqlArgs) {
	args := sqlArgs{ws}
	vec := args.add(pgvector.NewVector(q.Vector))
	where := filterSQL(q.Filter, (*[]any)(&args))
	if ann && s.cfg.VectorIndex == VectorIndexBinary {
		// The index yields the RerankCandidates chunks nearest in Hamming
		// distance between the vectors' signs; their full vectors rank
		// them by cosine, and content is read for the chosen rows only.
		return fmt.Sprintf(`SELECT r.id, r.entity_id, ch.content, 1 - r.dist, r.updated_at FROM (
			SELECT x.id, x.entity_id, x.updated_at, x.emb <=> %[2]s::vector(%[1]d) AS dist FROM (
				SELECT c.id, c.entity_id, e.updated_at, c.embedding::vector(%[1]d) AS emb
				FROM %[3]s
				WHERE c.workspace_id = $1 AND c.model_id = %[4]d AND c.embedding IS NOT NULL AND %[5]s
				ORDER BY binary_quantize(c.embedding::vector(%[1]d))::bit(%[1]d) <~> binary_quantize(%[2]s::vector(%[1]d))
				LIMIT %[6]d
			) x ORDER BY dist, x.id LIMIT %[7]d
		) r JOIN chunks ch ON ch.workspace_id = $1 AND ch.id = r.id
		ORDER BY r.dist, r.id`, dims, vec, chunkJoin, q.ModelID, where, max(q.Limit, s.cfg.RerankCandidates), q.Limit), args
	}
	if ann {
		// The distance is selected as the ordering expression itself, so
		// each row's vector is read (detoasted) once, not once for the
		// index order and again for the output.
		return fmt.Sprintf(`SELECT c.id, c.entity_id, c.content, 1 - (c.embedding::vector(%d) <=> %s::vector(%d)) AS sim, e.updated_at
		FROM %s
		WHERE c.workspace_id = $1 AND c.model_id = %d AND c.embedding IS NOT NULL AND %s
		ORDER BY c.embedding::vector(%d) <=> %s::vector(%d) LIMIT %d`,
			dims, vec, dims, chunkJoin, q.ModelID, where, dims, vec, dims, q.Limit), args
	}
	// OFFSET 0 keeps the distance computation below the sort, so the sort
	// carries ids and distances, not whole rows. The typmod cast is needed
	// only to match the HNSW index expression; here it would cost a copy of
	// every vector, so distances are computed on the plain column (all rows
	// of one model share its dimensions).
	inner := fmt.Sprintf(`SELECT * FROM (
			SELECT c.id, c.entity_id, e.updated_at, (c.embedding <=> %s::vector) AS dist
			FROM %s
			WHERE c.workspace_id = $1 AND c.model_id = %d AND c.embedding IS NOT NULL AND %s
			OFFSET 0
		) x ORDER BY dist, id LIMIT %d`, vec, chunkJoin, q.ModelID, where, q.Limit)
	return fmt.Sprintf(`SELECT r.id, r.entity_id, ch.content, 1 - r.dist, r.updated_at FROM (%s) r
	JOIN chunks ch ON ch.workspace_id = $1 AND ch.id = r.id
	ORDER BY r.dist, r.id`, inner), args
}

// annSettings make the planner walk the HNSW index: its cost model cannot
// see that a sequential scan must read every embedding, so on small and
// medium tables it would rank exactly instead.
const annSettings = "SET LOCAL enable_seqscan = off; SET LOCAL enable_bitmapscan = off; SET LOCAL enable_sort = off; SET LOCAL jit = off"

// annSessionSettings are annSettings for a whole connection of the ANN pool.
const annSessionSettings = "SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off; SET jit = off"

// vectorQuery runs the vector query and, in the same round trip, the
// similarity of the chunks of q.Also (nil when there are none).
func (s *Store) vectorQuery(ctx context.Context, ws string, q driver.VectorQuery, dims int, ann bool) ([]driver.VectorHit, map[uuid.UUID]float64, error) {
	ctx = withWS(ctx, ws)
	sql, args := s.vectorSQL(ws, q, dims, ann)
	hits := make([]driver.VectorHit, 0, q.Limit)
	var sims map[uuid.UUID]float64
	run := func(conn interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	}) error {
		batch := &pgx.Batch{}
		batch.Queue(sql, args...)
		if len(q.Also) > 0 {
			batch.Queue(chunkSimilaritiesSQL, ws, q.Also, pgvector.NewVector(q.Vector), q.ModelID)
		}
		br := conn.SendBatch(ctx, batch)
		defer br.Close()
		rows, err := br.Query()
		if err != nil {
			return err
		}
		for rows.Next() {
			var h driver.VectorHit
			if err := rows.Scan(&h.ChunkID, &h.EntityID, &h.Content, &h.Similarity, &h.UpdatedAt); err != nil {
				rows.Close()
				return err
			}
			h.UpdatedAt = h.UpdatedAt.UTC()
			hits = append(hits, h)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(q.Also) > 0 {
			rows, err := br.Query()
			if err != nil {
				return err
			}
			if sims, err = scanSimilarities(rows, len(q.Also)); err != nil {
				return err
			}
		}
		return br.Close()
	}
	var err error
	rd := s.rd(ctx)
	switch {
	case ann && rd.ann != nil:
		err = run(rd.ann)
	case ann:
		err = pgx.BeginFunc(ctx, rd.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, annSettings+fmt.Sprintf("; SET LOCAL hnsw.ef_search = %d", s.cfg.efSearch())); err != nil {
				return err
			}
			return run(tx)
		})
	default:
		err = run(rd.pool)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: vector search: %w", mapErr(err))
	}
	if ann {
		// The relaxed iterative scan returns rows nearly in order.
		slices.SortFunc(hits, func(a, b driver.VectorHit) int {
			switch {
			case a.Similarity > b.Similarity:
				return -1
			case a.Similarity < b.Similarity:
				return 1
			}
			return bytes.Compare(a.ChunkID[:], b.ChunkID[:])
		})
	}
	return hits, sims, nil
}

// ExplainVector returns EXPLAIN (ANALYZE, BUFFERS) output for the vector
// query q would run with the given plan ("exact" or "hnsw"). For benchmarks
// and operators.
func (s *Store) ExplainVector(ctx context.Context, ws string, q driver.VectorQuery, plan string) (string, error) {
	ctx = withWS(ctx, ws)
	m, err := s.model(ctx, q.ModelID)
	if err != nil {
		return "", err
	}
	sql, args := s.vectorSQL(ws, q, m.Dimensions, plan == "hnsw")
	settings := ""
	if plan == "hnsw" {
		settings = annSettings
	}
	return s.explain(ctx, sql, args, settings)
}

// ExplainKeyword returns EXPLAIN (ANALYZE, BUFFERS) output for a keyword probe.
func (s *Store) ExplainKeyword(ctx context.Context, ws string, q driver.KeywordQuery) (string, error) {
	ctx = withWS(ctx, ws)
	sql, args, err := s.keywordSQL(ctx, ws, q)
	if err != nil {
		return "", err
	}
	return s.explain(ctx, sql, args, "")
}

// ExplainKeywordFill returns EXPLAIN (ANALYZE, BUFFERS) output for the
// statement KeywordFill runs.
func (s *Store) ExplainKeywordFill(ctx context.Context, ws string, q driver.KeywordFillQuery) (string, error) {
	ctx = withWS(ctx, ws)
	sql, args, err := keywordFillSQL(ws, q)
	if err != nil {
		return "", err
	}
	return s.explain(ctx, sql, args, "")
}

func (s *Store) explain(ctx context.Context, sql string, args sqlArgs, settings string) (string, error) {
	var b strings.Builder
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if settings != "" {
			if _, err := tx.Exec(ctx, settings); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) "+sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				return err
			}
			b.WriteString(line)
			b.WriteByte('\n')
		}
		return rows.Err()
	})
	return b.String(), mapErr(err)
}

func (s *Store) keywordSQL(ctx context.Context, ws string, q driver.KeywordQuery) (string, sqlArgs, error) {
	ctx = withWS(ctx, ws)
	if len(q.Terms) == 0 || len(q.Terms) > 32 {
		return "", nil, fmt.Errorf("postgres: keyword probe: need 1 to 32 terms, got %d", len(q.Terms))
	}
	args := sqlArgs{ws}
	where := filterSQL(q.Filter, (*[]any)(&args))
	// Only referenced terms become parameters: PostgreSQL cannot type an
	// unused one. Ranks and term masks are computed in Go (see cols), so
	// the terms serve only to find chunks.
	var match string
	alts := termAlternatives(len(q.Terms), q.Alternatives)
	switch {
	case len(q.Only) > 0 && q.Mode == driver.ProbeAny:
		// Scoring a pool: its chunks came from probes of these terms, so
		// the primary key finds them without the text index.
		match = "TRUE"
	case q.Mode == driver.ProbeAll:
		match = "c.tsv @@ " + joinQueries(termQueriesAlt(q.Terms, alts, &args), "&&")
	case q.Mode == driver.ProbeAny:
		match = "c.tsv @@ " + joinQueries(termQueriesAlt(q.Terms, alts, &args), "||")
	case q.Mode == driver.ProbeTerm:
		if q.Term < 0 || q.Term >= len(q.Terms) {
			return "", nil, fmt.Errorf("postgres: keyword probe: term %d out of range", q.Term)
		}
		var alt []string
		if alts != nil {
			alt = alts[q.Term : q.Term+1]
		}
		match = "c.tsv @@ (SELECT " + termQueriesAlt(q.Terms[q.Term:q.Term+1], alt, &args)[0] + ")"
	default:
		return "", nil, fmt.Errorf("postgres: keyword probe: unknown mode %d", q.Mode)
	}
	sim := "NULL::float8"
	if len(q.Vector) > 0 {
		m, err := s.model(ctx, q.ModelID)
		if err != nil {
			return "", nil, err
		}
		if len(q.Vector) == m.Dimensions {
			v := args.add(pgvector.NewVector(q.Vector))
			sim = fmt.Sprintf("CASE WHEN c.model_id = %d AND c.embedding IS NOT NULL THEN 1 - (c.embedding <=> %s::vector) END",
				q.ModelID, v)
		}
	}
	excl := ""
	if len(q.Exclude) > 0 {
		excl = " AND NOT (c.id = ANY(" + args.add(q.Exclude) + "::uuid[]))"
	}
	if len(q.Only) > 0 {
		excl += " AND c.id = ANY(" + args.add(q.Only) + "::uuid[])"
	}
	// The chunk's tsvector comes back (binary): its rank (ts_rank_cd) and
	// term mask are computed in Go by tsrank, which costs PostgreSQL nothing
	// and ranks exactly as ts_rank_cd does (see TestRankMatchesPostgreSQL).
	cols := fmt.Sprintf("c.id, c.entity_id, c.content, e.updated_at, c.tsv, %s", sim)
	if q.Features {
		cols += ", e.head, e.type, e.tags"
	}
	if q.Bare {
		cols = "c.id, c.entity_id"
	}
	sql := fmt.Sprintf(`SELECT %s
		FROM %s
		WHERE c.workspace_id = $1 AND %s AND %s%s
		LIMIT %d`, cols, chunkJoin, match, where, excl, q.Limit)
	return sql, args, nil
}

// KeywordProbe implements driver.Storage.
func (s *Store) KeywordProbe(ctx context.Context, ws string, q driver.KeywordQuery) ([]driver.KeywordHit, error) {
	if s.mem != nil {
		if hits, ok, err := s.memKeywordProbe(withWS(ctx, ws), ws, q); ok {
			return hits, err
		}
	}
	return readVal(s, withWS(ctx, ws), ws, func(ctx context.Context) ([]driver.KeywordHit, error) { return s.keywordProbe(ctx, ws, q) })
}

func (s *Store) keywordProbe(ctx context.Context, ws string, q driver.KeywordQuery) ([]driver.KeywordHit, error) {
	ctx = withWS(ctx, ws)
	sql, args, err := s.keywordSQL(ctx, ws, q)
	if err != nil {
		return nil, err
	}
	var tq *tsrank.Query
	var feats *hitFeatures
	if !q.Bare {
		termLex, err := s.termLexemes(ctx, q.Terms)
		if err != nil {
			return nil, fmt.Errorf("postgres: keyword probe: %w", err)
		}
		tq = tsrank.CompileWith(termLex, q.Alternatives)
		if q.Features {
			feats = newHitFeatures(tq, q.Limit)
		}
	}
	qargs := []any(args)
	if !q.Bare {
		// Every column in binary, the tsvectors included (pgx knows no
		// tsvector type, so it would otherwise ask for text).
		n := 6
		if feats != nil {
			n = 9
		}
		qargs = append([]any{allBinary[:n]}, qargs...)
	}
	rows, err := s.rd(ctx).pool.Query(ctx, sql, qargs...)
	if err != nil {
		return nil, fmt.Errorf("postgres: keyword probe: %w", mapErr(err))
	}
	defer rows.Close()
	var hits []driver.KeywordHit
	var doc tsrank.Doc
	for rows.Next() {
		var h driver.KeywordHit
		if q.Bare {
			if err := rows.Scan(&h.ChunkID, &h.EntityID); err != nil {
				return nil, fmt.Errorf("postgres: keyword probe: %w", err)
			}
			hits = append(hits, h)
			continue
		}
		var updated time.Time
		var typ string
		var tags []string
		// pgx has no tsvector type: the column is read raw (nil skips it).
		dst := []any{&h.ChunkID, &h.EntityID, &h.Content, &updated, nil, &h.Similarity}
		if feats != nil {
			dst = append(dst, nil, &typ, &tags)
		}
		if err := rows.Scan(dst...); err != nil {
			return nil, fmt.Errorf("postgres: keyword probe: %w", err)
		}
		raw := rows.RawValues()
		if err := scoreHit(&h, raw[4], updated, tq, &doc, feats); err != nil {
			return nil, fmt.Errorf("postgres: keyword probe: %w", err)
		}
		if feats != nil {
			if err := feats.setEntity(&h, raw[6], typ, tags); err != nil {
				return nil, fmt.Errorf("postgres: keyword probe: %w", err)
			}
		}
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: keyword probe: %w", mapErr(err))
	}
	return hits, nil
}

// allBinary asks for every result column in binary.
var allBinary = pgx.QueryResultFormats{1, 1, 1, 1, 1, 1, 1, 1, 1}

// scoreHit reads h's chunk tsvector (binary) into doc and sets its term
// mask and update time, and its rank (ts_rank_cd) unless feats is set:
// ranking v2 then orders by BM25 over the features, whose chunk part
// (length, term frequencies) scoreHit sets too.
func scoreHit(h *driver.KeywordHit, tsv []byte, updated time.Time, tq *tsrank.Query, doc *tsrank.Doc, feats *hitFeatures) error {
	n, err := scanTSVectorBinaryLen(tsv, tq, doc)
	if err != nil {
		return fmt.Errorf("chunk %s: %w", h.ChunkID, err)
	}
	h.Matched = tq.Mask(doc)
	h.UpdatedAt = updated.UTC()
	if feats == nil {
		h.Rank = float64(tq.RankCD(doc))
		return nil
	}
	feats.setChunk(h, doc, n)
	return nil
}

var _ driver.KeywordFiller = (*Store)(nil)

// KeywordFill implements driver.KeywordFiller in one statement (see
// keywordFillSQL): no OR probe is needed to learn that the union fits, and
// the steps after the pool is full never run.
func (s *Store) KeywordFill(ctx context.Context, ws string, q driver.KeywordFillQuery) (driver.KeywordFillResult, error) {
	if s.mem != nil {
		if res, ok, err := s.memKeywordFill(withWS(ctx, ws), ws, q); ok {
			return res, err
		}
	}
	return readVal(s, withWS(ctx, ws), ws, func(ctx context.Context) (driver.KeywordFillResult, error) { return s.keywordFill(ctx, ws, q) })
}

func (s *Store) keywordFill(ctx context.Context, ws string, q driver.KeywordFillQuery) (driver.KeywordFillResult, error) {
	ctx = withWS(ctx, ws)
	var res driver.KeywordFillResult
	sql, args, err := keywordFillSQL(ws, q)
	if err != nil {
		return res, err
	}
	termLex, err := s.termLexemes(ctx, q.Terms)
	if err != nil {
		return res, fmt.Errorf("postgres: keyword fill: %w", err)
	}
	tq := tsrank.CompileWith(termLex, q.Alternatives)
	var feats *hitFeatures
	if q.Features {
		feats = newHitFeatures(tq, q.Limit)
	}
	// Every column in binary, the tsvectors included (pgx knows no
	// tsvector type, so it would otherwise ask for text).
	qargs := append([]any{allBinary}, args...)
	conn, err := s.rd(ctx).pool.Acquire(ctx)
	if err != nil {
		return res, fmt.Errorf("postgres: keyword fill: %w", mapErr(err))
	}
	// A connection left inside the transaction (an error below) is
	// dropped by the pool, never reused.
	defer conn.Release()
	if _, err := conn.Exec(ctx, genericPlanBegin); err != nil {
		return res, fmt.Errorf("postgres: keyword fill: %w", mapErr(err))
	}
	rows, err := conn.Query(ctx, sql, qargs...)
	if err != nil {
		return res, fmt.Errorf("postgres: keyword fill: %w", mapErr(err))
	}
	defer rows.Close()
	res.Hits = make([]driver.KeywordHit, 0, q.Limit)
	var doc tsrank.Doc
	for rows.Next() {
		var h driver.KeywordHit
		var step int32
		var updated time.Time
		var typ string
		var tags []string
		if err := rows.Scan(&step, &h.ChunkID, &h.EntityID, &h.Content, &updated, nil, nil, &typ, &tags); err != nil {
			return res, fmt.Errorf("postgres: keyword fill: %w", err)
		}
		raw := rows.RawValues()
		if err := scoreHit(&h, raw[5], updated, tq, &doc, feats); err != nil {
			return res, fmt.Errorf("postgres: keyword fill: %w", err)
		}
		if feats != nil {
			if err := feats.setEntity(&h, raw[6], typ, tags); err != nil {
				return res, fmt.Errorf("postgres: keyword fill: %w", err)
			}
		}
		if step == 0 {
			res.Conjunction++
		}
		res.Hits = append(res.Hits, h)
	}
	if err := rows.Err(); err != nil {
		return res, fmt.Errorf("postgres: keyword fill: %w", mapErr(err))
	}
	rows.Close()
	if _, err := conn.Exec(ctx, "ROLLBACK"); err != nil {
		return res, fmt.Errorf("postgres: keyword fill: %w", mapErr(err))
	}
	return res, nil
}

// genericPlanBegin opens the read-only transaction in which the keyword
// fill runs with a generic plan (planned once per connection and statement
// text). Left to choose (plan_cache_mode auto), PostgreSQL planned the
// fill anew for every call, never settling on a generic plan: 1.7-1.8 ms
// of planning for 7.4 ms of execution (pg_stat_statements, REST load, one
// client). The terms' tsqueries are computed inside the statement, so a
// custom plan saw no more selectivity than the generic one does. The two
// extra round trips cost less than the planning: the REST load at 8
// clients served 80-82 searches/s before and 91-94 after (three
// alternating pairs). It ends with ROLLBACK, not COMMIT: nothing was
// written, and a COMMIT would count as a write for the read replicas'
// positions. No parallel workers, even on a pool Open did not configure:
// a generic plan cannot see the fill's limits, and at a million chunks
// parallel scans made searches several times slower.
const genericPlanBegin = "BEGIN READ ONLY; SET LOCAL plan_cache_mode = force_generic_plan; SET LOCAL max_parallel_workers_per_gather = 0"

// keywordFillSQL builds KeywordFill's statement. A recursive CTE takes the
// steps: step 0 collects the conjunction's chunks (capped at the limit),
// each further step appends the chunks of the next term in q.Order that
// are not collected yet, capped at the room left, and the recursion
// stops once the pool is full or the terms run out, so steps after a full
// pool never run. Every term's tsquery is parsed once (tq); the
// conjunction is their AND (not the parse of the joined text, which can
// differ: "<a" and "b>" together are an XML tag). The chosen chunks are
// then read once, in step order. The steps collect row addresses (ctid) of
// each chunk and its entity, not ids: within the statement's snapshot a row
// has one visible version, so its address identifies it, compares cheaply,
// and the final read fetches both rows directly (TID scans) instead of
// descending two primary keys again.
func keywordFillSQL(ws string, q driver.KeywordFillQuery) (string, sqlArgs, error) {
	if len(q.Terms) == 0 || len(q.Terms) > 32 {
		return "", nil, fmt.Errorf("postgres: keyword fill: need 1 to 32 terms, got %d", len(q.Terms))
	}
	if q.Limit <= 0 {
		return "", nil, fmt.Errorf("postgres: keyword fill: limit %d", q.Limit)
	}
	order := make([]int32, len(q.Order))
	for i, t := range q.Order {
		if t < 0 || t >= len(q.Terms) {
			return "", nil, fmt.Errorf("postgres: keyword fill: term %d out of range", t)
		}
		order[i] = int32(t) + 1 // SQL arrays count from 1
	}
	args := sqlArgs{ws}
	terms := args.add(q.Terms)
	alts := termAlternatives(len(q.Terms), q.Alternatives)
	if alts == nil {
		alts = make([]string, len(q.Terms))
	}
	altArg := args.add(alts)
	ord := args.add(order)
	limit := args.add(q.Limit)
	where := filterSQL(q.Filter, (*[]any)(&args))
	and := make([]string, len(q.Terms))
	for i := range and {
		and[i] = fmt.Sprintf("tq.q[%d]", i+1)
	}
	nsteps := len(order)
	if len(q.Terms) == 1 {
		nsteps = 0 // one term's step is the conjunction
	}
	// Heads: after the conjunction, entities whose head matches a term
	// (in order; per term at most q.Heads, in the index's order), each by
	// its first chunk, up to q.Heads entities and the room left.
	heads := "SELECT '{}'::tid[] AS ids, '{}'::tid[] AS eids"
	if q.Heads > 0 && len(q.HeadTerms) > 0 {
		hterms := make([]int32, len(q.HeadTerms))
		for i, t := range q.HeadTerms {
			if t < 0 || t >= len(q.Terms) {
				return "", nil, fmt.Errorf("postgres: keyword fill: head term %d out of range", t)
			}
			hterms[i] = int32(t) + 1
		}
		hord := args.add(hterms)
		h := args.add(q.Heads)
		heads = fmt.Sprintf(`SELECT coalesce(array_agg(z.ct ORDER BY z.k, z.n), '{}') AS ids, coalesce(array_agg(z.et ORDER BY z.k, z.n), '{}') AS eids
		FROM (SELECT y.ct, y.et, y.k, y.n FROM (
			SELECT DISTINCT ON (x.et) x.ct, x.et, x.k, x.n FROM (
				SELECT o.k, m.n, m.et, (SELECT c.ctid FROM chunks c WHERE c.workspace_id = $1 AND c.entity_id = m.id
					ORDER BY c.chunk_index LIMIT 1) AS ct
				FROM unnest(%[1]s::int[]) WITH ORDINALITY o(t, k), conj, LATERAL (
					SELECT e.ctid AS et, e.id, row_number() OVER () AS n FROM entities e
					WHERE e.workspace_id = $1 AND e.head @@ (SELECT tq.q[o.t] FROM tq) AND %[2]s AND e.ctid <> ALL(conj.eids)
					LIMIT %[3]s) m
			) x WHERE x.ct IS NOT NULL ORDER BY x.et, x.k, x.n) y
			ORDER BY y.k, y.n
			LIMIT greatest(0, least(%[3]s::int, %[4]s::int - (SELECT cardinality(ids) FROM conj)))) z`, hord, where, h, limit)
	}
	// Steps over the terms of q.ScanTerms walk the workspace (walkSQL)
	// instead of gathering a bitmap of every match: at a million chunks a
	// term in 16% of them made a bitmap of 161,366 rows (138 ms) to keep
	// 199. Only under a broad filter: a narrow one could reject most of
	// the walk. One term's step is the conjunction.
	broad := broadFilter(q.Filter)
	scanStep := make([]bool, len(order))
	for i, t := range q.Order {
		scanStep[i] = broad && slices.Contains(q.ScanTerms, t)
	}
	scanConj := len(q.Terms) == 1 && broad && slices.Contains(q.ScanTerms, 0)
	scan := args.add(scanStep)
	conj := fmt.Sprintf(`SELECT c.ctid AS ct, e.ctid AS et FROM %[1]s
			WHERE c.workspace_id = $1 AND c.tsv @@ (SELECT %[2]s FROM tq)
				AND %[3]s
			LIMIT %[4]s`, chunkJoin, strings.Join(and, " && "), where, limit)
	if scanConj {
		conj = fmt.Sprintf(`SELECT w.ct, e.ctid AS et FROM (%[1]s) w
			JOIN chunks c ON c.ctid = w.ct AND c.workspace_id = $1
			JOIN entities e ON e.workspace_id = $1 AND e.id = w.entity_id
			WHERE %[2]s
			LIMIT %[3]s`, walkSQL("(SELECT tq.q[1] FROM tq)", "", limit), where, limit)
	}
	sql := fmt.Sprintf(`WITH RECURSIVE tq AS MATERIALIZED (
		SELECT array_agg(CASE WHEN a = '' THEN plainto_tsquery('simple', t) ELSE plainto_tsquery('simple', t) || a::tsquery END ORDER BY i) AS q
		FROM unnest(%[2]s::text[], %[8]s::text[]) WITH ORDINALITY u(t, a, i)
	), conj AS MATERIALIZED (
		SELECT coalesce(array_agg(x.ct), '{}') AS ids, coalesce(array_agg(x.et), '{}') AS eids FROM (
			%[6]s) x
	), heads AS MATERIALIZED (
		%[7]s
	), steps(k, ids, eids) AS (
		SELECT 0, conj.ids || heads.ids, conj.eids || heads.eids FROM conj, heads
		UNION ALL
		SELECT st.k + 1, st.ids || coalesce(x.cts, '{}'), st.eids || coalesce(x.ets, '{}')
		FROM steps st, LATERAL (SELECT array_agg(y.ct) AS cts, array_agg(y.et) AS ets FROM (
			(SELECT c.ctid AS ct, e.ctid AS et FROM %[1]s
			WHERE NOT (%[10]s::bool[])[st.k + 1] AND c.workspace_id = $1 AND c.tsv @@ (SELECT tq.q[(%[3]s::int[])[st.k + 1]] FROM tq)
				AND %[5]s AND c.ctid <> ALL(st.ids)
			LIMIT %[4]s - cardinality(st.ids))
			UNION ALL
			(SELECT w.ct, e.ctid AS et FROM (%[11]s) w
			JOIN chunks c ON c.ctid = w.ct AND c.workspace_id = $1
			JOIN entities e ON e.workspace_id = $1 AND e.id = w.entity_id
			WHERE (%[10]s::bool[])[st.k + 1] AND %[5]s
			LIMIT %[4]s - cardinality(st.ids))) y) x
		WHERE st.k < %[9]d AND cardinality(st.ids) < %[4]s
	)
	SELECT CASE WHEN u.n <= cardinality(conj.ids) THEN 0 ELSE 1 END, c.id, c.entity_id, c.content, e.updated_at, c.tsv,
		e.head, e.type, e.tags
	FROM conj, (SELECT ids, eids FROM steps ORDER BY k DESC LIMIT 1) pool, unnest(pool.ids, pool.eids) WITH ORDINALITY u(id, eid, n)
	JOIN chunks c ON c.ctid = u.id AND c.workspace_id = $1
	JOIN entities e ON e.ctid = u.eid AND e.workspace_id = $1
	ORDER BY u.n`, chunkJoin, terms, ord, limit, where, conj, heads, altArg, nsteps, scan,
		walkSQL(fmt.Sprintf("(SELECT tq.q[(%s::int[])[st.k + 1]] FROM tq)", ord), "AND c.ctid <> ALL(st.ids)", limit+" - cardinality(st.ids)"))
	return sql, args, nil
}

// walkSQL is a fill step's walk of the workspace's chunks: the first n (an
// SQL expression) in primary-key order whose tsvector matches tsq (an SQL
// expression), with their entity ids, before any filter on the entity
// (the caller joins the entity and filters; a broad filter rejects few).
// On chunks alone, ordered and limited, it can only be planned as a walk
// of chunks_pkey; joined to entities inside, the planner, seeing a generic
// plan's estimates, chose a scan of every entity and a sort instead (231
// ms in the REST load at 2,000 entities).
func walkSQL(tsq, extra, n string) string {
	return fmt.Sprintf(`SELECT c.ctid AS ct, c.entity_id FROM chunks c
		WHERE c.workspace_id = $1 AND ts_match_vq(c.tsv, %s) %s
		ORDER BY c.workspace_id, c.id LIMIT %s OFFSET 0`, tsq, extra, n)
}

// chunkSimilaritiesSQL selects the similarity to $3 of the chunks $2 that
// have an embedding of model $4.
const chunkSimilaritiesSQL = `SELECT c.id, 1 - (c.embedding <=> $3::vector) FROM chunks c
	WHERE c.workspace_id = $1 AND c.id = ANY($2) AND c.model_id = $4 AND c.embedding IS NOT NULL`

// ChunkSimilarities implements driver.SimilarityScorer.
func (s *Store) ChunkSimilarities(ctx context.Context, ws string, modelID int64, vec []float32, ids []uuid.UUID) (map[uuid.UUID]float64, error) {
	if len(ids) > 0 && s.mem != nil {
		if sims, ok := s.memChunkSimilarities(withWS(ctx, ws), ws, modelID, vec, ids); ok {
			return sims, nil
		}
	}
	return readVal(s, withWS(ctx, ws), ws, func(ctx context.Context) (map[uuid.UUID]float64, error) {
		return s.chunkSimilarities(ctx, ws, modelID, vec, ids)
	})
}

func (s *Store) chunkSimilarities(ctx context.Context, ws string, modelID int64, vec []float32, ids []uuid.UUID) (map[uuid.UUID]float64, error) {
	ctx = withWS(ctx, ws)
	if len(ids) == 0 {
		return make(map[uuid.UUID]float64), nil
	}
	rows, err := s.rd(ctx).pool.Query(ctx, chunkSimilaritiesSQL, ws, ids, pgvector.NewVector(vec), modelID)
	if err != nil {
		return nil, fmt.Errorf("postgres: chunk similarities: %w", mapErr(err))
	}
	out, err := scanSimilarities(rows, len(ids))
	if err != nil {
		return nil, fmt.Errorf("postgres: chunk similarities: %w", mapErr(err))
	}
	return out, nil
}

func scanSimilarities(rows pgx.Rows, n int) (map[uuid.UUID]float64, error) {
	defer rows.Close()
	out := make(map[uuid.UUID]float64, n)
	for rows.Next() {
		var id uuid.UUID
		var sim float64
		if err := rows.Scan(&id, &sim); err != nil {
			return nil, err
		}
		out[id] = sim
	}
	return out, rows.Err()
}

// EdgeSummaries implements driver.Storage.
func (s *Store) EdgeSummaries(ctx context.Context, ws string, ids []uuid.UUID, f driver.EntityFilter) (map[uuid.UUID]driver.EdgeSummary, error) {
	if out, ok := s.memEdgeSummaries(ctx, ws, ids, f); ok {
		return out, nil
	}
	return readVal(s, withWS(ctx, ws), ws, func(ctx context.Context) (map[uuid.UUID]driver.EdgeSummary, error) {
		return s.edgeSummaries(ctx, ws, ids, f)
	})
}

func (s *Store) edgeSummaries(ctx context.Context, ws string, ids []uuid.UUID, f driver.EntityFilter) (map[uuid.UUID]driver.EdgeSummary, error) {
	ctx = withWS(ctx, ws)
	out := make(map[uuid.UUID]driver.EdgeSummary, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := sqlArgs{ws, ids}
	where := filterSQL(f, (*[]any)(&args))
	rows, err := s.rd(ctx).pool.Query(ctx, `SELECT x.id, x.relation, count(*) FROM (
			SELECT ed.source_id AS id, ed.relation, ed.target_id AS other FROM edges ed WHERE ed.workspace_id = $1 AND ed.source_id = ANY($2)
			UNION ALL
			SELECT ed.target_id, ed.relation, ed.source_id FROM edges ed WHERE ed.workspace_id = $1 AND ed.target_id = ANY($2)
		) x JOIN entities e ON e.workspace_id = $1 AND e.id = x.other
		WHERE `+where+`
		GROUP BY x.id, x.relation ORDER BY x.id, count(*) DESC, x.relation COLLATE "C"`, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: edge summaries: %w", mapErr(err))
	}
	defer rows.Close()
	for rows.Next() {
		var id uuid.UUID
		var rc driver.RelationCount
		if err := rows.Scan(&id, &rc.Relation, &rc.Count); err != nil {
			return nil, fmt.Errorf("postgres: edge summaries: %w", err)
		}
		sum := out[id]
		sum.Count += rc.Count
		sum.Relations = append(sum.Relations, rc)
		out[id] = sum
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: edge summaries: %w", mapErr(err))
	}
	return out, nil
}

// Neighbors implements driver.Storage.
func (s *Store) Neighbors(ctx context.Context, ws string, ids []uuid.UUID, f driver.EntityFilter) ([]driver.Neighbor, error) {
	return readVal(s, withWS(ctx, ws), ws, func(ctx context.Context) ([]driver.Neighbor, error) { return s.neighbors(ctx, ws, ids, f) })
}

func (s *Store) neighbors(ctx context.Context, ws string, ids []uuid.UUID, f driver.EntityFilter) ([]driver.Neighbor, error) {
	ctx = withWS(ctx, ws)
	if len(ids) == 0 {
		return nil, nil
	}
	args := sqlArgs{ws, ids}
	where := filterSQL(f, (*[]any)(&args))
	rows, err := s.rd(ctx).pool.Query(ctx, `SELECT `+entityCols+`, x.seed, x.relation, x.direction FROM (
			SELECT ed.source_id AS seed, ed.target_id AS other, ed.relation, 'outgoing' AS direction FROM edges ed
				WHERE ed.workspace_id = $1 AND ed.source_id = ANY($2)
			UNION ALL
			SELECT ed.target_id, ed.source_id, ed.relation, 'incoming' FROM edges ed
				WHERE ed.workspace_id = $1 AND ed.target_id = ANY($2)
		) x JOIN entities e ON e.workspace_id = $1 AND e.id = x.other
		WHERE `+where+`
		ORDER BY x.seed, x.relation, e.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: neighbors: %w", mapErr(err))
	}
	defer rows.Close()
	var out []driver.Neighbor
	for rows.Next() {
		var n driver.Neighbor
		e, err := scanEntity(rows, &n.SeedID, &n.Relation, &n.Direction)
		if err != nil {
			return nil, fmt.Errorf("postgres: neighbors: %w", err)
		}
		n.Entity = e
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: neighbors: %w", mapErr(err))
	}
	return out, nil
}

// TermFrequencies implements driver.TermStatser from the planner's
// statistics of the chunk tsvector column (most common elements and their
// frequencies, kept by ANALYZE/autovacuum). A term's lexemes are ANDed, so
// its frequency is at most its rarest lexeme's; a lexeme outside the
// statistics is rarer than every one inside (estimated 0).
//
// The statistics change only when the table is analysed, so a snapshot of
// them is kept for termFreqTTL: a search then costs no query for them.
func (s *Store) TermFrequencies(ctx context.Context, ws string, terms []string) ([]float64, bool, error) {
	ctx = withWS(ctx, ws)
	stats, err := s.freqs.snapshot(ctx, s)
	if err != nil || stats == nil {
		return nil, false, err
	}
	lex, err := s.termLexemes(ctx, terms)
	if err != nil {
		return nil, false, fmt.Errorf("postgres: term frequencies: %w", err)
	}
	out := make([]float64, len(terms))
	for i, ls := range lex {
		f := 0.0
		for j, l := range ls {
			if x := stats[l]; j == 0 || x < f {
				f = x
			}
		}
		out[i] = f
	}
	return out, true, nil
}

// termFreqTTL bounds how long a statistics snapshot is used.
const termFreqTTL = time.Minute

// termFreqCache holds a snapshot of the planner's lexeme frequencies.
type termFreqCache struct {
	mu    sync.Mutex
	at    time.Time
	stats map[string]float64 // nil: no statistics yet
}

// snapshot returns the lexeme frequencies, reading them again when the
// snapshot is older than termFreqTTL; nil when the table has no
// statistics yet (not kept: the next call looks again).
func (c *termFreqCache) snapshot(ctx context.Context, s *Store) (map[string]float64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < termFreqTTL {
		return c.stats, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT f.lexeme, f.freq::float8 FROM pg_stats p,
			unnest(p.most_common_elems::text::text[], p.most_common_elem_freqs) AS f(lexeme, freq)
		WHERE p.tablename = 'chunks' AND p.attname = 'tsv' AND p.schemaname = current_schema()
			AND f.lexeme IS NOT NULL`) // the frequencies end with three summary values
	if err != nil {
		return nil, fmt.Errorf("postgres: term frequencies: %w", mapErr(err))
	}
	stats, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (termFreq, error) {
		var x termFreq
		err := r.Scan(&x.lexeme, &x.freq)
		return x, err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: term frequencies: %w", mapErr(err))
	}
	if len(stats) == 0 {
		return nil, nil // asked again next time: ANALYZE may come any moment
	}
	c.at, c.stats = time.Now(), make(map[string]float64, len(stats))
	for _, x := range stats {
		c.stats[x.lexeme] = x.freq
	}
	return c.stats, nil
}

type termFreq struct {
	lexeme string
	freq   float64
}
