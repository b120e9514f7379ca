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
