//go:build unix

package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/sqlite"
)

// The crash and full-disk tests re-run this test binary as a child process
// that writes to the database named by one of these variables.
const (
	crashChildEnv = "POSTGRAM_SQLITE_CRASH_CHILD"
	fsizeChildEnv = "POSTGRAM_SQLITE_FSIZE_CHILD"
)

// TestCrashChild is the writer the crash test kills. It stores and updates
// entities as fast as it can and prints a line for every write that
// returned, i.e. that a caller would have seen acknowledged.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashChildEnv)
	if path == "" {
		t.Skip("run by TestCrashLosesNoAcknowledgedWrite")
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		fmt.Println("FATAL", err)
		os.Exit(2)
	}
	if err := st.Migrate(ctx); err != nil {
		fmt.Println("FATAL", err)
		os.Exit(2)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st})
	if err != nil {
		fmt.Println("FATAL", err)
		os.Exit(2)
	}
	out := bufio.NewWriter(os.Stdout)
	var mine []*postgram.Entity
	for i := 0; ; i++ {
		if i%4 == 3 && len(mine) > 0 {
			k := i % len(mine)
			content := fmt.Sprintf("crash test entity %d, revision %d", k, mine[k].Version+1)
			e, err := c.Update(ctx, mine[k].ID, postgram.UpdateInput{Version: mine[k].Version, Content: &content})
			if err != nil {
				fmt.Println("FATAL", err)
				os.Exit(2)
			}
			mine[k] = e
			fmt.Fprintf(out, "ACK %s %d\n", e.ID, e.Version)
		} else {
			e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: fmt.Sprintf("crash test entity %d written by pid %d", i, os.Getpid())})
			if err != nil {
				fmt.Println("FATAL", err)
				os.Exit(2)
			}
			mine = append(mine, e)
			fmt.Fprintf(out, "ACK %s %d\n", e.ID, e.Version)
		}
		out.Flush() // the acknowledgement leaves the process only after the write returned
	}
}

// TestCrashLosesNoAcknowledgedWrite kills a writing child with SIGKILL in
// the middle of a burst, several times, and checks after each that every
// write the child saw acknowledged is in the database, which is intact.
func TestCrashLosesNoAcknowledgedWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crash.db")
	acked := map[uuid.UUID]int64{}
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 3 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAt := 150 + r.IntN(300)
		if sqlite.RaceEnabled {
			killAt = 40 + r.IntN(80)
		}
		sc := bufio.NewScanner(stdout)
		n := 0
		killed := false
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "FATAL") {
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
		// Everything acknowledged, up to the last line read, must be there.
		st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
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
		// The keyword index agrees with the entities (same transactions).
		hits, err := st.KeywordProbe(ctx, "default", driver.KeywordQuery{Terms: []string{"crash"}, Mode: driver.ProbeAll, Limit: 1 << 30, Bare: true})
		if err != nil {
			t.Fatal(err)
		}
		page, total, err := st.ListEntities(ctx, "default", driver.EntityFilter{}, 1, 0, 0)
		if err != nil || len(page) != 1 {
			t.Fatal(err)
		}
		if len(hits) != total {
			t.Errorf("round %d: %d entities but %d keyword hits", round, total, len(hits))
		}
		st.Close()
		checkIntegrity(t, path)
		t.Logf("round %d: killed after %d acknowledged writes; %d entities, all present", round, n, total)
	}
}

func checkIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Fatalf("integrity_check: %v %q", err, res)
	}
}

