package ingest_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/feed"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/ingest/fetch"
	"github.com/postgram-go/postgram/ingest/raw"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
	"github.com/postgram-go/postgram/storage/sqlite"
)

func openStore(t *testing.T, backend string) driver.Storage {
	t.Helper()
	ctx := t.Context()
	switch backend {
	case "sqlite":
		s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "postgram.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	default:
		s, err := postgres.Open(ctx, postgres.Config{URL: pgtest.Schema(t), MaxConns: 6})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
}

type env struct {
	t     *testing.T
	c     *postgram.Client
	admin *postgram.Admin
	svc   *ingest.Service
	hub   *feed.Hub
	raw   *raw.FS
}

// newEnv builds a client with a test embedder and an ingest service whose
// fetcher may reach httptest servers; run starts the service's loop.
func newEnv(t *testing.T, backend string, run bool, mod func(*ingest.Config)) *env {
	t.Helper()
	st := openStore(t, backend)
	c, err := postgram.New(t.Context(), postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(32)})
	if err != nil {
		t.Fatal(err)
	}
	admin := postgramtest.Admin(t, c)
	rs, err := raw.Open("", t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ingest.Config{Raw: rs, Fetcher: fetch.New(fetch.Config{AllowPrivate: true, MaxBytes: 1 << 20}), MaxBytes: 1 << 20,
		Backoff: 20 * time.Millisecond, Poll: 50 * time.Millisecond, EmbedWait: 10 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	svc, err := ingest.New(admin, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		_ = c.Stop(context.Background())
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(done)
		if run {
			_ = svc.Run(ctx)
		}
	}()
	fs, _ := rs.(*raw.FS)
	return &env{t: t, c: c, admin: admin, svc: svc, hub: feed.New(admin, feed.Config{}), raw: fs}
}

func (e *env) wait(c *postgram.Client, j *ingest.Job) *ingest.Job {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), 20*time.Second)
	defer cancel()
	got, err := e.svc.Wait(ctx, c, uuid.MustParse(j.ID))
	if err != nil {
		e.t.Fatalf("job %s did not end: %v", j.ID, err)
	}
	return got
}

const article = `<!doctype html><html><head><title>Field notes: the Lighthouse rollout</title>
<meta name="author" content="Dana Whitfield"></head><body>
<nav><a href="/">Home</a> <a href="/blog">Blog</a> <a href="/about">About us</a> Subscribe to our newsletter</nav>
<article><h1>Field notes: the Lighthouse rollout</h1>
<p>The Lighthouse rollout moved every regional dashboard onto the new ingestion cluster over three weekends.
We staged the migration by region, starting with the smallest, and kept the old pipeline running in parallel
until the numbers matched to the row.</p>
<h2>What went wrong</h2>
<p>The second weekend, the backfill for the northern region stalled because a retention job deleted the staging
partitions while they were still being copied. We paused the retention job for the rest of the migration.</p>
<h2>What we would do again</h2>
<p>Running both pipelines side by side made every discrepancy visible within an hour, and the per-region cutover
kept each rollback small. %s</p></article>
<footer>Copyright 2026 Example Corp. All rights reserved. Privacy policy. Terms.</footer></body></html>`

