//go:build unix

package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/storage/postgres"
)

// crashChildEnv names the database the crash test's child writes to: the
// test binary re-runs itself as the writer that is killed.
const crashChildEnv = "POSTGRAM_PG_CRASH_CHILD"

// crashWriters is how many goroutines of the child write at once, so that
// several transactions are in flight when the child is killed.
const crashWriters = 4

// TestCrashChild is the writer TestCrashLosesNoAcknowledgedWrite kills.
// Several goroutines store and update (re-chunk) entities as fast as they
// can; each prints "ACK <id> <version>" only after the write returned, i.e.
// once a caller would have seen it acknowledged.
func TestCrashChild(t *testing.T) {
	dsn := os.Getenv(crashChildEnv)
	if dsn == "" {
		t.Skip("run by TestCrashLosesNoAcknowledgedWrite")
	}
	ctx := context.Background()
	fatal := func(err error) {
		fmt.Println("FATAL", err)
		os.Exit(2)
	}
	st, err := postgres.Open(ctx, postgres.Config{URL: dsn, MaxConns: crashWriters + 1})
	if err != nil {
		fatal(err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st})
	if err != nil {
		fatal(err)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	ack := func(e *postgram.Entity) {
		mu.Lock()
		fmt.Fprintf(out, "ACK %s %d\n", e.ID, e.Version)
		out.Flush() // the acknowledgement leaves the process only after the write returned
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range crashWriters {
		wg.Go(func() {
			var mine []*postgram.Entity
			for i := 0; ; i++ {
				if i%4 == 3 && len(mine) > 0 {
					k := i % len(mine)
					// A longer revision makes several chunks, replaced in the update's transaction.
					content := fmt.Sprintf("crash test entity %d-%d, revision %d. ", w, k, mine[k].Version+1) +
						strings.Repeat(fmt.Sprintf("crash filler sentence %d for several chunks. ", i), 60)
					e, err := c.Update(ctx, mine[k].ID, postgram.UpdateInput{Version: mine[k].Version, Content: &content})
					if err != nil {
						fatal(err)
					}
					mine[k] = e
					ack(e)
					continue
				}
				e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory,
					Content: fmt.Sprintf("crash test entity %d-%d written by pid %d", w, i, os.Getpid()),
					Tags:    []string{"crash"}})
				if err != nil {
					fatal(err)
				}
				mine = append(mine, e)
				ack(e)
			}
		})
	}
	wg.Wait()
}

// TestCrashLosesNoAcknowledgedWrite kills a child writing through
// postgram.Client with SIGKILL in the middle of a write burst, several
// times, and checks after each kill that every write the child saw
// acknowledged is recallable at (at least) the acknowledged version and
// keyword-searchable, and that the writes in flight left no half-written
// entity: every entity has its chunks, and every chunk its keyword index.
func TestCrashLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := pgtest.Schema(t)
	st, err := postgres.Open(ctx, postgres.Config{URL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	// The child's connections carry their own application name, so that
	// the checks can wait for its server processes to end: a statement it
	// sent just before being killed may still commit after the kill.
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	app := "postgram_crash_child_" + strconv.Itoa(os.Getpid())
	q := u.Query()
	q.Set("application_name", app)
	u.RawQuery = q.Encode()
	childDSN := u.String()
	acked := map[uuid.UUID]int64{}
	r := rand.New(rand.NewPCG(5, 6))
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+childDSN)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAt := 150 + r.IntN(300)
		sc := bufio.NewScanner(stdout)
		n := 0
		killed := false
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "FATAL") {
				cmd.Process.Kill()
				t.Fatalf("child: %s", line)
			}
			f := strings.Fields(line)
			if len(f) != 3 || f[0] != "ACK" {
				continue
			}
			id, err := uuid.Parse(f[1])
			if err != nil {
				t.Fatal(err)
			}
			v, _ := strconv.ParseInt(f[2], 10, 64)
			acked[id] = max(acked[id], v)
			n++
			if n == killAt && !killed {
				if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed = true
			}
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !killed || !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("round %d: the child was not killed mid-burst: %v (killed=%v, %d acks)", round, err, killed, n)
		}

		waitGone(t, st, app)

		// Every acknowledged write is there, at its version or later.
		ids := make([]uuid.UUID, 0, len(acked))
		for id := range acked {
			ids = append(ids, id)
		}
		got, err := st.GetEntities(ctx, "default", ids)
		if err != nil {
			t.Fatal(err)
		}
		have := map[uuid.UUID]int64{}
		for _, e := range got {
			have[e.ID] = e.Version
		}
		for id, v := range acked {
			if have[id] < v {
				t.Errorf("round %d: acknowledged write lost: entity %s version %d, found version %d", round, id, v, have[id])
			}
		}

		// Every acknowledged entity is keyword-searchable.
		hits, err := st.KeywordProbe(ctx, "default", driver.KeywordQuery{Terms: []string{"crash"}, Mode: driver.ProbeAll, Limit: 1 << 30, Bare: true})
		if err != nil {
			t.Fatal(err)
		}
		found := map[uuid.UUID]bool{}
		for _, h := range hits {
			found[h.EntityID] = true
		}
		for id := range acked {
			if !found[id] {
				t.Errorf("round %d: acknowledged entity %s is not keyword-searchable", round, id)
			}
		}

		// No half-written entity: each has chunks, each chunk is indexed,
		// and the chunks of each entity are numbered 0..n-1.
		var entities, chunkless, unindexed, gaps int
		err = st.Pool().QueryRow(ctx, `SELECT
				(SELECT count(*) FROM entities WHERE workspace_id = 'default'),
				(SELECT count(*) FROM entities e WHERE e.workspace_id = 'default'
					AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.workspace_id = e.workspace_id AND c.entity_id = e.id)),
				(SELECT count(*) FROM chunks WHERE workspace_id = 'default' AND length(tsv) = 0),
				(SELECT count(*) FROM (SELECT entity_id FROM chunks WHERE workspace_id = 'default'
					GROUP BY entity_id HAVING max(chunk_index) <> count(*) - 1 OR min(chunk_index) <> 0) g)`).
			Scan(&entities, &chunkless, &unindexed, &gaps)
		if err != nil {
			t.Fatal(err)
		}
		if chunkless != 0 || unindexed != 0 || gaps != 0 {
			t.Errorf("round %d: half-written state: %d entities without chunks, %d chunks without keyword index, %d entities with a gap in their chunks",
				round, chunkless, unindexed, gaps)
		}
		if len(found) != entities {
			t.Errorf("round %d: %d entities but %d found by keyword", round, entities, len(found))
		}
		t.Logf("round %d: killed after %d acknowledged writes; %d entities, all acknowledged ones present", round, n, entities)
	}
}

// waitGone waits until no server process serves a connection named app.
func waitGone(t *testing.T, st *postgres.Store, app string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := st.Pool().QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed child's %d server processes are still running after 30 s", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
