package mcp_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/toon"
)

func TestGraphTools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := connect(t, e.ts.URL, bearer(e.rwKey(t)))
	id := func(sc map[string]any) string { return sc["entity"].(map[string]any)["id"].(string) }
	atlas := id(ok(t, c, "store", map[string]any{"type": "project", "content": "Project Atlas: the new billing pipeline"}))
	alice := id(ok(t, c, "store", map[string]any{"type": "person", "content": "Alice, staff engineer"}))
	doc := id(ok(t, c, "store", map[string]any{"type": "document", "content": "Atlas design review notes"}))

	// link: compact ack; stringly-typed confidence is accepted.
	sc := ok(t, c, "link", map[string]any{"source_id": atlas, "target_id": alice, "relation": "involves", "confidence": "0.9"})
	edge := sc["edge"].(map[string]any)
	if edge["relation"] != "involves" || edge["confidence"] != 0.9 || edge["source"] != "manual" || edge["id"] == "" {
		t.Fatalf("link compact = %v", sc)
	}
	if _, has := edge["created_at"]; has {
		t.Errorf("compact link echoes timestamps: %v", edge)
	}
	full := ok(t, c, "link", map[string]any{"source_id": doc, "target_id": atlas, "relation": "mentioned_in",
		"metadata": `{"page": 3}`, "full_response": true})
	if fe := full["edge"].(map[string]any); fe["created_at"] == nil || fe["metadata"].(map[string]any)["page"] != float64(3) {
		t.Fatalf("link full = %v", full)
	}

	// Bad input names the field.
	for _, tc := range []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"source_id": atlas, "target_id": atlas, "relation": "x"}, "target_id"},
		{map[string]any{"source_id": "nope", "target_id": atlas, "relation": "x"}, "source_id"},
		{map[string]any{"source_id": atlas, "target_id": uuid.NewString(), "relation": "x"}, "target_id"},
		{map[string]any{"source_id": atlas, "target_id": alice, "relation": strings.Repeat("r", 101)}, "relation"},
		{map[string]any{"source_id": atlas, "target_id": alice, "relation": "x", "confidence": 7}, "confidence"},
	} {
		body := fail(t, c, "link", tc.args, "VALIDATION")
		if d, _ := body["details"].(map[string]any); d == nil || d["field"] != tc.field {
			t.Errorf("link %v: details %v, want field %s", tc.args, body["details"], tc.field)
		}
	}
	fail(t, c, "expand", map[string]any{"id": alice, "depth": 4}, "VALIDATION")
	fail(t, c, "expand", map[string]any{"id": uuid.NewString()}, "NOT_FOUND")

	// expand: compact rows with depth, every edge among the reached entities.
	g := ok(t, c, "expand", map[string]any{"id": alice, "depth": "2"})
	ents, edges := g["entities"].([]any), g["edges"].([]any)
	if len(ents) != 3 || len(edges) != 2 {
		t.Fatalf("expand depth 2 = %v", g)
	}
	first := ents[0].(map[string]any)
	if first["id"] != alice || first["depth"] != float64(0) || first["content"] == "" {
		t.Fatalf("seed row = %v", first)
	}
	if _, has := first["metadata"]; has {
		t.Errorf("compact expand carries metadata: %v", first)
	}
	if g := ok(t, c, "expand", map[string]any{"id": alice, "depth": 2, "relation_types": "involves"}); len(g["entities"].([]any)) != 2 {
		t.Fatalf("expand with relation_types = %v", g)
	}
	if g := ok(t, c, "expand", map[string]any{"id": alice, "depth": 2, "full_response": "true"}); g["entities"].([]any)[0].(map[string]any)["metadata"] == nil {
		t.Fatalf("expand full = %v", g)
	}
	res, _ := call(t, c, "expand", map[string]any{"id": alice, "depth": 2, "toon": true})
	if _, err := toon.Unmarshal([]byte(text(t, res))); err != nil {
		t.Fatalf("expand toon does not decode: %v\n%s", err, text(t, res))
	}
	if txt := text(t, res); !strings.Contains(txt, "entities[3]{id,type,depth,content}:") || !strings.Contains(txt, "edges[2]{") {
		t.Fatalf("toon expand is not tabular:\n%s", txt)
	}

	// A key limited to shared entities neither sees nor follows the personal one.
	limited := connect(t, e.ts.URL, bearer(e.key(t, postgram.KeySpec{Name: "shared-only",
		Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}, AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})))
	secret := id(ok(t, c, "store", map[string]any{"type": "memory", "content": "private note about Alice", "visibility": "personal"}))
	ok(t, c, "link", map[string]any{"source_id": secret, "target_id": alice, "relation": "about"})
	if g := ok(t, limited, "expand", map[string]any{"id": alice, "depth": 3}); len(g["entities"].([]any)) != 3 {
		t.Fatalf("limited key expand reached the personal entity: %v", g)
	}

	// unlink, then it is gone.
	eid := edge["id"].(string)
	if r := ok(t, c, "unlink", map[string]any{"id": eid}); r["deleted"] != true || r["id"] != eid {
		t.Fatalf("unlink = %v", r)
	}
	fail(t, c, "unlink", map[string]any{"id": eid}, "NOT_FOUND")
	if g := ok(t, c, "expand", map[string]any{"id": alice}); len(g["entities"].([]any)) != 2 { // secret remains
		t.Fatalf("after unlink = %v", g)
	}
}