func TestIngest(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			var version atomic.Int32
			var fails atomic.Int32
			site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/post":
					w.Header().Set("Content-Type", "text/html; charset=utf-8")
					fmt.Fprintf(w, article, strings.Repeat(" Edited.", int(version.Load())))
				case "/flaky":
					fails.Add(1)
					http.Error(w, "try later", http.StatusServiceUnavailable)
				default:
					http.NotFound(w, r)
				}
			}))
			defer site.Close()
			e := newEnv(t, backend, true, func(c *ingest.Config) { c.MaxAttempts = 2 })
			events := e.hub.Subscribe(e.c, 0)

			// A web page: the article, not the navigation or the footer.
			j, err := e.svc.Submit(ctx, e.c, ingest.Input{URL: site.URL + "/post", Tags: []string{"blog"}})
			if err != nil {
				t.Fatal(err)
			}
			if j.Status != driver.JobQueued || j.Stage != ingest.StageQueued {
				t.Fatalf("submitted: %+v", j)
			}
			done := e.wait(e.c, j)
			if done.Status != driver.JobDone || done.EntityID == "" || done.Progress != 1 || done.Embedding != "completed" || done.SHA256 == "" {
				t.Fatalf("done: %+v", done)
			}
			ent, err := e.c.Recall(ctx, uuid.MustParse(done.EntityID))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"# Field notes: the Lighthouse rollout", "## What went wrong", "retention job deleted the staging"} {
				if !strings.Contains(ent.Content, want) {
					t.Errorf("content lacks %q:\n%s", want, ent.Content)
				}
			}
			for _, not := range []string{"Subscribe to our newsletter", "All rights reserved"} {
				if strings.Contains(ent.Content, not) {
					t.Errorf("content keeps boilerplate %q", not)
				}
			}
			if ent.Type != postgram.TypeDocument || ent.Metadata["source_url"] != site.URL+"/post" ||
				ent.Metadata["sha256"] != done.SHA256 || ent.Metadata["title"] == nil || len(ent.Tags) != 1 {
				t.Errorf("entity: type %s tags %v metadata %v", ent.Type, ent.Tags, ent.Metadata)
			}
			if _, err := e.raw.Open(ctx, done.SHA256); err != nil {
				t.Errorf("the original bytes are not kept: %v", err)
			}
			res, err := e.c.Search(ctx, postgram.SearchRequest{Query: "backfill stalled retention partitions"})
			if err != nil || len(res.Results) == 0 || res.Results[0].Entity.ID != ent.ID {
				t.Fatalf("search does not find the page first: %+v %v", res, err)
			}

			// The same URL, unchanged: the same entity, no duplicate.
			again := e.wait(e.c, must(e.svc.Submit(ctx, e.c, ingest.Input{URL: site.URL + "/post"})))
			if again.Status != driver.JobDone || again.EntityID != done.EntityID || !again.Duplicate {
				t.Fatalf("same bytes again: %+v", again)
			}
			// The page changed: its entity gets a new version.
			version.Store(1)
			changed := e.wait(e.c, must(e.svc.Submit(ctx, e.c, ingest.Input{URL: site.URL + "/post"})))
			if changed.Status != driver.JobDone || changed.EntityID != done.EntityID || !changed.Updated {
				t.Fatalf("changed page: %+v", changed)
			}
			if ent2, _ := e.c.Recall(ctx, ent.ID); ent2.Version != 2 || !strings.Contains(ent2.Content, "Edited.") {
				t.Fatalf("after the change: version %d", ent2.Version)
			}

			// An upload with front matter, then the same bytes as text.
			md := "---\ntitle: Weekly sync\nauthor: Ann\n---\n# Agenda\n\nThe migration status and the budget.\n"
			up := e.wait(e.c, must(e.svc.Submit(ctx, e.c, ingest.Input{Body: strings.NewReader(md), Filename: "sync.md", Type: postgram.TypeInteraction})))
			if up.Status != driver.JobDone || up.Title != "Weekly sync" {
				t.Fatalf("upload: %+v", up)
			}
			if u, _ := e.c.Recall(ctx, uuid.MustParse(up.EntityID)); u.Type != postgram.TypeInteraction || u.Metadata["author"] != "Ann" || u.Metadata["filename"] != "sync.md" {
				t.Fatalf("upload entity: %+v", u)
			}
			dup := e.wait(e.c, must(e.svc.Submit(ctx, e.c, ingest.Input{Text: md})))
			if !dup.Duplicate || dup.EntityID != up.EntityID {
				t.Fatalf("same bytes as text: %+v", dup)
			}

			// Failures: a 404 fails at once; a 503 is retried, then fails.
			nf := e.wait(e.c, must(e.svc.Submit(ctx, e.c, ingest.Input{URL: site.URL + "/missing"})))
			if nf.Status != driver.JobFailed || nf.Attempts != 1 || !strings.Contains(nf.Error, "404") {
				t.Fatalf("404: %+v", nf)
			}
			fl := e.wait(e.c, must(e.svc.Submit(ctx, e.c, ingest.Input{URL: site.URL + "/flaky"})))
			if fl.Status != driver.JobFailed || fl.Attempts != 2 || fails.Load() != 2 {
				t.Fatalf("503: %+v (server asked %d times)", fl, fails.Load())
			}
			// Retry queues it again with fresh attempts.
			if r, err := e.svc.Retry(ctx, e.c, uuid.MustParse(fl.ID)); err != nil || r.Status != driver.JobQueued {
				t.Fatalf("retry: %+v %v", r, err)
			}
			if fl = e.wait(e.c, fl); fl.Status != driver.JobFailed || fails.Load() != 4 {
				t.Fatalf("retried: %+v (asked %d times)", fl, fails.Load())
			}
			if _, err := e.svc.Retry(ctx, e.c, uuid.MustParse(done.ID)); !errors.Is(err, postgram.ErrConflict) {
				t.Fatalf("retry of a done job: %v", err)
			}
			if _, err := e.svc.Cancel(ctx, e.c, uuid.MustParse(done.ID)); !errors.Is(err, postgram.ErrConflict) {
				t.Fatalf("cancel of a done job: %v", err)
			}

			// The job's events reached the feed: created, the stages, done.
			stages := jobStages(ctx, t, events, done.ID)
			for _, want := range []string{"job.created:queued", "job.updated:fetching", "job.updated:extracting", "job.updated:chunking", "job.updated:embedding", "job.updated:done"} {
				if !contains(stages, want) {
					t.Fatalf("the first job's events %v lack %s", stages, want)
				}
			}
			// An upload's stages, each reported once.
			stages = jobStages(ctx, t, events, up.ID)
			want := []string{"job.created:queued", "job.updated:queued", "job.updated:extracting", "job.updated:chunking", "job.updated:embedding", "job.updated:done"}
			if d := cmp.Diff(want, stages); d != "" {
				t.Fatalf("the upload's events (-want +got):\n%s", d)
			}
		})
	}
}