// TestFullDiskChild writes until the file size limit its parent set is
// reached and reports what the store said.
func TestFullDiskChild(t *testing.T) {
	path := os.Getenv(fsizeChildEnv)
	if path == "" {
		t.Skip("run by TestFullDisk")
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		fmt.Println("FATAL", err)
		os.Exit(2)
	}
	if err := st.Migrate(ctx); err != nil {
		fmt.Println("FATAL", err)
		os.Exit(2)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st})
	if err != nil {
		fmt.Println("FATAL", err)
		os.Exit(2)
	}
	// From here on no file of this process may grow past 2 MiB beyond
	// the database's current size: the disk is "full".
	fi, err := os.Stat(path)
	if err != nil {
		fmt.Println("FATAL", err)
		os.Exit(2)
	}
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &orig); err != nil {
		fmt.Println("FATAL", err)
		os.Exit(2)
	}
	lim := uint64(fi.Size() + 2<<20)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: lim, Max: orig.Max}); err != nil {
		fmt.Println("FATAL", err)
		os.Exit(2)
	}
	big := strings.Repeat("filler words to fill the disk quickly ", 2000)
	failures := 0
	for i := 0; i < 10000 && failures < 3; i++ {
		e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeDocument, Content: fmt.Sprintf("full disk entity %d %s", i, big)})
		if err != nil {
			failures++
			fmt.Printf("ERR %v|%v\n", errors.Is(err, postgram.ErrUnavailable), err)
			continue
		}
		fmt.Printf("ACK %s\n", e.ID)
	}
	// Health tells a load balancer the store is read-only (degraded, not
	// down) while writes fail, and ok again once a write commits.
	h, err := postgramtest.Admin(t, c).Health(ctx)
	fmt.Printf("HEALTH %s %s %v\n", h.Store.State, h.Status, err)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &orig); err != nil {
		fmt.Println("FATAL", err)
		os.Exit(2)
	}
	if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "space again"}); err != nil {
		fmt.Println("FATAL write after the limit was lifted:", err)
		os.Exit(2)
	}
	h, err = postgramtest.Admin(t, c).Health(ctx)
	fmt.Printf("HEALTH %s %s %v\n", h.Store.State, h.Status, err)
	if err := st.Close(); err != nil {
		fmt.Printf("CLOSE %v\n", err)
	}
	fmt.Println("DONE")
}

// TestFullDisk runs a writer whose files cannot grow (RLIMIT_FSIZE, as on
// a full disk): writes fail with a clear error wrapping ErrUnavailable,
// health reports the store read_only until a write commits again, and the
// database stays intact with every acknowledged write.
func TestFullDisk(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("uses RLIMIT_FSIZE")
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "full.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestFullDiskChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), fsizeChildEnv+"="+path)
	cmd.Stderr = os.Stderr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := cmd.Output()
	if err != nil && ctx.Err() == nil {
		t.Logf("child exit: %v", err)
	}
	var acked []uuid.UUID
	var errs, health []string
	done := false
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "FATAL"):
			t.Fatalf("child: %s", line)
		case strings.HasPrefix(line, "ACK "):
			acked = append(acked, uuid.MustParse(strings.TrimPrefix(line, "ACK ")))
		case strings.HasPrefix(line, "ERR "):
			errs = append(errs, strings.TrimPrefix(line, "ERR "))
		case strings.HasPrefix(line, "HEALTH "):
			health = append(health, strings.TrimPrefix(line, "HEALTH "))
		case line == "DONE":
			done = true
		}
	}
	if !done || len(errs) == 0 || len(acked) == 0 {
		t.Fatalf("child did not hit the limit cleanly: done=%v, %d acks, errors %q", done, len(acked), errs)
	}
	for _, e := range errs {
		if !strings.HasPrefix(e, "true|") || !(strings.Contains(e, "disk is full") || strings.Contains(e, "disk I/O error")) {
			t.Errorf("write error is not a clear unavailable/disk error: %s", e)
		}
	}
	t.Logf("%d writes acknowledged, then: %s", len(acked), errs[0])
	// No embedder: the status is degraded anyway; the store state is what
	// changes.
	if want := []string{"read_only degraded <nil>", "ok degraded <nil>"}; strings.Join(health, "|") != strings.Join(want, "|") {
		t.Errorf("health while the disk is full, then after a write committed: %q, want %q", health, want)
	}
	checkIntegrity(t, path)
	st := openAt(t, path)
	got, err := st.GetEntities(context.Background(), "default", acked)
	if err != nil || len(got) != len(acked) {
		t.Fatalf("after the disk filled: %d of %d acknowledged entities (%v)", len(got), len(acked), err)
	}
	c := newClient(t, st, nil)
	if _, err := c.Store(context.Background(), postgram.StoreInput{Type: postgram.TypeMemory, Content: "space again"}); err != nil {
		t.Fatalf("write after space returned: %v", err)
	}
}
