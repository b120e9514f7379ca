package rest_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
)

// entityFields are the snake_case fields every entity carries on the wire.
var entityFields = []string{"id", "type", "content", "visibility", "owner", "status", "tags", "source",
	"metadata", "version", "enrichment_status", "enrichment_attempts", "extraction_status",
	"extraction_attempts", "created_at", "updated_at"}

func checkEntityShape(t *testing.T, m map[string]any) {
	t.Helper()
	for _, f := range entityFields {
		if _, ok := m[f]; !ok {
			t.Errorf("entity lacks %q: %v", f, keysOf(m))
		}
	}
	for k := range m {
		if k != strings.ToLower(k) {
			t.Errorf("entity field %q is not snake_case", k)
		}
	}
	if _, err := time.Parse(time.RFC3339Nano, m["created_at"].(string)); err != nil {
		t.Errorf("created_at: %v", err)
	}
}

func TestEntityCRUD(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	// Create.
	r := e.do("POST", "/api/entities", e.admin, map[string]any{
		"type": "memory", "content": "We chose pgvector for embeddings.", "visibility": "work",
		"owner": "ana", "tags": []string{"decision", "db", "decision"}, "source": "meeting",
		"metadata": map[string]any{"k": "v", "n": 1}, "skip_extraction": true,
	}).want(http.StatusCreated)
	body := r.object()
	if len(body) != 1 {
		t.Fatalf("create response has fields %v, want only entity", keysOf(body))
	}
	ent := body["entity"].(map[string]any)
	checkEntityShape(t, ent)
	id := ent["id"].(string)
	if got := r.Header.Get("Location"); got != "/api/entities/"+id {
		t.Errorf("Location %q", got)
	}
	if ent["type"] != "memory" || ent["visibility"] != "work" || ent["owner"] != "ana" || ent["status"] != "active" ||
		ent["source"] != "meeting" || ent["version"] != float64(1) || ent["enrichment_status"] != "pending" {
		t.Errorf("created entity %v", ent)
	}
	if tags := ent["tags"].([]any); len(tags) != 2 || tags[0] != "decision" || tags[1] != "db" {
		t.Errorf("tags %v (want de-duplicated by the library)", tags)
	}
	md := ent["metadata"].(map[string]any)
	if md["k"] != "v" || md["memory_role"] != "durable_memory" {
		t.Errorf("metadata %v", md)
	}
	if r.Header.Get("X-Request-ID") == "" {
		t.Error("no X-Request-ID on the response")
	}
	if cc := r.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}

	// Defaults: visibility shared, tasks start in the inbox.
	task := e.store(e.admin, map[string]any{"type": "task", "content": "write the REST tests"})
	if task.Visibility != postgram.VisibilityShared || task.Status != postgram.StatusInbox {
		t.Errorf("task defaults: %s %s", task.Visibility, task.Status)
	}

	// Get.
	got := e.do("GET", "/api/entities/"+id, e.admin, nil).want(http.StatusOK).object()
	if len(got) != 1 {
		t.Fatalf("get response has fields %v", keysOf(got))
	}
	checkEntityShape(t, got["entity"].(map[string]any))
	if got["entity"].(map[string]any)["content"] != "We chose pgvector for embeddings." {
		t.Errorf("get: %v", got)
	}

	// Patch: content, status, tags, owner, metadata shallow merge and removal.
	var upd struct{ Entity postgram.Entity }
	e.do("PATCH", "/api/entities/"+id, e.admin, map[string]any{
		"version": 1, "content": "We chose pgvector HNSW.", "status": "done", "owner": "bo",
		"tags": []string{"x"}, "metadata": map[string]any{"k": nil, "m": true}, "visibility": "shared", "source": "s2",
	}).want(http.StatusOK).decode(&upd)
	u := upd.Entity
	if u.Version != 2 || u.Content != "We chose pgvector HNSW." || u.Status != postgram.StatusDone || u.Owner != "bo" ||
		!slices.Equal(u.Tags, []string{"x"}) || u.Visibility != postgram.VisibilityShared || u.Source != "s2" {
		t.Errorf("updated: %+v", u)
	}
	if _, ok := u.Metadata["k"]; ok || u.Metadata["m"] != true || u.Metadata["n"] != float64(1) {
		t.Errorf("metadata merge: %v", u.Metadata)
	}

	// A patch with only the version changes nothing but the version.
	e.do("PATCH", "/api/entities/"+id, e.admin, `{"version":2,"content":null}`).want(http.StatusOK).decode(&upd)
	if upd.Entity.Version != 3 || upd.Entity.Content != "We chose pgvector HNSW." {
		t.Errorf("null content must leave content unchanged: %+v", upd.Entity)
	}

	// Delete: {id, deleted: true}; idempotent; the entity is archived.
	del := e.do("DELETE", "/api/entities/"+id, e.admin, nil).want(http.StatusOK).object()
	if len(del) != 2 || del["id"] != id || del["deleted"] != true {
		t.Errorf("delete response %v", del)
	}
	e.do("DELETE", "/api/entities/"+id, e.admin, nil).want(http.StatusOK)
	var after struct{ Entity postgram.Entity }
	e.do("GET", "/api/entities/"+id, e.admin, nil).want(http.StatusOK).decode(&after)
	if after.Entity.Status != postgram.StatusArchived {
		t.Errorf("after delete: status %s", after.Entity.Status)
	}
}

func TestEntityNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	missing := uuid.NewString()
	e.do("GET", "/api/entities/"+missing, e.admin, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
	e.do("PATCH", "/api/entities/"+missing, e.admin, map[string]any{"version": 1}).wantError(http.StatusNotFound, apierror.NotFound, "", "")
	e.do("DELETE", "/api/entities/"+missing, e.admin, nil).wantError(http.StatusNotFound, apierror.NotFound, "", "")
}

func TestConflictRoundTrip(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ent := e.store(e.admin, map[string]any{"type": "document", "content": "draft one"})
	path := "/api/entities/" + ent.ID.String()
	e.do("PATCH", path, e.admin, map[string]any{"version": 1, "content": "draft two"}).want(http.StatusOK)

	// A second writer still holding version 1 gets 409 with the current entity.
	r := e.do("PATCH", path, e.admin, map[string]any{"version": 1, "content": "draft three"})
	b := r.wantError(http.StatusConflict, apierror.Conflict, "", "version")
	cur, ok := b.Details["current"].(map[string]any)
	if !ok {
		t.Fatalf("409 without details.current: %s", r.Body)
	}
	checkEntityShape(t, cur)
	if cur["version"] != float64(2) || cur["content"] != "draft two" || cur["id"] != ent.ID.String() {
		t.Errorf("details.current %v", cur)
	}

	// Retrying with the version from details.current succeeds.
	var out struct{ Entity postgram.Entity }
	e.do("PATCH", path, e.admin, map[string]any{"version": cur["version"], "content": "draft three"}).want(http.StatusOK).decode(&out)
	if out.Entity.Version != 3 || out.Entity.Content != "draft three" {
		t.Errorf("after retry: %+v", out.Entity)
	}
}

func TestListEntities(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ids []string
	for _, spec := range []map[string]any{
		{"type": "memory", "content": "m0", "tags": []string{"a", "b"}, "visibility": "personal", "owner": "ana"},
		{"type": "memory", "content": "m1", "tags": []string{"a"}, "visibility": "work"},
		{"type": "task", "content": "t2", "status": "next", "visibility": "work"},
		{"type": "document", "content": "d3", "tags": []string{"b"}},
		{"type": "memory", "content": "s4", "metadata": map[string]any{"memory_role": "session_context"}},
	} {
		ids = append(ids, e.store(e.admin, spec).ID.String())
	}
	list := func(query string) (items []string, total, limit, offset int) {
		t.Helper()
		r := e.do("GET", "/api/entities"+query, e.admin, nil).want(http.StatusOK)
		m := r.object()
		for _, k := range []string{"items", "total", "limit", "offset"} {
			if _, ok := m[k]; !ok {
				t.Fatalf("list response lacks %q: %s", k, r.Body)
			}
		}
		if len(m) != 4 {
			t.Errorf("list response fields %v", keysOf(m))
		}
		var page postgram.ListPage
		r.decode(&page)
		for _, it := range page.Items {
			items = append(items, it.ID.String())
		}
		return items, page.Total, page.Limit, page.Offset
	}
	same := func(got []string, want ...int) {
		t.Helper()
		var w []string
		for _, i := range want {
			w = append(w, ids[i])
		}
		if !slices.Equal(got, w) {
			t.Errorf("items %v, want %v", got, w)
		}
	}

	items, total, limit, offset := list("")
	same(items, 4, 3, 2, 1, 0) // newest first
	if total != 5 || limit != postgram.DefaultListLimit || offset != 0 {
		t.Errorf("total %d limit %d offset %d", total, limit, offset)
	}
	items, total, limit, offset = list("?limit=2&offset=1")
	same(items, 3, 2)
	if total != 5 || limit != 2 || offset != 1 {
		t.Errorf("paged: total %d limit %d offset %d", total, limit, offset)
	}
	items, _, _, _ = list("?type=memory")
	same(items, 4, 1, 0)
	items, _, _, _ = list("?type=task,document")
	same(items, 3, 2)
	items, _, _, _ = list("?type=task&type=document")
	same(items, 3, 2)
	items, _, _, _ = list("?status=next")
	same(items, 2)
	items, _, _, _ = list("?visibility=personal,work")
	same(items, 2, 1, 0)
	// owner has the reference's meaning: the owner asked for, no owner,
	// or "shared" (items 1-4 have no owner).
	items, _, _, _ = list("?owner=ana")
	same(items, 4, 3, 2, 1, 0)
	items, _, _, _ = list("?tags=a,b")
	same(items, 0)
	items, _, _, _ = list("?tags=a")
	same(items, 1, 0)
	items, _, _, _ = list("?memory_role=session_context")
	same(items, 4)

	// Archived entities appear only when asked for.
	e.do("DELETE", "/api/entities/"+ids[3], e.admin, nil).want(http.StatusOK)
	items, total, _, _ = list("")
	same(items, 4, 2, 1, 0)
	if total != 4 {
		t.Errorf("total after archive %d", total)
	}
	items, _, _, _ = list("?include_archived=true")
	same(items, 4, 3, 2, 1, 0)
	items, _, _, _ = list("?status=archived")
	same(items, 3)

	// An empty page is [] not null.
	r := e.do("GET", "/api/entities?tags=nobody", e.admin, nil).want(http.StatusOK)
	if !strings.Contains(string(r.Body), `"items":[]`) {
		t.Errorf("empty list: %s", r.Body)
	}
}

