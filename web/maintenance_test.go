package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

func TestMaintenancePage(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, csrf := s.signedInAdmin()
	a := s.store1("Project Lighthouse.", postgram.TypeProject)
	p := s.store1("Dana Whitfield.", postgram.TypePerson)
	now := time.Now().UTC()
	weak := driver.Edge{ID: uuid.New(), SourceID: p.ID, TargetID: a.ID, Relation: "mentions", Confidence: 0.3,
		Source: postgram.EdgeSourceLLM, CreatedAt: now, UpdatedAt: now}
	strong := weak
	strong.ID, strong.Relation, strong.Confidence = uuid.New(), "works_on", 0.9
	if _, err := s.store.UpsertEdges(context.Background(), postgram.DefaultWorkspace, []driver.Edge{weak, strong}, nil); err != nil {
		t.Fatal(err)
	}
	code, _, body := s.get(b, "/admin/maintenance?below=0.5")
	if code != http.StatusOK || !strings.Contains(body, "1 edges would be deleted") || !strings.Contains(body, "<td>mentions</td>") ||
		strings.Contains(body, "<td>works_on</td>") || !strings.Contains(body, "<td>active</td>") {
		t.Fatalf("dry run: %d\n%s", code, body)
	}
	if code, _, body := s.get(b, "/admin/maintenance?below=much"); code != http.StatusBadRequest || !strings.Contains(body, "below:") {
		t.Fatalf("bad below: %d", code)
	}
	res, body := s.post(b, "/admin/maintenance/prune", url.Values{"csrf": {csrf}, "below": {"0.5"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "Deleted 1 edges") {
		t.Fatalf("prune: %d\n%s", res.StatusCode, body)
	}
	es, err := s.admin.Client().Edges(context.Background(), p.ID, postgram.EdgesOptions{})
	if err != nil || len(es) != 1 || es[0].Relation != "works_on" {
		t.Fatalf("edges after the prune: %v %v", es, err)
	}
}

// TestModelSwitchConsole: embeddings migrate from the console: a dry run
// names the models and changes nothing, the confirmation switches and
// queues every entity, bad input is refused naming the field; re-embed
// queues the workspace with the active model.
func TestModelSwitchConsole(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, csrf := s.signedInAdmin()
	s.store1("Project Lighthouse.", postgram.TypeProject)
	s.store1("Dana Whitfield.", postgram.TypePerson)
	code, _, body := s.get(b, "/admin/maintenance?provider=openai&model=text-embedding-3-small&dimensions=1536")
	if code != http.StatusOK || !strings.Contains(body, "Dry run:") || !strings.Contains(body, "text-embedding-3-small (1536 dimensions)") {
		t.Fatalf("dry run: %d\n%s", code, body)
	}
	before, _ := s.admin.Models(t.Context())
	if code, _, body := s.get(b, "/admin/maintenance?provider=openai&model=m&dimensions=lots"); code != http.StatusBadRequest || !strings.Contains(body, "dimensions:") {
		t.Fatalf("bad dimensions: %d", code)
	}
	if res, _ := s.post(b, "/admin/maintenance/model", url.Values{"csrf": {csrf}, "provider": {"openai"}, "model": {"m"}, "dimensions": {"8"}}); res.StatusCode != http.StatusBadRequest {
		t.Fatalf("switch without the confirmation: %d", res.StatusCode)
	}
	if after, _ := s.admin.Models(t.Context()); len(after) != len(before) {
		t.Fatalf("a dry run or a refused switch registered a model: %+v", after)
	}
	res, body := s.post(b, "/admin/maintenance/model", url.Values{"csrf": {csrf}, "provider": {"openai"},
		"model": {"text-embedding-3-small"}, "dimensions": {"1536"}, "confirm": {"yes"}})
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "2 entities queued") || !strings.Contains(body, "EMBEDDING_DIMENSIONS=1536") {
		t.Fatalf("switch: %d\n%s", res.StatusCode, body)
	}
	ms, _ := s.admin.Models(t.Context())
	active := ""
	for _, m := range ms {
		if m.Active {
			active = m.Name
		}
	}
	if active != "text-embedding-3-small" {
		t.Fatalf("active model after the switch: %+v", ms)
	}
	res, body = s.post(b, "/admin/maintenance/reembed", url.Values{"csrf": {csrf}})
	if res.StatusCode != http.StatusOK || !strings.Contains(body, "Queued 2 entities for re-embedding") {
		t.Fatalf("reembed: %d\n%s", res.StatusCode, body)
	}
}
