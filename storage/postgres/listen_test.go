package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/storage/postgres"
)

// recorder collects one Listen call's events.
type recorder struct {
	mu  sync.Mutex
	evs []driver.Event
}

func (r *recorder) h(ev driver.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

func (r *recorder) count(kind driver.EventKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.evs {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

// TestListenShared: every Listen of a store, for any workspace, shares one
// connection; each hears only its own workspace's work and key changes;
// when the connection is killed, every listener hears it drop and come
// back, and hears notifications again afterwards; a listener that
// returned hears nothing more.
func TestListenShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	channel := "listen_" + uuid.NewString()[:8]
	st, err := postgres.Open(ctx, postgres.Config{URL: dsn, MaxConns: 2, NotifyChannel: channel})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	recs := map[string][]*recorder{}
	var wg sync.WaitGroup
	for _, ws := range []string{"acme", "acme", "bravo", "carol"} {
		r := &recorder{}
		recs[ws] = append(recs[ws], r)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = st.Listen(lctx, ws, r.h)
		}()
	}
	all := func() []*recorder {
		var out []*recorder
		for _, rs := range recs {
			out = append(out, rs...)
		}
		return out
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	wait("every listener to connect", func() bool {
		for _, r := range all() {
			if r.count(driver.EventConnected) == 0 {
				return false
			}
		}
		return true
	})

	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var listeners int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = 'postgram listen ' || $1`,
		channel).Scan(&listeners); err != nil {
		t.Fatal(err)
	}
	if listeners != 1 {
		t.Errorf("%d LISTEN connections for four listeners, want one", listeners)
	}

	notify := func(ws string) {
		t.Helper()
		if _, err := admin.Exec(ctx, "SELECT pg_notify($1, $2)", channel, ws); err != nil {
			t.Fatal(err)
		}
	}
	notify("bravo")
	wait("bravo's listener to hear its work", func() bool { return recs["bravo"][0].count(driver.EventWork) == 1 })
	time.Sleep(100 * time.Millisecond)
	for _, ws := range []string{"acme", "carol"} {
		for _, r := range recs[ws] {
			if n := r.count(driver.EventWork); n != 0 {
				t.Errorf("%s heard bravo's work %d times", ws, n)
			}
		}
	}

	// Kill the shared connection: everyone hears it drop and come back.
	if _, err := admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = 'postgram listen ' || $1`, channel); err != nil {
		t.Fatal(err)
	}
	wait("every listener to hear the drop and the reconnect", func() bool {
		for _, r := range all() {
			if r.count(driver.EventDisconnected) == 0 || r.count(driver.EventConnected) < 2 {
				return false
			}
		}
		return true
	})
	notify("acme")
	wait("both acme listeners to hear their work after the reconnect", func() bool {
		return recs["acme"][0].count(driver.EventWork) == 1 && recs["acme"][1].count(driver.EventWork) == 1
	})

	// Returned listeners hear nothing more.
	stop()
	wg.Wait()
	before := recs["acme"][0].count(driver.EventWork)
	notify("acme")
	time.Sleep(200 * time.Millisecond)
	if after := recs["acme"][0].count(driver.EventWork); after != before {
		t.Errorf("a returned listener heard %d more events", after-before)
	}
}
