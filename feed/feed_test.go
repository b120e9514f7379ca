package feed_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/feed"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
)

// opener opens a second store on the same database (another server).
type opener func(t *testing.T) driver.Storage

func stores(t *testing.T, backend string) opener {
	t.Helper()
	switch backend {
	case "sqlite":
		path := filepath.Join(t.TempDir(), "postgram.db")
		return func(t *testing.T) driver.Storage {
			s, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if err := s.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
			return s
		}
	default:
		dsn := pgtest.Schema(t)
		return func(t *testing.T) driver.Storage {
			s, err := postgres.Open(t.Context(), postgres.Config{URL: dsn, MaxConns: 4})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if err := s.Migrate(t.Context()); err != nil {
				t.Fatal(err)
			}
			return s
		}
	}
}

func newClient(t *testing.T, st driver.Storage) (*postgram.Client, *postgram.Admin) {
	t.Helper()
	c, err := postgram.New(t.Context(), postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(32)})
	if err != nil {
		t.Fatal(err)
	}
	return c, postgramtest.Admin(t, c)
}

// next reads one event or fails after a deadline.
func next(t *testing.T, s *feed.Subscription, within time.Duration) feed.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	ev, err := s.Next(ctx)
	if err != nil {
		t.Fatalf("no event within %v: %v", within, err)
	}
	return ev
}

// none checks that nothing arrives for a while.
func none(t *testing.T, s *feed.Subscription, wait time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	if ev, err := s.Next(ctx); err == nil {
		t.Fatalf("unexpected event %+v", ev)
	}
}

type seen struct{ Kind, Entity string }

func TestFeed(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			open := stores(t, backend)
			c, admin := newClient(t, open(t))
			hub := feed.New(admin, feed.Config{Poll: time.Minute})
			all := hub.Subscribe(c, 0)

			// A key that may see only work entities, and its own jobs.
			tok, _, err := admin.CreateKey(ctx, postgram.KeySpec{Name: "limited", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite},
				AllowedVisibilities: []postgram.Visibility{postgram.VisibilityWork}})
			if err != nil {
				t.Fatal(err)
			}
			limited, err := admin.Authenticate(ctx, tok)
			if err != nil {
				t.Fatal(err)
			}
			lsub := hub.Subscribe(limited, 0)

			work, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "the work note", Visibility: postgram.VisibilityWork})
			if err != nil {
				t.Fatal(err)
			}
			personal, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "the personal note", Visibility: postgram.VisibilityPersonal})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Update(ctx, work.ID, postgram.UpdateInput{Version: work.Version, Content: ptr("the work note, edited")}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Delete(ctx, personal.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := admin.EnrichPending(ctx); err != nil {
				t.Fatal(err)
			}

			want := []seen{{"entity.created", work.ID.String()}, {"entity.created", personal.ID.String()},
				{"entity.updated", work.ID.String()}, {"entity.archived", personal.ID.String()}}
			var got []seen
			var seqs []int64
			for range want {
				ev := next(t, all, 5*time.Second)
				if len(seqs) > 0 && ev.Seq <= seqs[len(seqs)-1] {
					t.Fatalf("seq %d after %d", ev.Seq, seqs[len(seqs)-1])
				}
				seqs = append(seqs, ev.Seq)
				got = append(got, seen{ev.Kind, ev.EntityID})
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("events (-want +got):\n%s", d)
			}
			// Enrichment of the notes (the archived one is embedded too and
			// reported to the unscoped subscriber).
			for enriched := map[string]bool{}; !enriched[work.ID.String()]; {
				if ev := next(t, all, 5*time.Second); ev.Kind == "entity.enriched" {
					enriched[ev.EntityID] = true
				}
			}

			// The limited key sees the work note's events only.
			var lgot []seen
			for {
				ev := next(t, lsub, 5*time.Second)
				lgot = append(lgot, seen{ev.Kind, ev.EntityID})
				if ev.Kind == "entity.enriched" {
					break
				}
			}
			wantL := []seen{{"entity.created", work.ID.String()}, {"entity.updated", work.ID.String()}, {"entity.enriched", work.ID.String()}}
			if d := cmp.Diff(wantL, lgot); d != "" {
				t.Fatalf("the limited key's events (-want +got):\n%s", d)
			}

			// Resuming after a position delivers what followed, once, in order.
			r := hub.Subscribe(c, seqs[1])
			for i := 2; i < len(seqs); i++ {
				if ev := next(t, r, 5*time.Second); ev.Seq != seqs[i] || ev.Kind != want[i].Kind {
					t.Fatalf("resumed event %d: %+v, want seq %d %s", i, ev, seqs[i], want[i].Kind)
				}
			}

			// Another server on the same database: its hub hears this one's
			// writes through the store's change feed (PostgreSQL) or its poll
			// (SQLite), and the other way round.
			poll := time.Minute
			if backend == "sqlite" {
				poll = 50 * time.Millisecond
			}
			c2, admin2 := newClient(t, open(t))
			hub2 := feed.New(admin2, feed.Config{Poll: poll})
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			go hub2.Run(runCtx)
			from, err := hub2.Last(ctx)
			if err != nil {
				t.Fatal(err)
			}
			sub2 := hub2.Subscribe(c2, from)
			time.Sleep(300 * time.Millisecond) // the change feed connects
			third, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeProject, Content: "written by the first server"})
			if err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			for {
				ev := next(t, sub2, 3*time.Second)
				if ev.EntityID == third.ID.String() && ev.Kind == "entity.created" {
					break
				}
			}
			t.Logf("%s: another server's event arrived in %v", backend, time.Since(began))

			// Pruned past a subscriber's position: it is told.
			if _, err := admin.Storage().PruneEvents(ctx, admin.Workspace(), 1, time.Now().Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
			g := hub.Subscribe(c, seqs[0])
			if ev := next(t, g, 5*time.Second); ev.Kind != feed.KindGap {
				t.Fatalf("after pruning: %+v, want %s", ev, feed.KindGap)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }
