package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/sqlite"
)

const dims = 64

func newClient(t testing.TB, st driver.Storage, emb postgram.Embedder, mod ...func(*postgram.Config)) *postgram.Client {
	t.Helper()
	cfg := postgram.Config{Store: st, Embedder: emb}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := postgram.New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("postgram.New: %v", err)
	}
	return c
}

func fileBytes(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func noSidecars(t *testing.T, path string) {
	t.Helper()
	for _, s := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Stat(path + s); err == nil {
			t.Errorf("opening a refused file created %s", path+s)
		}
	}
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()

	t.Run("EmptyPath", func(t *testing.T) {
		_, err := sqlite.Open(ctx, sqlite.Config{})
		if !errors.Is(err, postgram.ErrInvalidArgument) || driver.FieldOf(err) != "path" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("DirectoryCannotBeCreated", func(t *testing.T) {
		file := filepath.Join(dir, "a-file")
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(file, "sub", "postgram.db")})
		if err == nil || !strings.Contains(err.Error(), "cannot create the directory") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("PathIsADirectory", func(t *testing.T) {
		_, err := sqlite.Open(ctx, sqlite.Config{Path: dir})
		if err == nil || !strings.Contains(err.Error(), "is a directory") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("NotADatabase", func(t *testing.T) {
		path := filepath.Join(dir, "notes.txt")
		content := []byte(strings.Repeat("these are my precious notes, not a database\n", 100))
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err == nil || !strings.Contains(err.Error(), "not a SQLite database") {
			t.Fatalf("err = %v", err)
		}
		if !bytes.Equal(fileBytes(t, path), content) {
			t.Fatal("the refused file was modified")
		}
		noSidecars(t, path)
	})
	t.Run("ForeignSQLiteDatabase", func(t *testing.T) {
		path := filepath.Join(dir, "other-app.db")
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("CREATE TABLE things (x TEXT); INSERT INTO things VALUES ('mine')"); err != nil {
			t.Fatal(err)
		}
		db.Close()
		before := fileBytes(t, path)
		_, err = sqlite.Open(ctx, sqlite.Config{Path: path})
		if err == nil || !strings.Contains(err.Error(), "not a Postgram store") {
			t.Fatalf("err = %v", err)
		}
		if !bytes.Equal(fileBytes(t, path), before) {
			t.Fatal("the foreign database was modified")
		}
		noSidecars(t, path)
	})
	t.Run("NewerSchema", func(t *testing.T) {
		path := filepath.Join(dir, "future.db")
		st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		st.Close()
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec("PRAGMA user_version = 99"); err != nil {
			t.Fatal(err)
		}
		db.Close()
		before := fileBytes(t, path)
		_, err = sqlite.Open(ctx, sqlite.Config{Path: path})
		if err == nil || !strings.Contains(err.Error(), "newer Postgram") || !strings.Contains(err.Error(), "99") {
			t.Fatalf("err = %v", err)
		}
		if !bytes.Equal(fileBytes(t, path), before) {
			t.Fatal("the newer database was modified")
		}
	})
	t.Run("EmptyFileIsNew", func(t *testing.T) {
		path := filepath.Join(dir, "empty.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if err := st.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("UnmigratedStore", func(t *testing.T) {
		st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "unmigrated.db")})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.VectorSearch(ctx, "default", driver.VectorQuery{Vector: []float32{1}}); err == nil {
			t.Fatal("search before Migrate should fail")
		}
	})
}

func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	st := openAt(t, path)
	for range 2 {
		if err := st.Migrate(ctx); err != nil {
			t.Fatalf("migrate again: %v", err)
		}
	}
	cur, latest, err := st.SchemaVersion(ctx)
	if err != nil || cur != latest || cur < 1 {
		t.Fatalf("schema version %d of %d: %v", cur, latest, err)
	}
	// Concurrent migrations from two stores (as two processes would).
	path2 := filepath.Join(t.TempDir(), "m2.db")
	a, err := sqlite.Open(ctx, sqlite.Config{Path: path2})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlite.Open(ctx, sqlite.Config{Path: path2})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, s := range []*sqlite.Store{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = s.Migrate(ctx) }()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// TestPersistence closes and reopens a store: entities, chunks and
// embeddings survive, the vector index is rebuilt and answers the same.
func TestPersistence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "persist.db")
	emb := postgramtest.NewEmbedder(dims)
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, st, emb)
	var ids []uuid.UUID
	for i := range 60 {
		e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeDocument, Content: fmt.Sprintf("persistent note %d about topic %d and the word zebra%d", i, i%5, i%3),
			Tags: []string{fmt.Sprint("t", i%4)}, Metadata: map[string]any{"i": i}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	reqs := []postgram.SearchRequest{
		{Query: "persistent topic 3", Limit: 20},
		{Query: "zebra1", Limit: 20, Tags: []string{"t1"}},
		{Query: "note about topic", Limit: 50, Threshold: new(0.0)},
	}
	before := make([]*postgram.SearchResponse, len(reqs))
	for i, r := range reqs {
		if before[i], err = c.Search(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	stats1, err := st.Stats(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st2, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	if err := st2.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c2 := newClient(t, st2, emb)
	stats2, err := st2.Stats(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	if stats2.Entities != 60 || stats2.Chunks != stats1.Chunks || stats2.EmbeddedChunks != stats1.EmbeddedChunks || stats2.EmbeddedChunks == 0 {
		t.Fatalf("after reopen: %+v, before %+v", stats2, stats1)
	}
	for _, id := range ids {
		if _, err := c2.Recall(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	for i, r := range reqs {
		after, err := c2.Search(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if len(after.Results) == 0 || len(after.Results) != len(before[i].Results) {
			t.Fatalf("%q: %d results after reopen, %d before", r.Query, len(after.Results), len(before[i].Results))
		}
		for j := range after.Results {
			a, b := after.Results[j], before[i].Results[j]
			if a.Entity.ID != b.Entity.ID || a.VectorRank != b.VectorRank || a.KeywordRank != b.KeywordRank || *a.Similarity != *b.Similarity {
				t.Fatalf("%q #%d differs after reopen: %+v vs %+v", r.Query, j, a, b)
			}
		}
		if after.Stats.VectorCandidates == 0 {
			t.Fatalf("%q: the rebuilt index returned no vector candidates", r.Query)
		}
	}
}

// TestTwoProcessesShareTheIndex opens two stores on one file, as two
// processes would: each store's vector index follows the other's writes.
func TestTwoProcessesShareTheIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	emb := postgramtest.NewEmbedder(dims)
	a, b := openAt(t, path), openAt(t, path)
	ca, cb := newClient(t, a, emb), newClient(t, b, emb)
	// b has searched (and loaded its index) before a writes.
	if _, err := cb.Search(ctx, postgram.SearchRequest{Query: "warmup"}); err != nil {
		t.Fatal(err)
	}
	e, err := ca.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "the okapi lives in the rainforest"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := postgramtest.Admin(t, ca).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := cb.Search(ctx, postgram.SearchRequest{Query: "okapi rainforest", Threshold: new(1.0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 1 || r.Results[0].VectorRank != 1 {
		t.Fatalf("the other process's embedding is not searchable: %+v", r.Results)
	}
	// Re-chunking through a replaces the vectors b ranks.
	c := "the quokka lives on an island"
	if _, err := ca.Update(ctx, e.ID, postgram.UpdateInput{Version: 1, Content: &c}); err != nil {
		t.Fatal(err)
	}
	r, _ = cb.Search(ctx, postgram.SearchRequest{Query: "okapi rainforest", Threshold: new(0.0)})
	if len(r.Results) != 0 || r.Stats.VectorCandidates != 0 {
		t.Fatalf("old vectors still ranked after re-chunking: %+v", r.Stats)
	}
	if _, err := postgramtest.Admin(t, cb).EnrichPending(ctx); err != nil { // b embeds now
		t.Fatal(err)
	}
	r, _ = ca.Search(ctx, postgram.SearchRequest{Query: "quokka island"})
	if len(r.Results) != 1 || r.Results[0].VectorRank != 1 {
		t.Fatalf("a does not see b's embedding: %+v", r.Results)
	}
	// Archiving through b hides it from a's vector branch.
	if _, err := cb.Delete(ctx, e.ID); err != nil {
		t.Fatal(err)
	}
	r, _ = ca.Search(ctx, postgram.SearchRequest{Query: "quokka island", Threshold: new(0.0)})
	if r.Stats.VectorCandidates != 0 {
		t.Fatalf("archived entity still a vector candidate: %+v", r.Stats)
	}
	r, _ = ca.Search(ctx, postgram.SearchRequest{Query: "quokka island", IncludeArchived: true})
	if len(r.Results) != 1 || r.Results[0].VectorRank != 1 {
		t.Fatalf("include_archived: %+v", r.Results)
	}
}

// TestKeywordIndexFollowsAndReloads: another process's new chunk is found
// by keyword at once, before any embedding, and a process whose unseen
// change_log entries were pruned reloads its index instead of missing them.
func TestKeywordIndexFollowsAndReloads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	emb := postgramtest.NewEmbedder(dims)
	a, b := openAt(t, path), openAt(t, path)
	ca, cb := newClient(t, a, emb), newClient(t, b, emb)
	if _, err := cb.Search(ctx, postgram.SearchRequest{Query: "warmup"}); err != nil {
		t.Fatal(err)
	}
	find := func(c *postgram.Client, q string) []postgram.SearchResult {
		t.Helper()
		r, err := c.Search(ctx, postgram.SearchRequest{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		return r.Results
	}
	e1, err := ca.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "a pangolin rolls into a ball"})
	if err != nil {
		t.Fatal(err)
	}
	if r := find(cb, "pangolin ball"); len(r) != 1 || r[0].Entity.ID != e1.ID || r[0].KeywordRank != 1 || r[0].ChunkContent == "" {
		t.Fatalf("the other process's new chunk is not found by keyword: %+v", r)
	}
	// b stops following while a writes; then the entries b never saw are
	// pruned, as pruneChangeLog does for a process far behind.
	e2, err := ca.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "a narwhal has one long tusk"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Delete(ctx, e1.ID); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec("DELETE FROM change_log WHERE seq < (SELECT max(seq) FROM change_log)"); err != nil {
		t.Fatal(err)
	}
	if r := find(cb, "narwhal tusk"); len(r) != 1 || r[0].Entity.ID != e2.ID {
		t.Fatalf("after the log was pruned, b misses a's chunk: %+v", r)
	}
	if r := find(cb, "pangolin ball"); len(r) != 0 {
		t.Fatalf("after the log was pruned, b still finds the entity a archived: %+v", r)
	}
}

// TestConcurrentWritesFailAlone: concurrent updates of one entity at the
// same version race in the store: exactly one wins and the others fail
// with a conflict that changes nothing, while the stores and winning
// updates around them all persist; a write whose context has ended is not
// run.
func TestConcurrentWritesFailAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Durable commits (an fsync each) make the writes queue up.
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "race.db"), Durable: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, st, nil)
	const n, racers = 30, 3
	targets := make([]*postgram.Entity, n)
	for i := range targets {
		e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: fmt.Sprintf("target %d", i)})
		if err != nil {
			t.Fatal(err)
		}
		targets[i] = e
	}
	var wg sync.WaitGroup
	updErrs := make([][racers]error, n)
	storeErrs := make([]error, n)
	for i := range n {
		for j := range racers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				content := fmt.Sprintf("updated %d by %d", i, j)
				_, updErrs[i][j] = c.Update(ctx, targets[i].ID, postgram.UpdateInput{Version: 1, Content: &content})
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, storeErrs[i] = c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: fmt.Sprintf("fresh %d", i)})
		}()
	}
	wg.Wait()
	for i := range n {
		if storeErrs[i] != nil {
			t.Fatalf("store %d failed beside conflicting updates: %v", i, storeErrs[i])
		}
		winner := -1
		for j, err := range updErrs[i] {
			switch {
			case err == nil && winner < 0:
				winner = j
			case err == nil:
				t.Fatalf("target %d: two updates at version 1 both succeeded", i)
			case !errors.Is(err, postgram.ErrConflict):
				t.Fatalf("target %d, update %d: %v, want a conflict", i, j, err)
			}
		}
		if winner < 0 {
			t.Fatalf("target %d: no update succeeded: %v", i, updErrs[i])
		}
		e, err := c.Recall(ctx, targets[i].ID)
		if err != nil || e.Version != 2 || e.Content != fmt.Sprintf("updated %d by %d", i, winner) {
			t.Fatalf("target %d after the writes: %v %+v", i, err, e)
		}
	}
	page, err := c.List(ctx, postgram.ListOptions{Limit: 100})
	if err != nil || len(page.Items) != 2*n {
		t.Fatalf("entities after the writes: %v, %d, want %d", err, len(page.Items), 2*n)
	}
	// A write whose context has ended is not run.
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Store(done, postgram.StoreInput{Type: postgram.TypeMemory, Content: "never"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("store with a canceled context: %v", err)
	}
	page, _ = c.List(ctx, postgram.ListOptions{Limit: 100})
	if len(page.Items) != 2*n {
		t.Fatalf("a canceled store was written: %d entities", len(page.Items))
	}
}

// TestKeyCacheFollowsOtherProcesses: a process that verified (and cached)
// a key refuses it on its next request once another process revoked it,
// and keeps accepting other keys.
func TestKeyCacheFollowsOtherProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keys.db")
	a, b := openAt(t, path), openAt(t, path)
	ca, cb := newClient(t, a, nil), newClient(t, b, nil)
	token, key, err := postgramtest.Admin(t, ca).CreateKey(ctx, postgram.KeySpec{Name: "shared", Scopes: postgram.AllScopes})
	if err != nil {
		t.Fatal(err)
	}
	keep, _, err := postgramtest.Admin(t, ca).CreateKey(ctx, postgram.KeySpec{Name: "kept", Scopes: postgram.AllScopes})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		for _, tok := range []string{token, keep} {
			if _, err := postgramtest.Admin(t, cb).Authenticate(ctx, tok); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Unrelated writes do not matter; the revocation does, at once.
	if _, err := ca.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "unrelated"}); err != nil {
		t.Fatal(err)
	}
	if _, err := postgramtest.Admin(t, cb).Authenticate(ctx, token); err != nil {
		t.Fatal(err)
	}
	if err := postgramtest.Admin(t, ca).RevokeKey(ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := postgramtest.Admin(t, cb).Authenticate(ctx, token); !errors.Is(err, postgram.ErrUnauthorized) {
		t.Fatalf("the other process accepted a revoked key: %v", err)
	}
	if _, err := postgramtest.Admin(t, cb).Authenticate(ctx, keep); err != nil {
		t.Fatalf("another key was refused after a revocation: %v", err)
	}
}

