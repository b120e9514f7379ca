package storagetest

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
)

// testJobs covers the job queue: create and read back, filters and
// paging, claims that two racing claimers never share, leases that run
// out and are claimed again (a dead server's job resumes), compare-and-set
// updates, the next due time, and workspaces that never see each other's
// jobs.
func testJobs(t *testing.T, open Opener) {
	ctx := t.Context()
	st := open(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	mk := func(i int, runAt time.Time) *driver.Job {
		return &driver.Job{ID: uuid.Must(uuid.NewV7()), Kind: "ingest", MaxAttempts: 3, RunAt: runAt,
			KeyID: fmt.Sprintf("key%d", i%2), SourceURL: fmt.Sprintf("https://example.com/%d", i),
			Input: []byte(fmt.Sprintf(`{"n":%d}`, i))}
	}
	var jobs []*driver.Job
	for i := range 6 {
		j := mk(i, now.Add(-time.Minute))
		if err := st.CreateJob(ctx, "ws", j); err != nil {
			t.Fatal(err)
		}
		if j.Version != 1 || j.Status != driver.JobQueued || j.CreatedAt.IsZero() {
			t.Fatalf("created: %+v", j)
		}
		jobs = append(jobs, j)
	}
	if err := st.CreateJob(ctx, "ws", jobs[0]); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("duplicate job id: %v, want ErrConflict", err)
	}
	later := mk(9, now.Add(time.Hour))
	if err := st.CreateJob(ctx, "ws", later); err != nil {
		t.Fatal(err)
	}
	got, err := st.GetJob(ctx, "ws", jobs[2].ID)
	if err != nil || got.SourceURL != jobs[2].SourceURL || string(got.Input) != `{"n": 2}` && string(got.Input) != `{"n":2}` ||
		got.MaxAttempts != 3 || !got.RunAt.Equal(jobs[2].RunAt) || got.EntityID != nil {
		t.Fatalf("read back: %+v %v", got, err)
	}
	if _, err := st.GetJob(ctx, "other", jobs[2].ID); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("another workspace reads the job: %v", err)
	}
	if l, err := st.ListJobs(ctx, "other", driver.JobFilter{}); err != nil || len(l) != 0 {
		t.Fatalf("another workspace lists %d jobs (%v)", len(l), err)
	}
	key1 := "key1"
	l, err := st.ListJobs(ctx, "ws", driver.JobFilter{KeyID: &key1})
	if err != nil || len(l) != 4 { // 1, 3, 5, 9
		t.Fatalf("by key: %d %v", len(l), err)
	}
	for i := 1; i < len(l); i++ {
		if l[i].CreatedAt.After(l[i-1].CreatedAt) {
			t.Fatalf("not newest first: %v", l)
		}
	}
	page, err := st.ListJobs(ctx, "ws", driver.JobFilter{Limit: 3})
	if err != nil || len(page) != 3 {
		t.Fatalf("page: %d %v", len(page), err)
	}
	rest, err := st.ListJobs(ctx, "ws", driver.JobFilter{Before: &page[2].ID})
	if err != nil || len(rest) != 4 {
		t.Fatalf("after the page: %d %v", len(rest), err)
	}
	seen := map[uuid.UUID]bool{}
	for _, j := range append(page, rest...) {
		if seen[j.ID] {
			t.Fatalf("job %s on two pages", j.ID)
		}
		seen[j.ID] = true
	}
	if l, _ := st.ListJobs(ctx, "ws", driver.JobFilter{SourceURL: jobs[4].SourceURL}); len(l) != 1 || l[0].ID != jobs[4].ID {
		t.Fatalf("by source url: %v", l)
	}

	// Two claimers racing for the six due jobs share none of them.
	var mu sync.Mutex
	claimed := map[uuid.UUID]int{}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := st.ClaimJobs(ctx, "ws", "ingest", now, time.Minute, 2)
				if err != nil {
					errs[w] = err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, j := range got {
					claimed[j.ID]++
					if j.Status != driver.JobRunning || j.Attempts != 1 || j.LeaseUntil == nil || j.Version != 2 {
						errs[w] = fmt.Errorf("claimed job: %+v", j)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(claimed) != 6 {
		t.Fatalf("claimed %d jobs, want the 6 due ones (the later one is not due)", len(claimed))
	}
	for id, n := range claimed {
		if n != 1 {
			t.Fatalf("job %s claimed %d times", id, n)
		}
	}
	if got, _ := st.ClaimJobs(ctx, "other", "ingest", now.Add(2*time.Hour), time.Minute, 10); len(got) != 0 {
		t.Fatalf("another workspace claimed %d jobs", len(got))
	}
	// A lease that runs out is claimed again: the job resumes elsewhere.
	again, err := st.ClaimJobs(ctx, "ws", "ingest", now.Add(2*time.Minute), time.Minute, 10)
	if err != nil || len(again) != 6 {
		t.Fatalf("reclaim after the leases ran out: %d %v", len(again), err)
	}
	if again[0].Attempts != 2 {
		t.Fatalf("a reclaimed job counts a second attempt: %+v", again[0])
	}
	// Compare-and-set: a stale writer loses.
	j := again[0]
	stale := j
	eid := uuid.Must(uuid.NewV7())
	j.Status, j.Stage, j.Progress, j.EntityID, j.SHA256 = driver.JobDone, "done", 1, &eid, "abc"
	j.State = []byte(`{"entity":"x"}`)
	fin := now.Add(3 * time.Minute)
	j.FinishedAt, j.LeaseUntil = &fin, nil
	if err := st.UpdateJob(ctx, "ws", &j); err != nil {
		t.Fatal(err)
	}
	if j.Version != stale.Version+1 {
		t.Fatalf("version after update: %d, want %d", j.Version, stale.Version+1)
	}
	stale.CancelRequested = true
	if err := st.UpdateJob(ctx, "ws", &stale); !errors.Is(err, driver.ErrConflict) {
		t.Fatalf("stale update: %v, want ErrConflict", err)
	}
	missing := driver.Job{ID: uuid.New(), Version: 1}
	if err := st.UpdateJob(ctx, "ws", &missing); !errors.Is(err, driver.ErrNotFound) {
		t.Fatalf("missing job update: %v, want ErrNotFound", err)
	}
	done, err := st.GetJob(ctx, "ws", j.ID)
	if err != nil || done.Status != driver.JobDone || done.EntityID == nil || *done.EntityID != eid || done.SHA256 != "abc" ||
		done.FinishedAt == nil || done.LeaseUntil != nil {
		t.Fatalf("after update: %+v %v", done, err)
	}
	if l, _ := st.ListJobs(ctx, "ws", driver.JobFilter{SHA256: "abc", Statuses: []driver.JobStatus{driver.JobDone}}); len(l) != 1 {
		t.Fatalf("by digest and status: %v", l)
	}
	if l, _ := st.ListJobs(ctx, "ws", driver.JobFilter{EntityID: &eid}); len(l) != 1 {
		t.Fatalf("by entity: %v", l)
	}
	at, ok, err := st.NextJobDue(ctx, "ws", "ingest")
	if err != nil || !ok || !at.Equal(now.Add(3*time.Minute)) {
		t.Fatalf("next due: %v %v %v, want the running jobs' lease end %v", at, ok, err, now.Add(3*time.Minute))
	}
	if _, ok, err := st.NextJobDue(ctx, "other", "ingest"); ok || err != nil {
		t.Fatalf("next due in an empty workspace: %v %v", ok, err)
	}
}

// testEventLog covers the bounded event log: seqs grow in append order,
// concurrent appends never leave a gap a reader could pass, reads resume
// after a seq, pruning keeps the newest and reports the first seq left,
// and workspaces are apart.
func testEventLog(t *testing.T, open Opener) {
	ctx := t.Context()
	st := open(t)
	if last, err := st.LastEventSeq(ctx, "ws"); err != nil || last != 0 {
		t.Fatalf("empty log: %d %v", last, err)
	}
	eid, jid := uuid.New(), uuid.New()
	first := []driver.ChangeEvent{
		{Kind: "entity.created", EntityID: eid, Type: driver.TypeMemory, Visibility: driver.VisibilityWork, Owner: "ann",
			Data: []byte(`{"version":1}`)},
		{Kind: "job.updated", JobID: jid, KeyID: "k1", Data: []byte(`{"stage":"fetching"}`)},
	}
	if err := st.AppendEvents(ctx, "ws", first); err != nil {
		t.Fatal(err)
	}
	if first[0].CreatedAt.IsZero() {
		t.Fatalf("no time: %+v", first)
	}
	got, lo, err := st.EventsAfter(ctx, "ws", 0, 10)
	if err != nil || len(got) != 2 || lo != got[0].Seq || got[0].Seq <= 0 || got[1].Seq <= got[0].Seq {
		t.Fatalf("read: %v first %d %v", got, lo, err)
	}
	first[1].Seq = got[1].Seq
	if g := got[0]; g.EntityID != eid || g.Type != driver.TypeMemory || g.Visibility != driver.VisibilityWork ||
		g.Owner != "ann" || g.JobID != uuid.Nil || g.Kind != "entity.created" {
		t.Fatalf("entity event: %+v", g)
	}
	if g := got[1]; g.JobID != jid || g.KeyID != "k1" || g.EntityID != uuid.Nil {
		t.Fatalf("job event: %+v", g)
	}
	if other, _, _ := st.EventsAfter(ctx, "other", 0, 10); len(other) != 0 {
		t.Fatalf("another workspace reads %d events", len(other))
	}
	// Concurrent appenders and a reader that follows seq: the reader sees
	// every event exactly once, in seq order.
	const writers, each = 4, 25
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				ev := []driver.ChangeEvent{{Kind: "entity.updated", EntityID: uuid.New(), Data: []byte(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))}}
				if err := st.AppendEvents(ctx, "ws", ev); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	stop := make(chan struct{})
	go func() { wg.Wait(); close(stop) }()
	cursor, n := first[1].Seq, 0
	var seen []int64
	for finished := false; ; {
		select {
		case <-stop:
			finished = true
		default:
		}
		evs, _, err := st.EventsAfter(ctx, "ws", cursor, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			seen = append(seen, e.Seq)
			cursor = e.Seq
			n++
		}
		if finished && len(evs) == 0 {
			// Everything committed is numbered once LastEventSeq returns.
			last, err := st.LastEventSeq(ctx, "ws")
			if err != nil {
				t.Fatal(err)
			}
			if cursor >= last {
				break
			}
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n != writers*each || !sort.SliceIsSorted(seen, func(i, j int) bool { return seen[i] < seen[j] }) {
		t.Fatalf("the reader saw %d of %d events (sorted: %v)", n, writers*each, sort.SliceIsSorted(seen, func(i, j int) bool { return seen[i] < seen[j] }))
	}
	last, err := st.LastEventSeq(ctx, "ws")
	if err != nil || last != cursor {
		t.Fatalf("last seq %d, reader ended at %d (%v)", last, cursor, err)
	}
	// Prune to the newest 10: the log's first seq tells a reader at 0 that
	// it missed events.
	pruned, err := st.PruneEvents(ctx, "ws", 10, time.Now().Add(-time.Hour))
	if err != nil || pruned != 2+writers*each-10 {
		t.Fatalf("pruned %d, want %d (%v)", pruned, 2+writers*each-10, err)
	}
	got, lo, err = st.EventsAfter(ctx, "ws", 0, 100)
	if err != nil || len(got) != 10 || lo != got[0].Seq || got[9].Seq != last {
		t.Fatalf("after pruning: %d events, first %d (%v)", len(got), lo, err)
	}
	if n, err := st.PruneEvents(ctx, "ws", 100, time.Now().Add(time.Hour)); err != nil || n != 10 {
		t.Fatalf("prune by age: %d %v", n, err)
	}
}

// testEntityEvents covers the change events the writes append in their
// own transactions: created, updated, archived, enriched and purged, in
// order, each only once its change committed (a refused write appends
// nothing), and a purge removes the entity's earlier events.
func testEntityEvents(t *testing.T, open Opener) {
	e := newEnv(t, open)
	ctx := e.ctx
	ws := postgram.DefaultWorkspace
	a := e.store1(postgram.StoreInput{Content: "event note a", Visibility: postgram.VisibilityWork, Owner: "ann"})
	b := e.store1(postgram.StoreInput{Content: "event note b"})
	if _, err := e.c.Update(ctx, a.ID, postgram.UpdateInput{Version: a.Version, Content: ptr("event note a, edited")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Update(ctx, a.ID, postgram.UpdateInput{Version: a.Version, Content: ptr("stale")}); err == nil {
		t.Fatal("a stale update succeeded")
	}
	if _, err := e.c.Delete(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := postgramtest.Admin(t, e.c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	evs, _, err := e.store.EventsAfter(ctx, ws, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	type ev struct {
		Kind string
		ID   uuid.UUID
	}
	var got []ev
	for i, x := range evs {
		if i > 0 && x.Seq <= evs[i-1].Seq {
			t.Fatalf("seqs out of order: %d after %d", x.Seq, evs[i-1].Seq)
		}
		got = append(got, ev{x.Kind, x.EntityID})
	}
	want := []ev{{driver.EventEntityCreated, a.ID}, {driver.EventEntityCreated, b.ID}, {driver.EventEntityUpdated, a.ID},
		{driver.EventEntityArchived, b.ID}}
	if len(got) < len(want)+1 {
		t.Fatalf("events %v, want %v then the enrichments", got, want)
	}
	for i, w := range want {
		if got[i] != w {
			t.Fatalf("event %d: %v, want %v (all: %v)", i, got[i], w, got)
		}
	}
	enriched := map[uuid.UUID]bool{}
	for _, g := range got[len(want):] {
		if g.Kind != driver.EventEntityEnriched {
			t.Fatalf("after the writes: %v", g)
		}
		enriched[g.ID] = true
	}
	if !enriched[a.ID] {
		t.Fatalf("no enriched event for %s: %v", a.ID, got)
	}
	first := evs[0]
	if first.Type != postgram.TypeMemory || first.Visibility != postgram.VisibilityWork || first.Owner != "ann" ||
		first.Role != postgram.RoleDurableMemory || !strings.Contains(string(first.Data), `"version"`) {
		t.Fatalf("the created event does not describe the entity: %+v %s", first, first.Data)
	}
	// Purge: a's earlier events go, one purged event is appended.
	if _, err := postgramtest.Admin(t, e.c).Purge(ctx, postgram.PurgeRequest{IDs: []uuid.UUID{a.ID}, NoScrub: true}); err != nil {
		t.Fatal(err)
	}
	evs, _, err = e.store.EventsAfter(ctx, ws, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ofA []string
	for _, x := range evs {
		if x.EntityID == a.ID {
			ofA = append(ofA, x.Kind)
		}
	}
	if len(ofA) != 1 || ofA[0] != driver.EventEntityPurged {
		t.Fatalf("a's events after its purge: %v", ofA)
	}
	if last, err := e.store.LastEventSeq(ctx, ws); err != nil || last != evs[len(evs)-1].Seq {
		t.Fatalf("last seq %d, log ends at %d (%v)", last, evs[len(evs)-1].Seq, err)
	}
}
