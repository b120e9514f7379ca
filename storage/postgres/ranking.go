package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/rank"
	"github.com/postgram-go/postgram/internal/tsrank"
)

// This file holds what ranking v2 needs from PostgreSQL: corpus statistics
// (lexeme_stats, see migration 011), entity heads, term alternatives in the
// tsqueries, and the features of keyword hits.

// foldMinRows is how many pending statistics rows of a workspace make a
// read start a fold (see FoldStats): a read costs a binary search per
// pending row and asked lexeme.
const foldMinRows = 32

// foldInterval is how often the store folds pending statistics rows when
// nobody reads them (a bulk import), so they never pile up.
const foldInterval = time.Second

// LexemeStats implements driver.Storage: the folded statistics plus the
// pending rows (lexeme_stats_delta, each a chunk's tsvector and a sign),
// summed in one statement (one snapshot).
func (s *Store) LexemeStats(ctx context.Context, ws string, lexemes []string) (driver.LexemeStats, error) {
	ctx = withWS(ctx, ws)
	if s.mem != nil {
		if st, ok := s.memLexemeStats(ctx, ws, lexemes); ok {
			return st, nil
		}
	}
	st := driver.LexemeStats{DF: make(map[string]int64, len(lexemes))}
	keys := make([]string, 0, len(lexemes))
	queries := make([]string, 0, len(lexemes))
	for _, l := range lexemes {
		if l != "" {
			keys, queries = append(keys, l), append(queries, alternativesQuery([]string{l}))
		}
	}
	rows, err := s.pool.Query(ctx, `WITH d AS MATERIALIZED (
			SELECT sign, positions, tsv FROM lexeme_stats_delta WHERE workspace_id = $1
		)
		SELECT x.lexeme, sum(x.chunks)::bigint, sum(x.positions)::bigint, sum(x.pending)::bigint FROM (
			SELECT lexeme, chunks, positions, 0 AS pending FROM lexeme_stats
			WHERE workspace_id = $1 AND lexeme = ANY(array_append($2::text[], ''))
			UNION ALL
			SELECT '', d.sign, d.sign * d.positions, 1 FROM d
			UNION ALL
			SELECT k.l, d.sign, 0, 0 FROM d, unnest($2::text[], $3::text[]::tsquery[]) k(l, q) WHERE d.tsv @@ k.q
		) x GROUP BY x.lexeme`, ws, keys, queries)
	if err != nil {
		return st, fmt.Errorf("postgres: lexeme stats: %w", mapErr(err))
	}
	defer rows.Close()
	var pending int64
	for rows.Next() {
		var lexeme string
		var chunks, positions, n int64
		if err := rows.Scan(&lexeme, &chunks, &positions, &n); err != nil {
			return st, fmt.Errorf("postgres: lexeme stats: %w", err)
		}
		if lexeme == "" {
			st.Chunks, st.Length, pending = chunks, positions, n
			continue
		}
		if chunks > 0 {
			st.DF[lexeme] = chunks
		}
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("postgres: lexeme stats: %w", mapErr(err))
	}
	if pending >= foldMinRows {
		s.startFold()
	}
	return st, nil
}

// foldLoop folds pending statistics every foldInterval, and prunes
// search_changes every pruneChangesInterval, until ctx ends.
func (s *Store) foldLoop(ctx context.Context) {
	t := time.NewTicker(foldInterval)
	defer t.Stop()
	prune := time.NewTicker(pruneChangesInterval)
	defer prune.Stop()
	var horizons changeHorizons
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.startFold()
		case <-prune.C:
			pctx, cancel := context.WithTimeout(ctx, time.Minute)
			n, err := s.pruneSearchChanges(pctx, &horizons)
			cancel()
			switch {
			case err != nil && ctx.Err() == nil:
				s.log.Warn("postgres: pruning search_changes failed", "error", err)
			case n > 0:
				s.log.Debug("postgres: pruned search_changes", "rows", n)
			}
		}
	}
}

// pruneChangesInterval is how often a store prunes search_changes.
const pruneChangesInterval = 5 * time.Minute

