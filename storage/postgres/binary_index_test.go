package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/storagetest"
)

func openBinary(t *testing.T, rerank int) *postgres.Store {
	t.Helper()
	return openConfigured(t, postgres.Config{VectorIndex: postgres.VectorIndexBinary, RerankCandidates: rerank})
}

// TestConformanceBinaryIndex runs the storage conformance suite on a store
// whose vector index is the binary-quantised one.
func TestConformanceBinaryIndex(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) driver.Storage { return openBinary(t, 0) })
}

// TestBinaryIndexSearch: a store configured with VectorIndexBinary creates
// the Hamming index (and no float HNSW index), its ANN plan walks it, and
// the candidates it takes are ranked by their full vectors: with more
// rerank candidates than chunks the ANN answer is exactly the exact
// ranking, order and similarities included.
func TestBinaryIndexSearch(t *testing.T) {
	t.Parallel()
	// 64 dimensions, and 2,560: more than the float HNSW index takes
	// (2,000), which ranks such a model exactly.
	for _, dims := range []int{storagetest.Dims, 2560} {
		t.Run(fmt.Sprint(dims), func(t *testing.T) {
			t.Parallel()
			testBinaryIndexSearch(t, dims)
		})
	}
}

func testBinaryIndexSearch(t *testing.T, dims int) {
	ctx := t.Context()
	st := openBinary(t, 300)
	c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(dims)})
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields("amber basalt cedar delta ember fjord garnet harbor indigo juniper kelp lagoon " +
		"meadow nectar onyx prairie quartz ridge sierra tundra umber valley willow xenon yarrow zephyr")
	for i := range 240 {
		text := fmt.Sprintf("%s %s %s note %d", words[i%len(words)], words[(i*7+3)%len(words)], words[(i*11+5)%len(words)], i)
		if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	id, _, ok, err := st.ActiveModel(ctx)
	if err != nil || !ok {
		t.Fatalf("active model: %v %v", ok, err)
	}
	var bq, hnsw bool
	err = st.Pool().QueryRow(ctx, `SELECT to_regclass(current_schema() || '.chunks_embedding_bq_m' || $1::bigint) IS NOT NULL,
		to_regclass(current_schema() || '.chunks_embedding_hnsw_m' || $1::bigint) IS NOT NULL`, id).Scan(&bq, &hnsw)
	if err != nil {
		t.Fatal(err)
	}
	if !bq || hnsw {
		t.Fatalf("binary index exists %v, float HNSW index exists %v; want true, false", bq, hnsw)
	}

	emb := postgramtest.NewEmbedder(dims)
	for _, text := range []string{"amber cedar", "harbor lagoon meadow", "zephyr", "note 17"} {
		vecs, err := emb.EmbedBatch(ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		q := driver.VectorQuery{ModelID: id, Vector: vecs[0], Limit: 10}
		q.Strategy = driver.StrategyHNSW
		ann, err := st.VectorSearch(ctx, "default", q)
		if err != nil {
			t.Fatal(err)
		}
		if ann.Plan != "hnsw" {
			t.Fatalf("%q: plan %q, want hnsw", text, ann.Plan)
		}
		q.Strategy = driver.StrategyExact
		exact, err := st.VectorSearch(ctx, "default", q)
		if err != nil {
			t.Fatal(err)
		}
		if len(exact.Hits) != 10 {
			t.Fatalf("%q: exact ranking gave %d hits", text, len(exact.Hits))
		}
		if diff := cmp.Diff(exact.Hits, ann.Hits); diff != "" {
			t.Errorf("%q: ANN over the binary index differs from exact ranking (-exact +ann):\n%s", text, diff)
		}
		plan, err := st.ExplainVector(ctx, "default", q, "hnsw")
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(plan, "chunks_embedding_bq_m") {
			t.Fatalf("%q: the ANN plan does not use the binary index:\n%s", text, plan)
		}
	}
}

// TestVectorIndexConfig: an unknown index kind or too many rerank
// candidates is refused at Open, naming the setting.
func TestVectorIndexConfig(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.Schema(t)
	for _, tc := range []struct {
		cfg   postgres.Config
		field string
	}{
		{postgres.Config{URL: url, VectorIndex: "ivfflat"}, "vector_index"},
		{postgres.Config{URL: url, VectorIndex: postgres.VectorIndexBinary, RerankCandidates: 1001}, "rerank_candidates"},
	} {
		st, err := postgres.Open(ctx, tc.cfg)
		if err == nil {
			st.Close()
			t.Fatalf("%+v: opened", tc.cfg)
		}
		var fe *driver.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Fatalf("%+v: error %v, want a field error on %s", tc.cfg, err, tc.field)
		}
	}
}

// TestVectorIndexNone: a store configured with VectorIndexNone drops the
// vector index another store built for the model when it meets the model,
// and its searches asked for an ANN plan rank exactly, with the same hits
// as exact ranking.
func TestVectorIndexNone(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	hnsw := openStore(t)
	c, err := postgram.New(ctx, postgram.Config{Store: hnsw, Embedder: postgramtest.NewEmbedder(storagetest.Dims)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		text := fmt.Sprintf("note %d about %s", i, []string{"granite", "harbor", "lantern", "meadow"}[i%4])
		if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	id, _, ok, err := hnsw.ActiveModel(ctx)
	if err != nil || !ok {
		t.Fatalf("active model: %v %v", ok, err)
	}
	indexed := func() bool {
		t.Helper()
		var exists bool
		if err := hnsw.Pool().QueryRow(ctx, `SELECT to_regclass(current_schema() || '.chunks_embedding_hnsw_m' || $1::bigint) IS NOT NULL`,
			id).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		return exists
	}
	if !indexed() {
		t.Fatal("the default store built no HNSW index")
	}

	none, err := postgres.Open(ctx, postgres.Config{URL: hnsw.Pool().Config().ConnString(), VectorIndex: postgres.VectorIndexNone})
	if err != nil {
		t.Fatal(err)
	}
	defer none.Close()
	if _, err := postgram.New(ctx, postgram.Config{Store: none, Embedder: postgramtest.NewEmbedder(storagetest.Dims)}); err != nil {
		t.Fatal(err)
	}
	if indexed() {
		t.Fatal("a store with vector_index none left the HNSW index in place")
	}

	vecs, err := postgramtest.NewEmbedder(storagetest.Dims).EmbedBatch(ctx, []string{"harbor lantern"})
	if err != nil {
		t.Fatal(err)
	}
	q := driver.VectorQuery{ModelID: id, Vector: vecs[0], Limit: 10, Strategy: driver.StrategyExact}
	exact, err := none.VectorSearch(ctx, "default", q)
	if err != nil {
		t.Fatal(err)
	}
	if len(exact.Hits) != 10 {
		t.Fatalf("exact ranking gave %d hits", len(exact.Hits))
	}
	for _, strategy := range []driver.Strategy{driver.StrategyHNSW, driver.StrategyAuto} {
		q.Strategy = strategy
		got, err := none.VectorSearch(ctx, "default", q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Plan != "exact" {
			t.Errorf("strategy %q: plan %q, want exact (no index)", strategy, got.Plan)
		}
		if diff := cmp.Diff(exact.Hits, got.Hits); diff != "" {
			t.Errorf("strategy %q: hits differ from exact ranking (-exact +got):\n%s", strategy, diff)
		}
	}
}