// jobStages reads events until the job's done event and returns the
// job's events as kind:stage.
func jobStages(ctx context.Context, t *testing.T, events *feed.Subscription, id string) []string {
	t.Helper()
	var stages []string
	for {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		ev, err := events.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("events of job %s: %v (saw %v)", id, err, stages)
		}
		if ev.JobID != id {
			continue
		}
		stages = append(stages, ev.Kind+":"+stageOf(ev))
		if strings.HasSuffix(stages[len(stages)-1], ":done") {
			return stages
		}
	}
}

func stageOf(ev feed.Event) string {
	var d struct{ Stage string }
	_ = json.Unmarshal(ev.Data, &d)
	return d.Stage
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func must(j *ingest.Job, err error) *ingest.Job {
	if err != nil {
		panic(err)
	}
	return j
}

// TestIngestBadInput: every bad request is a clear refusal naming the
// field, and a private address is a failed job, never a fetch.
func TestIngestBadInput(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, "sqlite", true, func(c *ingest.Config) { c.Fetcher = nil; c.MaxBytes = 200_000 })
	for _, tc := range []struct {
		in    ingest.Input
		field string
	}{
		{ingest.Input{}, "url"},
		{ingest.Input{URL: "ftp://example.com/x"}, "url"},
		{ingest.Input{URL: "file:///etc/passwd"}, "url"},
		{ingest.Input{URL: "https://example.com", Text: "both"}, "url"},
		{ingest.Input{Text: strings.Repeat("x", 200_001)}, "file"},
		{ingest.Input{Body: strings.NewReader(""), Filename: "empty.txt"}, "file"},
		{ingest.Input{Text: "x", Type: "bogus"}, "type"},
		{ingest.Input{Text: "x", Visibility: "everyone"}, "visibility"},
	} {
		_, err := e.svc.Submit(ctx, e.c, tc.in)
		if !errors.Is(err, postgram.ErrInvalidArgument) || postgram.FieldOf(err) != tc.field {
			t.Errorf("%+v: %v (field %q), want a validation error on %q", tc.in, err, postgram.FieldOf(err), tc.field)
		}
	}
	// A loopback target with the default fetcher: failed, not retried.
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the private address was fetched")
	}))
	defer site.Close()
	j := e.wait(e.c, must(e.svc.Submit(ctx, e.c, ingest.Input{URL: site.URL})))
	if j.Status != driver.JobFailed || j.Attempts != 1 || !strings.Contains(j.Error, "refusing to connect") {
		t.Fatalf("private address: %+v", j)
	}
	// Bytes that are no document: failed jobs that say why, tried once.
	var bomb bytes.Buffer
	zw := zip.NewWriter(&bomb)
	w, _ := zw.Create("OEBPS/chapter1.xhtml")
	zeros := make([]byte, 1<<20)
	for range 70 { // 70 MiB once decompressed, a few KiB compressed
		w.Write(zeros)
	}
	zw.Close()
	for _, tc := range []struct {
		name, body, filename, want string
	}{
		{"corrupt EPUB", "PK\x03\x04garbage", "book.epub", "corrupt"},
		{"zip bomb", bomb.String(), "bomb.epub", "corrupt"},
		{"invalid UTF-8", "caf\xe9 au lait\xff", "notes.txt", "UTF-8"},
		{"unknown type", "\x89PNG\r\n\x1a\n\x00\x00", "picture.png", "unsupported"},
		{"PDF without text", "%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF", "scan.pdf", ""},
	} {
		j := e.wait(e.c, must(e.svc.Submit(ctx, e.c, ingest.Input{Body: strings.NewReader(tc.body), Filename: tc.filename})))
		if j.Status != driver.JobFailed || j.Attempts != 1 || !strings.Contains(j.Error, tc.want) || j.EntityID != "" {
			t.Errorf("%s: %+v", tc.name, j)
		}
	}
}