// TestSearchSeesEveryReturnedWrite: with searches sharing freshness checks,
// a search started after a write returned (in this process or another)
// still finds it by keyword, however many searches run at once.
func TestSearchSeesEveryReturnedWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fresh.db")
	a, b := openAt(t, path), openAt(t, path)
	ca, cb := newClient(t, a, nil), newClient(t, b, nil)
	const writes, searchers = 60, 6
	var wg sync.WaitGroup
	errs := make(chan error, writes*searchers)
	for i := range writes {
		w := ca
		if i%2 == 1 {
			w = cb // the other process writes every other one
		}
		word := fmt.Sprintf("zq%dword", i)
		if _, err := w.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "note " + word}); err != nil {
			t.Fatal(err)
		}
		for j := range searchers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := ca
				if j%2 == 1 {
					c = cb
				}
				r, err := c.Search(ctx, postgram.SearchRequest{Query: word})
				switch {
				case err != nil:
					errs <- err
				case len(r.Results) != 1:
					errs <- fmt.Errorf("write %d not found by a search started after it returned: %d results", i, len(r.Results))
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestConcurrentWritesAndSearches: many goroutines storing, updating and
// searching at once, through two stores on one file (two processes), with
// the background worker embedding meanwhile, never see an error — in
// particular never "database is locked".
func TestConcurrentWritesAndSearches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "busy.db")
	emb := postgramtest.NewEmbedder(dims)
	stores := []*sqlite.Store{openAt(t, path), openAt(t, path)}
	clients := make([]*postgram.Client, len(stores))
	for i, st := range stores {
		clients[i] = newClient(t, st, emb)
		wctx, cancel := context.WithCancel(ctx)
		if err := clients[i].Start(wctx); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); clients[i].Stop(context.Background()) }()
	}
	const goroutines, ops = 16, 200
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[g%len(clients)]
			r := rand.New(rand.NewPCG(uint64(g), 1))
			var mine []*postgram.Entity
			for i := range ops {
				var err error
				switch op := r.IntN(10); {
				case op < 4 || len(mine) == 0:
					var e *postgram.Entity
					e, err = c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory,
						Content: fmt.Sprintf("goroutine %d note %d about subject%d and ABC-%d", g, i, r.IntN(20), r.IntN(100))})
					if err == nil {
						mine = append(mine, e)
					}
				case op < 6:
					k := r.IntN(len(mine))
					content := fmt.Sprintf("goroutine %d revised note %d about subject%d", g, i, r.IntN(20))
					var e *postgram.Entity
					e, err = c.Update(ctx, mine[k].ID, postgram.UpdateInput{Version: mine[k].Version, Content: &content})
					if err == nil {
						mine[k] = e
					}
				default:
					// One search in four has a term in every chunk ("note"),
					// which takes the per-term fallback.
					q := fmt.Sprintf("subject%d ABC-%d", r.IntN(20), r.IntN(100))
					if op == 9 {
						q += " note"
					}
					_, err = c.Search(ctx, postgram.SearchRequest{Query: q})
				}
				if err != nil {
					errs <- fmt.Errorf("goroutine %d op %d: %w", g, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if strings.Contains(err.Error(), "locked") || strings.Contains(err.Error(), "busy") {
			t.Errorf("lock error surfaced: %v", err)
		} else {
			t.Error(err)
		}
	}
	// The workers (still running) embed everything that was written.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := stores[1].Stats(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		if st.Chunks > 0 && st.EmbeddedChunks == st.Chunks {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the storm the workers did not embed everything: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	var bad string
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&bad); err != nil || bad != "ok" {
		t.Fatalf("integrity_check: %v %s", err, bad)
	}
}

