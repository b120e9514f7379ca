package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/storage/postgres"
)

// stagedStore times the storage calls a search makes, so the bench can say
// where a profile's time goes (--stages). It keeps every optional interface
// of the PostgreSQL store that search uses.
type stagedStore struct {
	*postgres.Store

	mu    sync.Mutex
	times map[string][]time.Duration
}

var (
	_ driver.KeywordFiller    = (*stagedStore)(nil)
	_ driver.SimilarityScorer = (*stagedStore)(nil)
	_ driver.TermStatser      = (*stagedStore)(nil)
)

func newStagedStore(st *postgres.Store) *stagedStore {
	return &stagedStore{Store: st, times: map[string][]time.Duration{}}
}

func (s *stagedStore) record(stage string, t0 time.Time) {
	d := time.Since(t0)
	s.mu.Lock()
	s.times[stage] = append(s.times[stage], d)
	s.mu.Unlock()
}

// take returns the recorded times and starts afresh.
func (s *stagedStore) take() map[string][]time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.times
	s.times = map[string][]time.Duration{}
	return t
}

func (s *stagedStore) VectorSearch(ctx context.Context, ws string, q driver.VectorQuery) (driver.VectorResult, error) {
	defer s.record("vector search", time.Now())
	return s.Store.VectorSearch(ctx, ws, q)
}

func (s *stagedStore) KeywordProbe(ctx context.Context, ws string, q driver.KeywordQuery) ([]driver.KeywordHit, error) {
	defer s.record([]string{"keyword probe (and)", "keyword probe (or)", "keyword probe (term)"}[q.Mode], time.Now())
	return s.Store.KeywordProbe(ctx, ws, q)
}

func (s *stagedStore) KeywordFill(ctx context.Context, ws string, q driver.KeywordFillQuery) (driver.KeywordFillResult, error) {
	defer s.record("keyword fill", time.Now())
	return s.Store.KeywordFill(ctx, ws, q)
}

func (s *stagedStore) TermFrequencies(ctx context.Context, ws string, terms []string) ([]float64, bool, error) {
	defer s.record("term frequencies", time.Now())
	return s.Store.TermFrequencies(ctx, ws, terms)
}

func (s *stagedStore) LexemeStats(ctx context.Context, ws string, lexemes []string) (driver.LexemeStats, error) {
	defer s.record("lexeme stats", time.Now())
	return s.Store.LexemeStats(ctx, ws, lexemes)
}

func (s *stagedStore) ChunkSimilarities(ctx context.Context, ws string, modelID int64, vec []float32, ids []uuid.UUID) (map[uuid.UUID]float64, error) {
	defer s.record("chunk similarities", time.Now())
	return s.Store.ChunkSimilarities(ctx, ws, modelID, vec, ids)
}

func (s *stagedStore) GetEntities(ctx context.Context, ws string, ids []uuid.UUID) ([]*postgram.Entity, error) {
	defer s.record("load entities", time.Now())
	return s.Store.GetEntities(ctx, ws, ids)
}

func (s *stagedStore) EdgeSummaries(ctx context.Context, ws string, ids []uuid.UUID, f driver.EntityFilter) (map[uuid.UUID]postgram.EdgeSummary, error) {
	defer s.record("edge summaries", time.Now())
	return s.Store.EdgeSummaries(ctx, ws, ids, f)
}

func (s *stagedStore) GetQueryEmbedding(ctx context.Context, ws, clientID string, modelID int64, key []byte) ([]float32, bool, error) {
	defer s.record("query cache read", time.Now())
	return s.Store.GetQueryEmbedding(ctx, ws, clientID, modelID, key)
}

func (s *stagedStore) PutQueryEmbedding(ctx context.Context, ws, clientID string, modelID int64, key []byte, vec []float32) error {
	defer s.record("query cache write", time.Now())
	return s.Store.PutQueryEmbedding(ctx, ws, clientID, modelID, key, vec)
}

// writeStages prints one profile's storage calls: calls per search and
// their wall-clock percentiles (calls of one search may overlap).
func writeStages(w io.Writer, profile string, searches int, times map[string][]time.Duration) error {
	t := newTable("stages of "+profile+" (storage calls, ms; calls of one search may run side by side)",
		"stage", "calls/search", "p50", "p95", "p99", "total/search")
	stages := make([]string, 0, len(times))
	for k := range times {
		stages = append(stages, k)
	}
	slices.Sort(stages)
	for _, k := range stages {
		s := summarize(times[k])
		var sum time.Duration
		for _, d := range times[k] {
			sum += d
		}
		t.add(k, fmt.Sprintf("%.2f", float64(s.N)/float64(max(1, searches))), ms(s.P50), ms(s.P95), ms(s.P99),
			ms(sum/time.Duration(max(1, searches))))
	}
	return t.write(w)
}