// TestIngestRights: a key writes only what it may, and sees only its own
// jobs.
func TestIngestRights(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, "sqlite", true, nil)
	key := func(name string, scopes []postgram.Scope, vis []postgram.Visibility) *postgram.Client {
		tok, _, err := e.admin.CreateKey(ctx, postgram.KeySpec{Name: name, Scopes: scopes, AllowedVisibilities: vis})
		if err != nil {
			t.Fatal(err)
		}
		c, err := e.admin.Authenticate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	rw := []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}
	a := key("a", rw, []postgram.Visibility{postgram.VisibilityWork})
	b := key("b", rw, nil)
	ro := key("ro", []postgram.Scope{postgram.ScopeRead}, nil)
	if _, err := e.svc.Submit(ctx, ro, ingest.Input{Text: "hello"}); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("read-only key: %v", err)
	}
	if _, err := e.svc.Submit(ctx, a, ingest.Input{Text: "hello", Visibility: postgram.VisibilityPersonal}); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("visibility outside the key's: %v", err)
	}
	ja := e.wait(a, must(e.svc.Submit(ctx, a, ingest.Input{Text: "the work note from a", Visibility: postgram.VisibilityWork})))
	if ja.Status != driver.JobDone {
		t.Fatalf("a's job: %+v", ja)
	}
	if _, err := e.svc.Get(ctx, b, uuid.MustParse(ja.ID)); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("b reads a's job: %v", err)
	}
	if _, err := e.svc.Cancel(ctx, b, uuid.MustParse(ja.ID)); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("b cancels a's job: %v", err)
	}
	if l, err := e.svc.List(ctx, b, ingest.ListOptions{}); err != nil || len(l) != 0 {
		t.Fatalf("b lists %d jobs (%v)", len(l), err)
	}
	if l, err := e.svc.List(ctx, e.c, ingest.ListOptions{}); err != nil || len(l) != 1 {
		t.Fatalf("the unscoped client lists %d jobs (%v)", len(l), err)
	}
	// The same bytes from b, who may see a's work note: the same entity.
	jb := e.wait(b, must(e.svc.Submit(ctx, b, ingest.Input{Text: "the work note from a", Visibility: postgram.VisibilityWork})))
	if !jb.Duplicate || jb.EntityID != ja.EntityID {
		t.Fatalf("b's duplicate: %+v", jb)
	}
	// b's events include its job, a's subscription does not.
	sub := e.hub.Subscribe(a, 0)
	for {
		cctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		ev, err := sub.Next(cctx)
		cancel()
		if err != nil {
			break
		}
		if ev.JobID == jb.ID {
			t.Fatalf("a sees b's job event %+v", ev)
		}
	}
}