// TestTermFrequencies checks the statistics the per-term fallback orders
// terms by: exact, per workspace, updated by rewrites, and used so that the
// rarer term's chunks all reach the pool (as on PostgreSQL after ANALYZE).
func TestTermFrequencies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	if _, ok, err := st.TermFrequencies(ctx, "default", []string{"x"}); ok || err != nil {
		t.Fatalf("empty workspace: ok %v err %v", ok, err)
	}
	c := newClient(t, st, nil)
	other := newClient(t, st, nil, func(c *postgram.Config) { c.Workspace = "other" })
	var first *postgram.Entity
	for i := 0; i < 230; i++ {
		content := fmt.Sprintf("common filler document %d", i)
		if i < 3 {
			content += " rare"
		}
		e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = e
		}
		// Another workspace full of "rare" must not change this one's counts.
		if _, err := other.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "rare rare"}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: fmt.Sprintf("rare standalone %d, rare again and rare once more", i)}); err != nil {
			t.Fatal(err)
		}
	}
	freqs, ok, err := st.TermFrequencies(ctx, "default", []string{"common", "rare", "ABC-1234", "common-rare", "---"})
	if err != nil || !ok {
		t.Fatalf("TermFrequencies: %v %v", ok, err)
	}
	want := []float64{230.0 / 232, 5.0 / 232, 0, 0, 0} // common-rare: its lexemes (with the compound) are in no chunk together
	for i := range want {
		if math.Abs(freqs[i]-want[i]) > 1e-12 {
			t.Fatalf("frequencies %v, want %v", freqs, want)
		}
	}
	r, err := c.Search(ctx, postgram.SearchRequest{Query: "common rare", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	rare := 0
	for _, x := range r.Results {
		if strings.Contains(x.ChunkContent, "rare") {
			rare++
		}
	}
	if r.Stats.KeywordProbe != "per_term" || r.Stats.KeywordPool != 200 || rare != 5 {
		t.Fatalf("probe %s pool %d, %d of 5 rare chunks", r.Stats.KeywordProbe, r.Stats.KeywordPool, rare)
	}
	// Rewriting a chunk moves the counts.
	content := "common filler rewritten"
	if _, err := c.Update(ctx, first.ID, postgram.UpdateInput{Version: 1, Content: &content}); err != nil {
		t.Fatal(err)
	}
	freqs, _, _ = st.TermFrequencies(ctx, "default", []string{"rare", "rewritten"})
	if math.Abs(freqs[0]-4.0/232) > 1e-12 || math.Abs(freqs[1]-1.0/232) > 1e-12 {
		t.Fatalf("after a rewrite: %v", freqs)
	}
}

// TestLargeBacklogReloads: a process far behind the change log (another
// process restored or imported in bulk) loads its index again instead of
// applying every entry, and finds what the other process wrote.
func TestLargeBacklogReloads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	emb := postgramtest.NewEmbedder(dims)
	var logs strings.Builder
	var mu sync.Mutex
	b, err := sqlite.Open(ctx, sqlite.Config{Path: path, Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	a := openAt(t, path)
	ca, cb := newClient(t, a, emb), newClient(t, b, emb)
	if _, err := ca.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "a first note"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Search(ctx, postgram.SearchRequest{Query: "first note"}); err != nil {
		t.Fatal(err)
	}
	// The change log's numbering jumps as if 30,000 changes had happened
	// since b last looked.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if res, err := raw.Exec("UPDATE sqlite_sequence SET seq = seq + 30000 WHERE name = 'change_log'"); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("change_log's sequence: %d rows", n)
	}
	e, err := ca.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "an axolotl regrows its limbs"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := cb.Search(ctx, postgram.SearchRequest{Query: "axolotl limbs"})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Results) != 1 || r.Results[0].Entity.ID != e.ID {
		t.Fatalf("after a large backlog, b misses a's entity: %+v", r.Results)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logs.String(), "loading it again") {
		t.Fatalf("b did not reload its index; log:\n%s", logs.String())
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
