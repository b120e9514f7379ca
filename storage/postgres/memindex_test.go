package postgres_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/google/uuid"
	"github.com/pgvector/pgvector-go"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/storagetest"
)

// TestConformanceMemoryIndex runs the storage conformance suite on a
// store that ranks vector searches on in-memory copies, the default
// workspace's loaded (empty) before the suite writes, so that every search
// of it ranks on the copy (a copy becoming ready between two reads would
// change similarities in the ninth decimal: float64 against pgvector's
// float32 arithmetic).
func TestConformanceMemoryIndex(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) driver.Storage {
		st := openConfigured(t, postgres.Config{MemoryIndex: true})
		if err := st.WarmMemoryIndex(t.Context(), postgram.DefaultWorkspace); err != nil {
			t.Fatal(err)
		}
		return st
	})
}

// memPair opens two stores on one schema, as two processes would: mem
// ranks on in-memory copies, sql asks PostgreSQL.
func memPair(t *testing.T) (mem, sql *postgres.Store) {
	t.Helper()
	st := memStores(t, postgres.Config{MemoryIndex: true}, postgres.Config{})
	return st[0], st[1]
}

// memStores opens a store of each configuration on one new schema.
func memStores(t *testing.T, cfgs ...postgres.Config) []*postgres.Store {
	t.Helper()
	ctx := context.Background()
	url := pgtest.Schema(t)
	var out []*postgres.Store
	for _, cfg := range cfgs {
		cfg.URL, cfg.MaxConns = url, 4
		st, err := postgres.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		out = append(out, st)
	}
	return out
}

