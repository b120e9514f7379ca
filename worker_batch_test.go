package postgram_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/hashing"
	"github.com/postgram-go/postgram/storage/sqlite"
)

// countingEmbedder records the size of every provider call.
type countingEmbedder struct {
	*hashing.Embedder
	mu    sync.Mutex
	calls []int
}

func (e *countingEmbedder) EmbedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	e.mu.Lock()
	e.calls = append(e.calls, len(texts))
	e.mu.Unlock()
	return e.Embedder.EmbedBatch(ctx, texts)
}

func (e *countingEmbedder) sizes() []int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]int(nil), e.calls...)
}

// TestWorkerBatchWait: writes that arrive within BatchWait of a loop's
// last claim are claimed and embedded together, once the wait is over;
// with no wait each is claimed as soon as it wakes the worker.
func TestWorkerBatchWait(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		wait time.Duration
	}{{"wait", time.Second}, {"no wait", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			store, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "postgram.db")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { store.Close() })
			if err := store.Migrate(ctx); err != nil {
				t.Fatal(err)
			}
			emb := &countingEmbedder{Embedder: hashing.New(64)}
			client, err := postgram.New(ctx, postgram.Config{Store: store, Embedder: emb,
				Worker: postgram.WorkerConfig{Concurrency: 1, BatchWait: tc.wait}})
			if err != nil {
				t.Fatal(err)
			}
			if err := client.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { client.Stop(context.Background()) })
			waitEmbedded := func(n int) {
				t.Helper()
				deadline := time.Now().Add(20 * time.Second)
				for {
					st, err := client.QueueStatus(ctx, 0)
					if err != nil {
						t.Fatal(err)
					}
					if st.Embedding.Completed == n {
						return
					}
					if time.Now().After(deadline) {
						t.Fatalf("%d of %d entities embedded after 20 s", st.Embedding.Completed, n)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			store1 := func(text string) {
				t.Helper()
				if _, err := client.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: text}); err != nil {
					t.Fatal(err)
				}
			}
			store1("the first write is claimed at once")
			waitEmbedded(1)
			start := time.Now()
			for _, s := range []string{"alpha", "beta", "gamma", "delta", "epsilon"} {
				store1("a burst of writes: " + s)
				time.Sleep(20 * time.Millisecond) // each wakes the worker
			}
			burst := time.Since(start)
			waitEmbedded(6)
			calls := emb.sizes()
			t.Logf("provider calls: %v (burst of five in %v)", calls, burst)
			if calls[0] != 1 {
				t.Fatalf("first call embedded %d texts, want 1", calls[0])
			}
			switch {
			case tc.wait > 0 && burst < tc.wait/2 && len(calls) != 2:
				t.Errorf("with BatchWait %v the burst took %d calls %v, want one", tc.wait, len(calls)-1, calls[1:])
			case tc.wait < 0 && len(calls) < 4:
				t.Errorf("with no wait the burst (20 ms apart) took %d calls %v, want one per write or nearly", len(calls)-1, calls[1:])
			}
		})
	}
}