// startFold folds the pending statistics in the background unless a fold
// is running already.
func (s *Store) startFold() {
	if !s.folding.CompareAndSwap(false, true) {
		return
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer s.folding.Store(false)
		ctx, cancel := context.WithTimeout(s.bgCtx, time.Minute)
		defer cancel()
		if _, err := s.fold(ctx, false); err != nil && s.bgCtx.Err() == nil {
			s.log.Warn("postgres: folding lexeme statistics failed", "error", err)
		}
	}()
}

// FoldStats moves the pending statistics rows of every workspace
// (lexeme_stats_delta) into lexeme_stats and returns how many it moved,
// waiting for a fold already running. One fold runs at a time across every
// process sharing the schema (an advisory lock). Searches read the same
// numbers before and after a fold.
func (s *Store) FoldStats(ctx context.Context) (int64, error) { return s.fold(ctx, true) }

// fold is FoldStats; without wait it returns 0 at once when another fold
// holds the lock (the background folds).
func (s *Store) fold(ctx context.Context, wait bool) (int64, error) {
	var moved int64
	err := s.inOwnerTx(ctx, func(tx pgx.Tx) error {
		moved = 0
		if wait {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext(current_schema() || '.postgram_lexeme_fold'))"); err != nil {
				return err
			}
		} else {
			var got bool
			if err := tx.QueryRow(ctx, "SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || '.postgram_lexeme_fold'))").Scan(&got); err != nil {
				return err
			}
			if !got {
				return nil
			}
		}
		// A statement of its own, after the lock: its snapshot holds what
		// an earlier fold committed.
		var any bool
		if err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM lexeme_stats_delta)").Scan(&any); err != nil {
			return err
		}
		if !any {
			return nil
		}
		rows, err := tx.Query(ctx, `WITH moved AS (
				DELETE FROM lexeme_stats_delta RETURNING workspace_id, sign, positions, tsv
			), sums AS (
				SELECT m.workspace_id, u.lexeme, sum(m.sign) AS chunks, sum(m.sign * cardinality(u.positions)) AS positions
				FROM moved m, unnest(m.tsv) u GROUP BY m.workspace_id, u.lexeme
				UNION ALL
				SELECT m.workspace_id, '', sum(m.sign), sum(m.sign * m.positions) FROM moved m GROUP BY m.workspace_id
			), up AS (
				INSERT INTO lexeme_stats AS s (workspace_id, lexeme, chunks, positions)
				SELECT workspace_id, lexeme, chunks, positions FROM sums
				ON CONFLICT (workspace_id, lexeme) DO UPDATE
					SET chunks = s.chunks + excluded.chunks, positions = s.positions + excluded.positions
				RETURNING s.workspace_id, s.lexeme, s.chunks
			)
			SELECT (SELECT count(*) FROM moved), up.workspace_id, up.lexeme
			FROM (SELECT 1) one LEFT JOIN up ON up.chunks <= 0 AND up.lexeme <> ''`)
		if err != nil {
			return err
		}
		var wss, lexemes []string
		for rows.Next() {
			var ws, lexeme *string
			if err := rows.Scan(&moved, &ws, &lexeme); err != nil {
				rows.Close()
				return err
			}
			if ws != nil && lexeme != nil {
				wss, lexemes = append(wss, *ws), append(lexemes, *lexeme)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(wss) == 0 {
			return nil
		}
		// Lexemes no chunk holds any more.
		_, err = tx.Exec(ctx, `DELETE FROM lexeme_stats s USING unnest($1::text[], $2::text[]) AS g(ws, lexeme)
			WHERE s.workspace_id = g.ws AND s.lexeme = g.lexeme AND s.chunks <= 0`, wss, lexemes)
		return err
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" {
		return 0, nil // not migrated yet: nothing to fold
	}
	if err != nil {
		return 0, fmt.Errorf("postgres: fold lexeme statistics: %w", mapErr(err))
	}
	return moved, nil
}

// entityHead returns an entity's head text (rank.Head) from its content and
// metadata, parsing raw metadata when the map is not set.
func entityHead(content string, meta map[string]any, raw []byte) string {
	if meta == nil && len(raw) > 0 {
		_ = json.Unmarshal(raw, &meta) // metadata that does not parse has no name fields
	}
	return rank.Head(content, meta)
}

// headBatch is how many entities one step of fillHeads writes.
const headBatch = 500

