package rest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
)

func TestGraphRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	atlas := e.store(e.admin, map[string]any{"type": "project", "content": "Project Atlas"})
	alice := e.store(e.admin, map[string]any{"type": "person", "content": "Alice"})
	bob := e.store(e.admin, map[string]any{"type": "person", "content": "Bob", "visibility": "personal"})

	// Link: 201 {edge}, confidence defaults to 1, source manual.
	var created struct{ Edge postgram.Edge }
	r := e.do("POST", "/api/edges", e.admin, map[string]any{"source_id": atlas.ID, "target_id": alice.ID, "relation": "involves",
		"metadata": map[string]any{"note": "lead"}}).want(http.StatusCreated)
	r.decode(&created)
	edge := created.Edge
	if edge.Confidence != 1 || edge.Source != "manual" || edge.Relation != "involves" || edge.Metadata["note"] != "lead" {
		t.Fatalf("created edge: %s", r.Body)
	}
	for _, k := range []string{"id", "source_id", "target_id", "relation", "confidence", "source", "metadata", "created_at"} {
		if _, ok := r.object()["edge"].(map[string]any)[k]; !ok {
			t.Errorf("edge lacks %q: %s", k, r.Body)
		}
	}
	// Upsert keeps the id.
	var again struct{ Edge postgram.Edge }
	e.do("POST", "/api/edges", e.admin, map[string]any{"source_id": atlas.ID, "target_id": alice.ID, "relation": "involves",
		"confidence": 0.5}).want(http.StatusCreated).decode(&again)
	if again.Edge.ID != edge.ID || again.Edge.Confidence != 0.5 {
		t.Fatalf("upsert: %+v", again.Edge)
	}
	e.do("POST", "/api/edges", e.admin, map[string]any{"source_id": bob.ID, "target_id": atlas.ID, "relation": "part_of"}).want(http.StatusCreated)

	// Bad input: each names its field.
	for _, tc := range []struct {
		body  any
		field string
	}{
		{map[string]any{"target_id": alice.ID, "relation": "x"}, "source_id"},
		{map[string]any{"source_id": "nope", "target_id": alice.ID, "relation": "x"}, "source_id"},
		{map[string]any{"source_id": atlas.ID, "target_id": atlas.ID, "relation": "x"}, "target_id"},
		{map[string]any{"source_id": atlas.ID, "target_id": uuid.New(), "relation": "x"}, "target_id"},
		{map[string]any{"source_id": atlas.ID, "target_id": alice.ID, "relation": ""}, "relation"},
		{map[string]any{"source_id": atlas.ID, "target_id": alice.ID, "relation": strings.Repeat("x", 101)}, "relation"},
		{map[string]any{"source_id": atlas.ID, "target_id": alice.ID, "relation": "x", "confidence": 2}, "confidence"},
		{map[string]any{"source_id": atlas.ID, "target_id": alice.ID, "relation": "x", "confidence": "high"}, "confidence"},
		{map[string]any{"source_id": atlas.ID, "target_id": alice.ID, "relation": "x", "weight": 1}, "weight"},
	} {
		e.do("POST", "/api/edges", e.admin, tc.body).wantError(http.StatusBadRequest, apierror.Validation, tc.field, "")
	}

	// Entity edges with direction and relation filters.
	var list struct{ Edges []postgram.Edge }
	e.do("GET", "/api/entities/"+atlas.ID.String()+"/edges", e.admin, nil).want(http.StatusOK).decode(&list)
	if len(list.Edges) != 2 {
		t.Fatalf("edges: %+v", list.Edges)
	}
	e.do("GET", "/api/entities/"+atlas.ID.String()+"/edges?direction=target", e.admin, nil).want(http.StatusOK).decode(&list)
	if len(list.Edges) != 1 || list.Edges[0].Relation != "part_of" {
		t.Fatalf("incoming edges: %+v", list.Edges)
	}
	e.do("GET", "/api/entities/"+atlas.ID.String()+"/edges?relation=involves&direction=source", e.admin, nil).want(http.StatusOK).decode(&list)
	if len(list.Edges) != 1 || list.Edges[0].ID != edge.ID {
		t.Fatalf("filtered edges: %+v", list.Edges)
	}
	e.do("GET", "/api/entities/"+atlas.ID.String()+"/edges?direction=up", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "direction", "")
	e.do("GET", "/api/entities/"+atlas.ID.String()+"/edges?limit=3", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "limit", "")
	e.do("GET", "/api/entities/"+uuid.NewString()+"/edges", e.admin, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")

	// Graph: depth bounds, relation types, and the key's limits.
	var g struct {
		Entities  []postgram.Entity
		Edges     []postgram.Edge
		Truncated bool
	}
	e.do("GET", "/api/entities/"+alice.ID.String()+"/graph?depth=2", e.admin, nil).want(http.StatusOK).decode(&g)
	if len(g.Entities) != 3 || len(g.Edges) != 2 || g.Entities[0].ID != alice.ID {
		t.Fatalf("graph depth 2: %+v", g)
	}
	e.do("GET", "/api/entities/"+alice.ID.String()+"/graph?depth=2&relation_types=involves", e.admin, nil).want(http.StatusOK).decode(&g)
	if len(g.Entities) != 2 {
		t.Fatalf("graph with relation_types: %+v", g)
	}
	e.do("GET", "/api/entities/"+alice.ID.String()+"/graph?depth=2&max_nodes=2", e.admin, nil).want(http.StatusOK).decode(&g)
	if len(g.Entities) != 2 || !g.Truncated {
		t.Fatalf("graph with max_nodes: %+v", g)
	}
	e.do("GET", "/api/entities/"+alice.ID.String()+"/graph?depth=4", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "depth", "")
	e.do("GET", "/api/entities/"+alice.ID.String()+"/graph?min_confidence=1.5", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "min_confidence", "")
	work := e.key(postgram.KeySpec{Name: "work", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite},
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
	e.do("GET", "/api/entities/"+alice.ID.String()+"/graph?depth=3", work, nil).want(http.StatusOK).decode(&g)
	if len(g.Entities) != 2 {
		t.Fatalf("graph for a limited key reached a hidden entity: %+v", g.Entities)
	}
	e.do("GET", "/api/entities/"+bob.ID.String()+"/graph", work, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
	e.do("POST", "/api/edges", work, map[string]any{"source_id": bob.ID, "target_id": alice.ID, "relation": "knows"}).
		wantError(http.StatusBadRequest, apierror.Validation, "source_id", "")

	// Unlink: scope, visibility, then success and 404.
	reader := e.key(postgram.KeySpec{Name: "reader", Scopes: []postgram.Scope{postgram.ScopeRead}})
	e.do("DELETE", "/api/edges/"+edge.ID.String(), reader, nil).wantError(http.StatusForbidden, apierror.Forbidden, "", "")
	var del struct {
		ID      uuid.UUID
		Deleted bool
	}
	e.do("DELETE", "/api/edges/"+edge.ID.String(), e.admin, nil).want(http.StatusOK).decode(&del)
	if del.ID != edge.ID || !del.Deleted {
		t.Fatalf("delete: %+v", del)
	}
	e.do("DELETE", "/api/edges/"+edge.ID.String(), e.admin, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
	e.do("DELETE", "/api/edges/not-a-uuid", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "id", "")
	e.do("GET", "/api/edges/"+edge.ID.String(), e.admin, nil).wantError(http.StatusMethodNotAllowed, apierror.MethodNotAllowed, "", "")
}
