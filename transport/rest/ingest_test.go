package rest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/ingest/fetch"
	"github.com/postgram-go/postgram/ingest/raw"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/rest"
	"github.com/postgram-go/postgram/wire"
)

// withIngest runs an ingest service (reaching httptest servers, 64 KiB
// uploads) for the server.
func withIngest(t *testing.T) envOption {
	return func(c *rest.Config) {
		adm, err := c.Client.Admin()
		if err != nil {
			t.Fatal(err)
		}
		rs, err := raw.Open("", t.TempDir(), 64<<10)
		if err != nil {
			t.Fatal(err)
		}
		svc, err := ingest.New(adm, ingest.Config{Raw: rs, Fetcher: fetch.New(fetch.Config{AllowPrivate: true}),
			MaxBytes: 64 << 10, Poll: 50 * time.Millisecond, EmbedWait: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = svc.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		c.Ingest = svc
	}
}

// waitJob polls GET /api/jobs/{id} until the job ends.
func (e *env) waitJob(token, id string) *ingest.Job {
	e.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var r wire.JobResponse
		e.do("GET", "/api/jobs/"+id, token, nil).want(http.StatusOK).decode(&r)
		if r.Job.Status.Final() {
			return r.Job
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("job %s still %s", id, r.Job.Status)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func upload(t *testing.T, fields map[string]string, filename, content string) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, k := range []string{"type", "tags", "visibility", "metadata"} {
		if v, ok := fields[k]; ok {
			_ = mw.WriteField(k, v)
		}
	}
	fw, err := mw.CreateFormFile("file", filename)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write([]byte(content))
	mw.Close()
	return b.Bytes(), mw.FormDataContentType()
}

func TestIngestRoutes(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			e := newEnvOn(t, backend, withIngest(t))
			site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				fmt.Fprint(w, "Release checklist: tag the build, publish the notes, tell support.")
			}))
			defer site.Close()

			// A URL, as JSON.
			var r wire.JobResponse
			e.do("POST", "/api/ingest", e.admin, map[string]any{"url": site.URL + "/checklist.txt", "tags": "release"}).
				want(http.StatusAccepted).decode(&r)
			j := e.waitJob(e.admin, r.Job.ID)
			if j.Status != "done" || j.EntityID == "" {
				t.Fatalf("url job: %+v", j)
			}
			ent := e.do("GET", "/api/entities/"+j.EntityID, e.admin, nil).want(http.StatusOK).object()["entity"].(map[string]any)
			if !strings.Contains(ent["content"].(string), "publish the notes") || ent["type"] != "document" {
				t.Fatalf("entity: %v", ent)
			}

			// A file, as multipart: fields first, then the file.
			body, ct := upload(t, map[string]string{"type": "interaction", "tags": "meeting, weekly",
				"metadata": `{"project":"lighthouse"}`}, "notes.md", "# Weekly\n\nWe agreed to ship on Friday.\n")
			req, _ := http.NewRequest("POST", e.http.URL+"/api/ingest", bytes.NewReader(body))
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Authorization", "Bearer "+e.admin)
			e.send(req).want(http.StatusAccepted).decode(&r)
			up := e.waitJob(e.admin, r.Job.ID)
			if up.Status != "done" || up.Filename != "notes.md" {
				t.Fatalf("upload job: %+v", up)
			}
			ue := e.do("GET", "/api/entities/"+up.EntityID, e.admin, nil).want(http.StatusOK).object()["entity"].(map[string]any)
			if ue["type"] != "interaction" || ue["metadata"].(map[string]any)["project"] != "lighthouse" || len(ue["tags"].([]any)) != 2 {
				t.Fatalf("upload entity: %v", ue)
			}

			// Bad input: clear refusals.
			e.do("POST", "/api/ingest", e.admin, map[string]any{"url": "https://x.example", "text": "both"}).
				wantError(http.StatusBadRequest, apierror.Validation, "url", "exactly one")
			e.do("POST", "/api/ingest", e.admin, map[string]any{"url": "gopher://x.example"}).
				wantError(http.StatusBadRequest, apierror.Validation, "url", "http")
			big, ct := upload(t, nil, "big.txt", strings.Repeat("x", 70<<10))
			req, _ = http.NewRequest("POST", e.http.URL+"/api/ingest", bytes.NewReader(big))
			req.Header.Set("Content-Type", ct)
			req.Header.Set("Authorization", "Bearer "+e.admin)
			if st := e.send(req).Status; st != http.StatusRequestEntityTooLarge {
				t.Fatalf("a file over the limit: status %d", st)
			}
			e.do("GET", "/api/jobs?status=finished", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "status", "")
			e.do("GET", "/api/jobs/not-an-id", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "id", "")
			e.do("POST", "/api/jobs/"+j.ID+"/retry", e.admin, nil).wantError(http.StatusConflict, apierror.Conflict, "", "")

			// Listing, and another key sees none of these jobs.
			var l wire.JobList
			e.do("GET", "/api/jobs?status=done&limit=10", e.admin, nil).want(http.StatusOK).decode(&l)
			if len(l.Jobs) != 2 {
				t.Fatalf("%d done jobs, want 2", len(l.Jobs))
			}
			other := e.key(postgram.KeySpec{Name: "other", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
			e.do("GET", "/api/jobs", other, nil).want(http.StatusOK).decode(&l)
			if len(l.Jobs) != 0 {
				t.Fatalf("another key lists %d jobs", len(l.Jobs))
			}
			e.do("GET", "/api/jobs/"+j.ID, other, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")

			// The events: over SSE from the start, then resumed after the
			// second event with Last-Event-ID.
			evs := readSSE(t, e, "/api/events?after=0&kinds=entity", "", 2)
			if evs[0].Kind != "entity.created" || evs[0].EntityID != j.EntityID {
				t.Fatalf("first event: %+v", evs[0])
			}
			resumed := readSSE(t, e, "/api/events?kinds=entity.created", evs[0].ID(), 1)
			if resumed[0].Seq <= evs[0].Seq || resumed[0].EntityID != up.EntityID {
				t.Fatalf("resumed after %d: %+v", evs[0].Seq, resumed[0])
			}
			e.do("GET", "/api/events?after=x", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "after", "")

			// And over a WebSocket.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.http.URL, "http")+"/api/events/ws?after=0&kinds=job",
				&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + e.admin}}})
			if err != nil {
				t.Fatal(err)
			}
			defer conn.CloseNow()
			_, msg, err := conn.Read(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var first wire.Event
			if err := json.Unmarshal(msg, &first); err != nil || first.Kind != "job.created" || first.JobID != j.ID {
				t.Fatalf("first WebSocket event: %s (%v)", msg, err)
			}
			// A new write arrives live.
			e.do("POST", "/api/ingest", e.admin, map[string]any{"text": "live over the socket"}).want(http.StatusAccepted).decode(&r)
			for {
				_, msg, err := conn.Read(ctx)
				if err != nil {
					t.Fatalf("waiting for the live job event: %v", err)
				}
				var ev wire.Event
				_ = json.Unmarshal(msg, &ev)
				if ev.JobID == r.Job.ID {
					break
				}
			}
			conn.Close(websocket.StatusNormalClosure, "")
			// Closing the streams (server shutdown) ends an open SSE stream.
			done := make(chan struct{})
			go func() {
				defer close(done)
				req, _ := http.NewRequest("GET", e.http.URL+"/api/events", nil)
				req.Header.Set("Authorization", "Bearer "+e.admin)
				resp, err := e.http.Client().Do(req)
				if err == nil {
					_, _ = bufio.NewReader(resp.Body).ReadString(0)
					resp.Body.Close()
				}
			}()
			time.Sleep(100 * time.Millisecond)
			e.server.CloseStreams()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("an SSE stream outlived CloseStreams")
			}
		})
	}
}

// readSSE reads n events from an SSE stream.
func readSSE(t *testing.T, e *env, path, lastID string, n int) []wire.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.http.URL+path, nil)
	req.Header.Set("Authorization", "Bearer "+e.admin)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := e.http.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("SSE: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	var out []wire.Event
	var id, kind string
	for sc.Scan() && len(out) < n {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var ev wire.Event
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil {
				t.Fatal(err)
			}
			if strconv.FormatInt(ev.Seq, 10) != id || ev.Kind != kind {
				t.Fatalf("SSE id %q event %q, data %+v", id, kind, ev)
			}
			out = append(out, ev)
		}
	}
	if len(out) < n {
		t.Fatalf("read %d of %d events (%v)", len(out), n, sc.Err())
	}
	return out
}

func TestIngestNotConfigured(t *testing.T) {
	t.Parallel()
	e := newEnvOn(t, "sqlite")
	e.do("POST", "/api/ingest", e.admin, map[string]any{"text": "x"}).wantError(http.StatusServiceUnavailable, apierror.Unavailable, "", "not configured")
	e.do("GET", "/api/jobs", e.admin, nil).wantError(http.StatusServiceUnavailable, apierror.Unavailable, "", "")
}