// fillHeads computes the heads of entities that have none yet (written
// before migration 011, or by SQL), in batches, and returns how many it
// filled.
func (s *Store) fillHeads(ctx context.Context) (int, error) {
	total := 0
	for {
		rows, err := s.owner.Query(ctx, `SELECT workspace_id, id, content, metadata FROM entities WHERE head IS NULL LIMIT $1`, headBatch)
		if err != nil {
			return total, fmt.Errorf("postgres: fill heads: %w", mapErr(err))
		}
		var wss, heads []string
		var ids []uuid.UUID
		for rows.Next() {
			var ws, content string
			var id uuid.UUID
			var meta []byte
			if err := rows.Scan(&ws, &id, &content, &meta); err != nil {
				rows.Close()
				return total, fmt.Errorf("postgres: fill heads: %w", err)
			}
			wss, ids, heads = append(wss, ws), append(ids, id), append(heads, entityHead(content, nil, meta))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return total, fmt.Errorf("postgres: fill heads: %w", mapErr(err))
		}
		if len(ids) == 0 {
			return total, nil
		}
		if _, err := s.owner.Exec(ctx, `UPDATE entities e SET head = to_tsvector('simple', g.head)
			FROM unnest($1::text[], $2::uuid[], $3::text[]) AS g(ws, id, head)
			WHERE e.workspace_id = g.ws AND e.id = g.id AND e.head IS NULL`, wss, ids, heads); err != nil {
			return total, fmt.Errorf("postgres: fill heads: %w", mapErr(err))
		}
		total += len(ids)
	}
}

// alternativesQuery renders lexemes as a tsquery's text input matching any
// one of them ('a' | 'b'), each quoted so it is taken as written; "" when
// there are none.
func alternativesQuery(lexemes []string) string {
	var b strings.Builder
	for _, l := range lexemes {
		if l == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" | ")
		}
		b.WriteByte('\'')
		for _, r := range l {
			switch r {
			case '\'':
				b.WriteString("''")
			case '\\':
				b.WriteString(`\\`)
			default:
				b.WriteRune(r)
			}
		}
		b.WriteByte('\'')
	}
	return b.String()
}

// termAlternatives returns, per term, alternativesQuery of its
// alternatives ("" for none); nil when no term has any.
func termAlternatives(n int, alts [][]string) []string {
	var out []string
	for i := 0; i < n && i < len(alts); i++ {
		q := alternativesQuery(alts[i])
		if q == "" {
			continue
		}
		if out == nil {
			out = make([]string, n)
		}
		out[i] = q
	}
	return out
}

// hitFeatures computes ranking v2's features of keyword hits: the chunk's
// length and per-slot term frequencies from its tsvector, and per entity
// (remembered across its chunks) the head's first positions and length.
type hitFeatures struct {
	q     *tsrank.Query
	head  tsrank.Doc
	heads map[uuid.UUID]entityFeatures
	tfs   []uint16
}

type entityFeatures struct {
	pos []uint16
	len int32
}

func newHitFeatures(q *tsrank.Query, n int) *hitFeatures {
	return &hitFeatures{q: q, heads: map[uuid.UUID]entityFeatures{}, tfs: make([]uint16, 0, n*q.Slots())}
}

// setChunk sets h's chunk features from doc (the chunk's query lexemes,
// already scanned) and its length in positions.
func (f *hitFeatures) setChunk(h *driver.KeywordHit, doc *tsrank.Doc, length int32) {
	start := len(f.tfs)
	f.tfs = f.q.Features(doc, f.tfs)
	h.Length, h.TF = length, f.tfs[start:len(f.tfs):len(f.tfs)]
}

// setEntity sets h's entity features from its head (binary tsvector, nil
// when not computed yet), type and tags.
func (f *hitFeatures) setEntity(h *driver.KeywordHit, head []byte, typ string, tags []string) error {
	ef, ok := f.heads[h.EntityID]
	if !ok {
		if head != nil {
			n, err := scanTSVectorBinaryLen(head, f.q, &f.head)
			if err != nil {
				return fmt.Errorf("head of entity %s: %w", h.EntityID, err)
			}
			ef = entityFeatures{pos: f.q.FirstPositions(&f.head, nil), len: n}
		}
		f.heads[h.EntityID] = ef
	}
	h.HeadPos, h.HeadLen = ef.pos, ef.len
	h.Type, h.Tags = driver.EntityType(typ), tags
	return nil
}