func TestBulkArchive(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.store(e.admin, map[string]any{"type": "memory", "content": "a"})
	b := e.store(e.admin, map[string]any{"type": "memory", "content": "b"})
	missing := uuid.NewString()
	r := e.do("POST", "/api/entities/bulk/archive", e.admin, map[string]any{
		"ids": []string{a.ID.String(), "not-a-uuid", missing, b.ID.String()},
	}).want(http.StatusOK)
	var out struct {
		Archived []map[string]any `json:"archived"`
		Failed   []map[string]any `json:"failed"`
	}
	r.decode(&out)
	if len(out.Archived) != 2 || out.Archived[0]["id"] != a.ID.String() || out.Archived[1]["id"] != b.ID.String() || len(out.Archived[0]) != 1 {
		t.Errorf("archived %v", out.Archived)
	}
	if len(out.Failed) != 2 {
		t.Fatalf("failed %v", out.Failed)
	}
	f0, f1 := out.Failed[0], out.Failed[1]
	if f0["id"] != "not-a-uuid" || f0["code"] != string(apierror.Validation) || !strings.Contains(f0["message"].(string), "ids[1]") {
		t.Errorf("failed[0] %v", f0)
	}
	if f1["id"] != missing || f1["code"] != string(apierror.NotFound) || f1["message"] == "" {
		t.Errorf("failed[1] %v", f1)
	}
	for _, f := range out.Failed {
		if len(f) != 3 {
			t.Errorf("failure fields %v", keysOf(f))
		}
	}
	var got struct{ Entity postgram.Entity }
	e.do("GET", "/api/entities/"+a.ID.String(), e.admin, nil).want(http.StatusOK).decode(&got)
	if got.Entity.Status != postgram.StatusArchived {
		t.Errorf("a not archived: %s", got.Entity.Status)
	}

	// All good: failed is [] (not null).
	c := e.store(e.admin, map[string]any{"type": "memory", "content": "c"})
	r = e.do("POST", "/api/entities/bulk/archive", e.admin, map[string]any{"ids": []string{c.ID.String()}}).want(http.StatusOK)
	if !strings.Contains(string(r.Body), `"failed":[]`) {
		t.Errorf("all archived: %s", r.Body)
	}

	// Whole-request errors.
	e.do("POST", "/api/entities/bulk/archive", e.admin, map[string]any{"ids": []string{}}).wantError(http.StatusBadRequest, apierror.Validation, "ids", "")
	e.do("POST", "/api/entities/bulk/archive", e.admin, `{}`).wantError(http.StatusBadRequest, apierror.Validation, "ids", "")
	e.do("POST", "/api/entities/bulk/archive", e.admin, `{"ids":"x"}`).wantError(http.StatusBadRequest, apierror.Validation, "ids", "array")
}
