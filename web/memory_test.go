package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
)

func TestMemoryViewsAndGrooming(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, csrf := s.signedInAdmin()
	ctx := context.Background()
	agent, err := s.admin.Authenticate(ctx, s.adminKey) // a key's client: session context is scoped to it
	if err != nil {
		t.Fatal(err)
	}
	old, err := agent.StoreSessionContext(ctx, postgram.SessionContextInput{Content: "we were debugging the importer", Topic: "importer"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.admin.Client().Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "The importer reads CSV files.",
		Metadata: map[string]any{"memory_role": "durable_memory"}}); err != nil {
		t.Fatal(err)
	}
	code, _, body := s.get(b, "/memory")
	if code != http.StatusOK || !strings.Contains(body, "we were debugging the importer") || !strings.Contains(body, "The importer reads CSV files.") {
		t.Fatalf("memory page: %d\n%s", code, body)
	}
	// Nothing is older than an hour yet; in two hours the note is stale.
	if _, _, body := s.get(b, "/memory?groom=1&older_than=1h"); !strings.Contains(body, "0 eligible") {
		t.Fatalf("dry run now:\n%s", body)
	}
	if code, _, body := s.get(b, "/memory?groom=1&older_than=soon"); code != http.StatusBadRequest || !strings.Contains(body, "older_than") {
		t.Fatalf("bad older_than: %d", code)
	}
	// The library's clock is the real one: context older than 0 days is
	// every session context.
	code, _, body = s.get(b, "/memory?groom=1&older_than=0d")
	if code != http.StatusOK || !strings.Contains(body, "1 eligible") || !strings.Contains(body, "we were debugging the importer") {
		t.Fatalf("dry run: %d\n%s", code, body)
	}
	got, _ := s.admin.Client().Recall(ctx, old.ID)
	if got.Status == postgram.StatusArchived {
		t.Fatal("the dry run archived")
	}
	res, body := s.post(b, "/memory/groom", url.Values{"csrf": {csrf}, "groom": {"1"}, "older_than": {"0d"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "Archived 1") {
		t.Fatalf("archive: %d\n%s", res.StatusCode, body)
	}
	got, _ = s.admin.Client().Recall(ctx, old.ID)
	if got.Status != postgram.StatusArchived {
		t.Fatalf("after archiving: %s", got.Status)
	}
}
