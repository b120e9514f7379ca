package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/postgram-go/postgram"
)

// smallGraph links a project to a person and a decision, and the decision
// to a task: depth 1 from the project reaches three entities, depth 2 four.
func smallGraph(t *testing.T, s *site) (project, person, decision, task *postgram.Entity) {
	t.Helper()
	project = s.store1("Project Lighthouse is the search rewrite.", postgram.TypeProject)
	person = s.store1("Dana Whitfield is a staff engineer.", postgram.TypePerson)
	decision = s.store1("Decision: Lighthouse stores vectors in pgvector.", postgram.TypeMemory)
	task = s.store1("Benchmark the HNSW index for Lighthouse.", postgram.TypeTask)
	c := s.admin.Client()
	for _, l := range []postgram.LinkInput{
		{SourceID: person.ID, TargetID: project.ID, Relation: "works_on"},
		{SourceID: decision.ID, TargetID: project.ID, Relation: "part_of"},
		{SourceID: task.ID, TargetID: decision.ID, Relation: "follows_from"},
	} {
		if _, err := c.Link(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	return
}

func TestGraphPageAndData(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, _ := s.signedInAdmin()
	project, _, _, task := smallGraph(t, s)

	var g graphJSON
	get := func(q string) int {
		res, err := b.Get(s.srv.URL + "/entities/" + project.ID.String() + "/graph.json" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		g = graphJSON{}
		if res.StatusCode == http.StatusOK {
			if err := json.NewDecoder(res.Body).Decode(&g); err != nil {
				t.Fatal(err)
			}
		}
		return res.StatusCode
	}
	if code := get(""); code != http.StatusOK || len(g.Nodes) != 3 || len(g.Edges) != 2 || g.Seed != project.ID.String() {
		t.Fatalf("depth 1: %d %+v", code, g)
	}
	if code := get("?depth=2"); code != http.StatusOK || len(g.Nodes) != 4 {
		t.Fatalf("depth 2: %d, %d nodes", code, len(g.Nodes))
	}
	if code := get("?depth=2&relation=works_on"); code != http.StatusOK || len(g.Nodes) != 2 {
		t.Fatalf("relation filter: %d, %d nodes", code, len(g.Nodes))
	}
	if code := get("?depth=4"); code != http.StatusBadRequest {
		t.Fatalf("depth 4: %d", code)
	}
	code, _, body := s.get(b, "/entities/"+project.ID.String()+"/graph?depth=2")
	if code != http.StatusOK || !strings.Contains(body, "4 entities, 3 edges") || !strings.Contains(body, `data-depth="2"`) ||
		!strings.Contains(body, task.ID.String()) {
		t.Fatalf("graph page: %d\n%s", code, body)
	}
	if code, loc, _ := s.get(s.browser(), "/entities/"+project.ID.String()+"/graph.json"); code != http.StatusSeeOther || loc != "/login" {
		t.Fatalf("graph data signed out: %d %q", code, loc)
	}
}

// TestBrowserGraphView draws the neighbourhood with the vendored
// Cytoscape.js under the CSP (no console error, no blocked inline style).
func TestBrowserGraphView(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	project, _, _, _ := smallGraph(t, s)
	ctx, problems := browserCtx(t)
	signInBrowser(t, ctx, s)
	at := func(path, cond string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.readyState === "complete" && location.pathname === %q && (%s)`, path, cond))
	}
	path := "/entities/" + project.ID.String() + "/graph"
	if err := chromedp.Do(ctx, chromedp.Navigate(s.srv.URL+path+"?depth=2"),
		at(path, `document.getElementById("graph").dataset.rendered === "4" || document.getElementById("graph").dataset.error`)); err != nil {
		t.Fatal(err)
	}
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(document.getElementById("graph").dataset.error || "") + "|" + document.querySelectorAll("#graph canvas").length`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(state, "|") || state == "|0" {
		t.Fatalf("graph not drawn: %q", state)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the graph page logged errors:\n%s", strings.Join(p, "\n"))
	}
}