// TestIngestResumesWithoutDuplicate: a server died after writing a job's
// entity and before recording it; when the lease runs out another server
// claims the job, finds that entity and finishes with it.
func TestIngestResumesWithoutDuplicate(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			e := newEnv(t, backend, false, func(c *ingest.Config) { c.Lease = 200 * time.Millisecond })
			j, err := e.svc.Submit(ctx, e.c, ingest.Input{Text: "# Runbook\n\nRestart the ingestion cluster region by region.", Filename: "runbook.md"})
			if err != nil {
				t.Fatal(err)
			}
			st := e.admin.Storage()
			claimed, err := st.ClaimJobs(ctx, e.admin.Workspace(), ingest.Kind, time.Now().UTC(), 200*time.Millisecond, 1)
			if err != nil || len(claimed) != 1 {
				t.Fatalf("the dead server's claim: %v %v", claimed, err)
			}
			// What the dead server wrote before it died.
			if _, err := e.c.Store(ctx, postgram.StoreInput{ID: uuid.MustParse(j.ID), Type: postgram.TypeDocument,
				Content: "# Runbook\n\nRestart the ingestion cluster region by region."}); err != nil {
				t.Fatal(err)
			}
			runCtx, stop := context.WithCancel(ctx)
			defer stop()
			go e.svc.Run(runCtx)
			got := e.wait(e.c, j)
			if got.Status != driver.JobDone || got.EntityID != j.ID || got.Attempts != 2 {
				t.Fatalf("resumed: %+v", got)
			}
			page, err := e.c.List(ctx, postgram.ListOptions{Types: []postgram.EntityType{postgram.TypeDocument}})
			if err != nil || page.Total != 1 {
				t.Fatalf("%d documents after the resume, want 1 (%v)", page.Total, err)
			}
		})
	}
}

// TestIngestPurgeRemovesRaw: purging an ingested entity lets the garbage
// collection delete its original bytes, and only those.
func TestIngestPurgeRemovesRaw(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, "sqlite", true, nil)
	a := e.wait(e.c, must(e.svc.Submit(ctx, e.c, ingest.Input{Text: "first document to purge"})))
	b := e.wait(e.c, must(e.svc.Submit(ctx, e.c, ingest.Input{Text: "second document to keep"})))
	if a.Status != driver.JobDone || b.Status != driver.JobDone {
		t.Fatalf("jobs: %+v %+v", a, b)
	}
	if n, err := e.svc.CollectGarbage(ctx); err != nil || n != 0 {
		t.Fatalf("nothing purged yet: %d %v", n, err)
	}
	if _, err := e.admin.Purge(ctx, postgram.PurgeRequest{IDs: []uuid.UUID{uuid.MustParse(a.EntityID)}, NoScrub: true}); err != nil {
		t.Fatal(err)
	}
	if n, err := e.svc.CollectGarbage(ctx); err != nil || n != 1 {
		t.Fatalf("after the purge: %d deleted (%v), want 1", n, err)
	}
	if _, err := e.raw.Open(ctx, a.SHA256); !errors.Is(err, raw.ErrNotFound) {
		t.Fatalf("the purged entity's bytes: %v", err)
	}
	rc, err := e.raw.Open(ctx, b.SHA256)
	if err != nil {
		t.Fatalf("the kept entity's bytes: %v", err)
	}
	rc.Close()
}