// TestMemoryIndexHalf: with MemoryIndexHalf the copy's vectors take
// two-thirds of the memory, and its rankings stay those of PostgreSQL's
// exact float32 ranking (recall@10 at least 0.95, similarities within
// 2·10⁻³ of PostgreSQL's).
func TestMemoryIndexHalf(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := memStores(t, postgres.Config{MemoryIndex: true}, postgres.Config{MemoryIndex: true, MemoryIndexHalf: true}, postgres.Config{},
		postgres.Config{MemoryIndex: true, MemoryIndexCandidates: 60})
	full, half, sql, approx := st[0], st[1], st[2], st[3]
	c, err := postgram.New(ctx, postgram.Config{Store: sql, Embedder: postgramtest.NewEmbedder(storagetest.Dims)})
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields("amber basalt cedar delta ember fjord garnet harbor indigo juniper kelp lagoon " +
		"meadow nectar onyx prairie quartz ridge sierra tundra umber valley willow xenon yarrow zephyr")
	for i := range 300 {
		text := fmt.Sprintf("%s %s %s item %d", words[i%len(words)], words[(i*7+3)%len(words)], words[(i*11+5)%len(words)], i)
		if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: text}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*postgres.Store{full, half, approx} {
		if err := s.WarmMemoryIndex(ctx, "default"); err != nil {
			t.Fatal(err)
		}
	}
	fs, _ := full.MemoryIndexStatus("default")
	hs, _ := half.MemoryIndexStatus("default")
	if hs.Vectors != 300 || fs.Vectors != 300 {
		t.Fatalf("vectors held: half %d, float32 %d, want 300", hs.Vectors, fs.Vectors)
	}
	if !(hs.VectorBytes > 0 && hs.VectorBytes < fs.VectorBytes*3/4) {
		t.Errorf("vector arrays: half %d bytes, float32 %d: want under three quarters", hs.VectorBytes, fs.VectorBytes)
	}
	id, _, _, err := sql.ActiveModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	emb := postgramtest.NewEmbedder(storagetest.Dims)
	found, total, approxFound := 0, 0, 0
	for i := range 30 {
		text := words[i%len(words)] + " " + words[(i*5+1)%len(words)]
		vecs, err := emb.EmbedBatch(ctx, []string{text})
		if err != nil {
			t.Fatal(err)
		}
		q := driver.VectorQuery{ModelID: id, Vector: vecs[0], Limit: 10, Strategy: driver.StrategyExact}
		want, err := sql.VectorSearch(ctx, "default", q)
		if err != nil {
			t.Fatal(err)
		}
		got, err := half.VectorSearch(ctx, "default", q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Plan != "memory" || len(got.Hits) != len(want.Hits) {
			t.Fatalf("%q: plan %q, %d hits; PostgreSQL %d", text, got.Plan, len(got.Hits), len(want.Hits))
		}
		sims := map[uuid.UUID]float64{}
		for _, h := range want.Hits {
			sims[h.ChunkID] = h.Similarity
		}
		for _, h := range got.Hits {
			if s, ok := sims[h.ChunkID]; ok {
				found++
				if d := s - h.Similarity; d > 2e-3 || d < -2e-3 {
					t.Errorf("%q: chunk %s similarity %g in half precision, %g in PostgreSQL", text, h.ChunkID, h.Similarity, s)
				}
			}
		}
		total += len(want.Hits)
		// Sign-code candidates (60 of 300): plan memory_approx, each hit's
		// similarity exact, and an exact request still exact.
		q.Strategy = driver.StrategyAuto
		ap, err := approx.VectorSearch(ctx, "default", q)
		if err != nil {
			t.Fatal(err)
		}
		if ap.Plan != "memory_approx" || len(ap.Hits) != len(want.Hits) {
			t.Fatalf("%q: candidates: plan %q, %d hits", text, ap.Plan, len(ap.Hits))
		}
		exactSims, err := sql.ChunkSimilarities(ctx, "default", id, vecs[0], chunkIDs(ap.Hits))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range ap.Hits {
			if d := exactSims[h.ChunkID] - h.Similarity; d > 1e-6 || d < -1e-6 {
				t.Errorf("%q: candidates: chunk %s similarity %g, PostgreSQL %g", text, h.ChunkID, h.Similarity, exactSims[h.ChunkID])
			}
			if _, ok := sims[h.ChunkID]; ok {
				approxFound++
			}
		}
		q.Strategy = driver.StrategyExact
		if ex, err := approx.VectorSearch(ctx, "default", q); err != nil || ex.Plan != "memory" {
			t.Fatalf("%q: exact request with candidates: plan %q, %v", text, ex.Plan, err)
		}
	}
	recall := float64(found) / float64(total)
	t.Logf("recall@10 against PostgreSQL's exact ranking: %.3f in half precision, %.3f with 60 sign-code candidates of 300",
		recall, float64(approxFound)/float64(total))
	if recall < 0.95 {
		t.Errorf("recall@10 %.3f, want at least 0.95", recall)
	}
	if r := float64(approxFound) / float64(total); r < 0.8 {
		t.Errorf("recall@10 with candidates %.3f, want at least 0.8", r)
	}
}

// TestMemoryIndexSearch: once loaded, the copy answers vector searches
// with PostgreSQL's exact ranking (hits, order, text, update times, and
// similarities to float32 rounding), with plan "memory"; the similarities
// of Also and ChunkSimilarities come from it too.
func TestMemoryIndexSearch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sql := memPair(t)
	c, err := postgram.New(ctx, postgram.Config{Store: sql, Embedder: postgramtest.NewEmbedder(storagetest.Dims)})
	if err != nil {
		t.Fatal(err)
	}
	words := strings.Fields("amber basalt cedar delta ember fjord garnet harbor indigo juniper kelp lagoon " +
		"meadow nectar onyx prairie quartz ridge sierra tundra umber valley willow xenon yarrow zephyr")
	for i := range 200 {
		text := fmt.Sprintf("%s %s %s note %d", words[i%len(words)], words[(i*7+3)%len(words)], words[(i*11+5)%len(words)], i)
		in := postgram.StoreInput{Type: postgram.TypeMemory, Content: text}
		if i%3 == 0 {
			in.Type, in.Tags = postgram.TypeDocument, []string{"third"}
		}
		if _, err := c.Store(ctx, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mem.WarmMemoryIndex(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	id, _, ok, err := sql.ActiveModel(ctx)
	if err != nil || !ok {
		t.Fatalf("active model: %v %v", ok, err)
	}
	emb := postgramtest.NewEmbedder(storagetest.Dims)
	approx := cmpopts.EquateApprox(0, 1e-6)
	for _, tc := range []struct {
		text   string
		filter driver.EntityFilter
	}{
		{"amber cedar", driver.EntityFilter{}},
		{"harbor lagoon meadow", driver.EntityFilter{Tags: []string{"third"}}},
		{"zephyr", driver.EntityFilter{Types: []driver.EntityType{driver.TypeMemory}}},
		{"note 17", driver.EntityFilter{}},
	} {
		vecs, err := emb.EmbedBatch(ctx, []string{tc.text})
		if err != nil {
			t.Fatal(err)
		}
		q := driver.VectorQuery{ModelID: id, Vector: vecs[0], Limit: 12, Filter: tc.filter, Strategy: driver.StrategyExact}
		want, err := sql.VectorSearch(ctx, "default", q)
		if err != nil {
			t.Fatal(err)
		}
		if len(want.Hits) != 12 {
			t.Fatalf("%q: PostgreSQL gave %d hits", tc.text, len(want.Hits))
		}
		q.Also = []uuid.UUID{want.Hits[11].ChunkID, want.Hits[3].ChunkID, uuid.New()}
		got, err := mem.VectorSearch(ctx, "default", q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Plan != "memory" {
			t.Fatalf("%q: plan %q, want memory", tc.text, got.Plan)
		}
		if d := cmp.Diff(want.Hits, got.Hits, approx); d != "" {
			t.Errorf("%q: in-memory ranking differs from PostgreSQL's (-postgres +memory):\n%s", tc.text, d)
		}
		wantSims := map[uuid.UUID]float64{want.Hits[11].ChunkID: want.Hits[11].Similarity, want.Hits[3].ChunkID: want.Hits[3].Similarity}
		if d := cmp.Diff(wantSims, got.Similarities, approx); d != "" {
			t.Errorf("%q: Also similarities (-want +got):\n%s", tc.text, d)
		}
		sims, err := mem.ChunkSimilarities(ctx, "default", id, vecs[0], q.Also)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(wantSims, sims, approx); d != "" {
			t.Errorf("%q: ChunkSimilarities (-want +got):\n%s", tc.text, d)
		}
	}
}

// TestMemoryIndexFollowWrites: every write committed before a search
// began — by another store on the same database, through the library or
// raw SQL — is in the copy that search ranks on, with no wait: new
// vectors, changed vectors, filter attributes, archived and deleted
// entities, and transactions that commit out of the order they began in.
func TestMemoryIndexFollowWrites(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sql := memPair(t)
	const dims = storagetest.Dims
	c, err := postgram.New(ctx, postgram.Config{Store: sql, Embedder: postgramtest.NewEmbedder(dims)})
	if err != nil {
		t.Fatal(err)
	}
	admin := postgramtest.Admin(t, c)
	var ids []uuid.UUID
	for i := range 20 {
		e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: fmt.Sprintf("seed note %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if _, err := admin.EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mem.WarmMemoryIndex(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	model, _, _, err := sql.ActiveModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	randomVec := func() []float32 {
		v := make([]float32, dims)
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		return v
	}
	top := func(v []float32, f driver.EntityFilter) driver.VectorHit {
		t.Helper()
		res, err := mem.VectorSearch(ctx, "default", driver.VectorQuery{ModelID: model, Vector: v, Limit: 3, Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		if res.Plan != "memory" {
			t.Fatalf("plan %q, want memory", res.Plan)
		}
		if len(res.Hits) == 0 {
			return driver.VectorHit{}
		}
		return res.Hits[0]
	}
	chunkOf := func(entity uuid.UUID) uuid.UUID {
		t.Helper()
		var id uuid.UUID
		if err := sql.Pool().QueryRow(ctx, "SELECT id FROM chunks WHERE entity_id = $1 ORDER BY chunk_index LIMIT 1", entity).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}

	// A new entity, stored and embedded by the other store.
	e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "a fresh thought about glaciers", Tags: []string{"ice"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	qv, err := postgramtest.NewEmbedder(dims).EmbedBatch(ctx, []string{"a fresh thought about glaciers"})
	if err != nil {
		t.Fatal(err)
	}
	if h := top(qv[0], driver.EntityFilter{}); h.EntityID != e.ID || h.Similarity < 0.999 {
		t.Fatalf("new entity: top hit %v (%.4f), want %v", h.EntityID, h.Similarity, e.ID)
	}
	// Its tags changed: a filter on the new tag finds it at once.
	tags := []string{"ice", "cold"}
	if _, err := c.Update(ctx, e.ID, postgram.UpdateInput{Version: e.Version, Tags: &tags}); err != nil {
		t.Fatal(err)
	}
	if h := top(qv[0], driver.EntityFilter{Tags: []string{"cold"}}); h.EntityID != e.ID {
		t.Fatalf("retagged entity: top hit %v, want %v", h.EntityID, e.ID)
	}
	// Archived: the default filter no longer admits it.
	if _, err := c.Delete(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	if h := top(qv[0], driver.EntityFilter{}); h.EntityID == e.ID {
		t.Fatal("archived entity still found")
	}

	// Two raw transactions: the first changes a vector and stays open
	// while the second, begun later, changes another and commits.
	x, y := chunkOf(ids[0]), chunkOf(ids[1])
	vx, vy := randomVec(), randomVec()
	tx1, err := sql.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx1.Rollback(ctx)
	if _, err := tx1.Exec(ctx, "UPDATE chunks SET embedding = $1 WHERE id = $2", pgvector.NewVector(vx), x); err != nil {
		t.Fatal(err)
	}
	if _, err := sql.Pool().Exec(ctx, "UPDATE chunks SET embedding = $1 WHERE id = $2", pgvector.NewVector(vy), y); err != nil {
		t.Fatal(err)
	}
	if h := top(vy, driver.EntityFilter{}); h.ChunkID != y || h.Similarity < 0.999 {
		t.Fatalf("committed change: top hit %v (%.4f), want chunk %v", h.ChunkID, h.Similarity, y)
	}
	if h := top(vx, driver.EntityFilter{}); h.ChunkID == x {
		t.Fatal("an uncommitted change is visible")
	}
	if err := tx1.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if h := top(vx, driver.EntityFilter{}); h.ChunkID != x || h.Similarity < 0.999 {
		t.Fatalf("change committed after a later one was read: top hit %v (%.4f), want chunk %v", h.ChunkID, h.Similarity, x)
	}

	// Deleted outright (its chunks cascade).
	if _, err := sql.Pool().Exec(ctx, "DELETE FROM entities WHERE id = $1", ids[0]); err != nil {
		t.Fatal(err)
	}
	if h := top(vx, driver.EntityFilter{}); h.ChunkID == x {
		t.Fatal("a deleted entity's chunk is still found")
	}
}

// TestMemoryIndexWorkspaceReset: deleting a workspace tells the copies
// to load it again, so a workspace re-created under the same name holds
// none of the old vectors.
func TestMemoryIndexWorkspaceReset(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	mem, sql := memPair(t)
	const dims = storagetest.Dims
	if err := sql.CreateWorkspace(ctx, "team", time.Now()); err != nil {
		t.Fatal(err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: sql, Embedder: postgramtest.NewEmbedder(dims), Workspace: "team"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "a note that will go"}); err != nil {
		t.Fatal(err)
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	if err := mem.WarmMemoryIndex(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	model, _, _, err := sql.ActiveModel(ctx)
	if err != nil {
		t.Fatal(err)
	}
	qv, err := postgramtest.NewEmbedder(dims).EmbedBatch(ctx, []string{"a note that will go"})
	if err != nil {
		t.Fatal(err)
	}
	q := driver.VectorQuery{ModelID: model, Vector: qv[0], Limit: 3}
	res, err := mem.VectorSearch(ctx, "team", q)
	if err != nil || res.Plan != "memory" || len(res.Hits) != 1 {
		t.Fatalf("before: %+v %v", res, err)
	}
	if _, err := sql.DeleteWorkspace(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	if err := sql.CreateWorkspace(ctx, "team", time.Now()); err != nil {
		t.Fatal(err)
	}
	// The first search after the reset finds the copy loading (and asks
	// PostgreSQL); once loaded, the copy is empty.
	res, err = mem.VectorSearch(ctx, "team", q)
	if err != nil || len(res.Hits) != 0 {
		t.Fatalf("after the reset: %+v %v", res, err)
	}
	if err := mem.WarmMemoryIndex(ctx, "team"); err != nil {
		t.Fatal(err)
	}
	res, err = mem.VectorSearch(ctx, "team", q)
	if err != nil || res.Plan != "memory" || len(res.Hits) != 0 {
		t.Fatalf("loaded again: %+v %v", res, err)
	}
}

func chunkIDs(hits []driver.VectorHit) []uuid.UUID {
	ids := make([]uuid.UUID, len(hits))
	for i, h := range hits {
		ids[i] = h.ChunkID
	}
	return ids
}
