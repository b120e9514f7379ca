package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
)

func TestRetryAborted(t *testing.T) {
	t.Parallel()
	deadlock := fmt.Errorf("update entity: %w", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"})
	serial := &pgconn.PgError{Code: "40001", Message: "could not serialize access"}
	other := &pgconn.PgError{Code: "23505", Message: "duplicate key"}
	for _, tc := range []struct {
		name      string
		errs      []error // what each run returns
		cancelled bool
		runs      int
		want      error
	}{
		{name: "success", errs: []error{nil}, runs: 1},
		{name: "deadlock then success", errs: []error{deadlock, nil}, runs: 2},
		{name: "serialization failure then success", errs: []error{serial, nil}, runs: 2},
		{name: "retried once only", errs: []error{deadlock, deadlock, nil}, runs: 2, want: deadlock},
		{name: "other errors are not retried", errs: []error{other, nil}, runs: 1, want: other},
		{name: "not after cancellation", errs: []error{deadlock, nil}, cancelled: true, runs: 1, want: deadlock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &Store{log: slog.New(slog.DiscardHandler)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelled {
				cancel()
			}
			runs := 0
			err := s.retryAborted(ctx, func() error {
				runs++
				return tc.errs[runs-1]
			})
			if runs != tc.runs || !errors.Is(err, tc.want) {
				t.Fatalf("%d runs, err %v; want %d runs, err %v", runs, err, tc.runs, tc.want)
			}
		})
	}
	// An abort that persists reaches the caller as ErrUnavailable (503),
	// with a public message that does not carry the server's text (which
	// stays in the error for logs).
	err := mapErr(deadlock)
	var be *postgram.BackendError
	if !errors.Is(err, postgram.ErrUnavailable) || !errors.As(err, &be) || strings.Contains(be.Public, "deadlock detected") {
		t.Fatalf("mapErr(deadlock) = %v", err)
	}
}

// TestLockOrderWriteVsEmbedding starts a content update (the entity row,
// then its chunks) and the worker's recording of embeddings for the same
// entity at the same instant, hundreds of times over several entities.
// With both taking the entity row before the chunk rows, PostgreSQL never
// has to abort either to break a deadlock: the retry is not needed. (Before,
// CompleteEmbedding updated the chunks first and deadlocked within a few
// rounds.)
func TestLockOrderWriteVsEmbedding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(ctx, Config{URL: pgtest.Schema(t), MaxConns: 8})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	const dims = 8
	text := func(i, round int) string {
		return strings.Repeat(fmt.Sprintf("entity %d round %d lorem ipsum dolor sit amet. ", i, round), 4)
	}

	// Between least and rounds per entity: past the budget (the race
	// detector or a loaded machine slows the rounds down) only the least.
	const entities, least, rounds, budget = 4, 25, 250, 3 * time.Second
	deadline := time.Now().Add(budget)
	var raced atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 2*entities*rounds)
	for i := range entities {
		// One workspace per entity, so each goroutine claims its own.
		ws := fmt.Sprintf("race%d", i)
		c, err := postgram.New(ctx, postgram.Config{Store: st, Workspace: ws, Embedder: postgramtest.NewEmbedder(dims),
			Chunking: postgram.ChunkingConfig{Size: 40, Overlap: -1}})
		if err != nil {
			t.Fatal(err)
		}
		modelID, _, ok, err := st.ActiveModel(ctx)
		if err != nil || !ok {
			t.Fatalf("active model: %v %v", ok, err)
		}
		ent, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: text(i, 0)})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for round := 1; round <= rounds && (round <= least || time.Now().Before(deadline)); round++ {
				raced.Add(1)
				leases, err := st.ClaimWork(ctx, ws, driver.WorkClaim{Queue: driver.QueueEmbedding, Max: 1, MaxAttempts: 4, Lease: time.Minute})
				if err != nil {
					errs <- err
					return
				}
				var jobs []driver.EmbedJob
				for _, l := range leases {
					chunks, err := st.ChunksToEmbed(ctx, ws, modelID, []uuid.UUID{l.EntityID})
					if err != nil {
						errs <- err
						return
					}
					jobs = append(jobs, driver.EmbedJob{Lease: l, Chunks: chunks[l.EntityID]})
				}
				if len(jobs) != 1 || len(jobs[0].Chunks) < 2 {
					errs <- fmt.Errorf("round %d: claimed %d jobs, want the entity with its chunks", round, len(jobs))
					return
				}
				var done []driver.EmbedResult
				for _, j := range jobs {
					r := driver.EmbedResult{EntityID: j.EntityID, Generation: j.Generation}
					for _, ch := range j.Chunks {
						r.ChunkIDs = append(r.ChunkIDs, ch.ID)
						r.Vectors = append(r.Vectors, make([]float32, dims))
					}
					done = append(done, r)
				}
				next := text(i, round)
				start := make(chan struct{})
				var race sync.WaitGroup
				race.Go(func() {
					<-start
					if err := st.CompleteEmbedding(ctx, ws, modelID, done); err != nil {
						errs <- fmt.Errorf("complete embedding: %w", err)
					}
				})
				race.Go(func() {
					<-start
					got, err := c.Update(ctx, ent.ID, postgram.UpdateInput{Version: ent.Version, Content: &next})
					if err != nil {
						errs <- fmt.Errorf("update: %w", err)
						return
					}
					ent = got
				})
				close(start)
				race.Wait()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := st.aborted.Load(); n != 0 {
		t.Fatalf("PostgreSQL aborted %d transactions (deadlock or serialization failure) that the retry hid", n)
	}
	t.Logf("%d updates started with the recording of their entity's embeddings", raced.Load())
}