// TestIngestSectionsInSearch: an ingested document's structure becomes its
// headings, and a search result names the section its chunk sits in.
func TestIngestSectionsInSearch(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := newEnv(t, "sqlite", true, nil)
	var b strings.Builder
	b.WriteString("# Handbook\n\n")
	for i, h := range []string{"Hiring", "Onboarding", "Travel"} {
		fmt.Fprintf(&b, "## %s\n\n", h)
		for p := range 12 {
			fmt.Fprintf(&b, "Paragraph %d of %s: policy text that fills the chunk with ordinary words about the topic. ", p, h)
		}
		if i == 2 {
			b.WriteString("Reimbursement of zeppelin tickets needs the director's approval.")
		}
		b.WriteString("\n\n")
	}
	j := e.wait(e.c, must(e.svc.Submit(ctx, e.c, ingest.Input{Body: strings.NewReader(b.String()), Filename: "handbook.md"})))
	if j.Status != driver.JobDone {
		t.Fatalf("job: %+v", j)
	}
	res, err := e.c.Search(ctx, postgram.SearchRequest{Query: "zeppelin reimbursement"})
	if err != nil || len(res.Results) == 0 {
		t.Fatalf("search: %v %v", res, err)
	}
	if got := res.Results[0].Section; got != "Handbook › Travel" {
		t.Fatalf("section %q, want %q (chunk %q)", got, "Handbook › Travel", res.Results[0].ChunkContent)
	}
}

// TestIngestFailedBytesExpire: a failed upload's bytes stay for a retry,
// and garbage collection deletes them once Config.KeepFailed has passed;
// a retry then fails saying the content is gone.
func TestIngestFailedBytesExpire(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const keep = 2 * time.Second
	e := newEnv(t, "sqlite", true, func(c *ingest.Config) { c.KeepFailed = keep })
	start := time.Now()
	bad := e.wait(e.c, must(e.svc.Submit(ctx, e.c, ingest.Input{Body: strings.NewReader("\x00\x01\x02\x03 binary"), Filename: "blob.bin"})))
	ended := time.Now()
	if bad.Status != driver.JobFailed || !strings.Contains(bad.Error, "application/octet-stream") {
		t.Fatalf("binary upload: %+v", bad)
	}
	n, err := e.svc.CollectGarbage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < keep && n != 0 {
		t.Fatalf("a fresh failure's bytes were deleted (%d objects)", n)
	}
	time.Sleep(time.Until(ended.Add(keep + 100*time.Millisecond)))
	if n, err := e.svc.CollectGarbage(ctx); err != nil || n != 1 {
		t.Fatalf("after %v: %d deleted (%v), want 1", keep, n, err)
	}
	if _, err := e.raw.Open(ctx, bad.SHA256); !errors.Is(err, raw.ErrNotFound) {
		t.Fatalf("the expired failure's bytes: %v", err)
	}
	if _, err := e.svc.Retry(ctx, e.c, uuid.MustParse(bad.ID)); err != nil {
		t.Fatal(err)
	}
	if r := e.wait(e.c, bad); r.Status != driver.JobFailed || !strings.Contains(r.Error, "gone") {
		t.Fatalf("retry after expiry: %+v", r)
	}
}
