package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
)

// TestIngestSurvivesKill kills a server (SIGKILL) while its ingestion job
// is fetching; a second server on the same database takes the job over
// when the lease runs out and finishes it, with one entity and no
// duplicate.
func TestIngestSurvivesKill(t *testing.T) {
	t.Parallel()
	dsn := freshDSN(t)
	admin := adminClient(t, dsn)
	key, _ := newKey(t, admin, postgram.KeySpec{Name: "ingest", Scopes: postgram.AllScopes})
	var hits atomic.Int32
	first := make(chan struct{})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			close(first)
			<-r.Context().Done() // the first server dies waiting for this
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><title>Runbook</title></head><body><article><h1>Runbook</h1>
<p>Fail over the primary database by promoting the replica, then repoint the writers and check replication lag.</p>
<p>Keep the old primary fenced until it has been rebuilt from a fresh base backup.</p></article></body></html>`)
	}))
	defer site.Close()
	env := []string{"POSTGRAM_DATA_DIR=" + t.TempDir(), "INGEST_ALLOW_PRIVATE=true", "INGEST_LEASE_SECONDS=2"}
	a := startServer(t, dsn, env...)
	code, body := api(t, "POST", a.URL+"/api/ingest", key, map[string]any{"url": site.URL + "/runbook"})
	if code != http.StatusAccepted {
		t.Fatalf("ingest: %d %v", code, body)
	}
	id := body["job"].(map[string]any)["id"].(string)
	select {
	case <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("the first server never fetched")
	}
	if err := a.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-a.done

	b := startServer(t, dsn, env...)
	deadline := time.Now().Add(60 * time.Second)
	var job map[string]any
	for {
		code, body := api(t, "GET", b.URL+"/api/jobs/"+id, key, nil)
		if code != http.StatusOK {
			t.Fatalf("job: %d %v", code, body)
		}
		job = body["job"].(map[string]any)
		if job["status"] == "done" || job["status"] == "failed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the job was not taken over: %v\n%s", job, b.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if job["status"] != "done" || job["attempts"].(float64) != 2 || job["entity_id"] != id {
		t.Fatalf("after the takeover: %v", job)
	}
	code, list := api(t, "GET", b.URL+"/api/entities?type=document", key, nil)
	if code != http.StatusOK || list["total"].(float64) != 1 {
		t.Fatalf("documents after the takeover: %d %v", code, list["total"])
	}
}
