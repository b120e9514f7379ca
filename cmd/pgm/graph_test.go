package main

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
)

func TestGraphCommands(t *testing.T) {
	t.Parallel()
	s := newRealServer(t)
	store := func(typ, content string) string {
		t.Helper()
		r := s.pgm(t, "--json", "store", content, "--type", typ)
		wantOK(t, r)
		return jsonMap(t, r.stdout)["id"].(string)
	}
	atlas := store("project", "Project Atlas")
	alice := store("person", "Alice Example")
	doc := store("document", "Atlas kickoff notes")

	r := s.pgm(t, "--json", "link", atlas, alice, "--relation", "involves", "--confidence", "0.8", "--metadata", `{"role":"lead"}`)
	wantOK(t, r)
	edge := jsonMap(t, r.stdout)
	if edge["relation"] != "involves" || edge["confidence"] != 0.8 || edge["source"] != "manual" || edge["source_id"] != atlas {
		t.Fatalf("link --json: %v", edge)
	}
	r = s.pgm(t, "link", doc, atlas, "-r", "mentioned_in")
	wantOK(t, r)
	if !strings.Contains(r.stdout, "Linked "+doc+" -[mentioned_in]-> "+atlas) {
		t.Fatalf("link human output: %q", r.stdout)
	}
	// Usage errors before any request; server validation names the field.
	if r := s.pgm(t, "link", atlas, alice); r.code != 2 || !strings.Contains(r.stderr, "--relation") {
		t.Fatalf("link without --relation: %+v", r)
	}
	if r := s.pgm(t, "link", atlas, atlas, "--relation", "x"); r.code == 0 || !strings.Contains(r.stderr, "target_id") {
		t.Fatalf("self link: %+v", r)
	}
	if r := s.pgm(t, "expand", atlas, "--depth", "4"); r.code != 2 {
		t.Fatalf("expand --depth 4: %+v", r)
	}

	r = s.pgm(t, "expand", alice, "--depth", "2")
	wantOK(t, r)
	for _, want := range []string{"Alice Example", "Project Atlas", "Atlas kickoff notes", "involves", "mentioned_in"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("expand table lacks %q:\n%s", want, r.stdout)
		}
	}
	r = s.pgm(t, "--json", "expand", alice, "--depth", "2", "--relation", "involves")
	wantOK(t, r)
	g := jsonMap(t, r.stdout)
	if len(g["entities"].([]any)) != 2 || len(g["edges"].([]any)) != 1 {
		t.Fatalf("expand --json --relation: %v", g)
	}
	r = s.pgm(t, "--toon", "expand", alice, "--depth", "2")
	wantOK(t, r)
	if !strings.Contains(r.stdout, "entities[3]{id,type,preview}:") {
		t.Fatalf("expand --toon:\n%s", r.stdout)
	}
	r = s.pgm(t, "--full-response", "expand", alice)
	wantOK(t, r)
	if full := jsonMap(t, r.stdout); full["entities"].([]any)[0].(map[string]any)["metadata"] == nil {
		t.Fatalf("expand --full-response: %v", full)
	}

	r = s.pgm(t, "unlink", edge["id"].(string))
	wantOK(t, r)
	if !strings.Contains(r.stdout, "Deleted edge") {
		t.Fatalf("unlink: %q", r.stdout)
	}
	if r := s.pgm(t, "unlink", edge["id"].(string)); r.code == 0 || !strings.Contains(r.stderr, "not found") {
		t.Fatalf("unlink twice: %+v", r)
	}
	if r := s.pgm(t, "unlink", "nope"); r.code != 2 {
		t.Fatalf("unlink of a bad id: %+v", r)
	}
	edges, err := s.client.Edges(t.Context(), mustParse(t, atlas), postgram.EdgesOptions{})
	if err != nil || len(edges) != 1 || edges[0].Relation != "mentioned_in" {
		t.Fatalf("edges left: %+v, %v", edges, err)
	}
}

func mustParse(t *testing.T, s string) uuid.UUID {
	t.Helper()
	id, err := postgram.ParseID("id", s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
