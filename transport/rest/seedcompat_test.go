package rest_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/postgram-go/postgram/syncproto"
)

// TestSeedCLICompat replays the requests of the reference (TypeScript)
// pgm CLI, v1.35 — method, path, query and body as its REST client builds
// them (JSON.stringify drops undefined fields; query parameters only when
// set; pgm's defaults such as visibility "shared", limit 50, offset 0,
// threshold 0.35 and recency_weight 0.1 always sent) — for the commands of
// the reference README, and checks that every response carries the keys
// that CLI reads. It runs on both backends.
func TestSeedCLICompat(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testSeedCLICompat(t, newEnvOn(t, backend))
		})
	}
}

// seedEntityKeys are the keys of StoredEntityResponse.entity in the
// reference client.
var seedEntityKeys = []string{"id", "type", "content", "visibility", "owner", "status", "enrichment_status", "version", "tags",
	"source", "metadata", "created_at", "updated_at"}

func requireKeys(t *testing.T, what string, m map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Fatalf("%s lacks %q: %v", what, k, m)
		}
	}
}

func testSeedCLICompat(t *testing.T, e *env) {
	key := e.admin
	// seed sends a raw JSON body, as the reference client serialises it.
	seed := func(method, path, body string) *response {
		t.Helper()
		if body == "" {
			return e.do(method, path, key, nil)
		}
		return e.do(method, path, key, body)
	}
	entity := func(r *response) map[string]any {
		t.Helper()
		ent, ok := r.object()["entity"].(map[string]any)
		if !ok {
			t.Fatalf("no entity in %s", r.Body)
		}
		requireKeys(t, "entity", ent, seedEntityKeys...)
		return ent
	}

	// pgm store "decided to use pgvector" --type memory --tags decisions
	mem := entity(seed("POST", "/api/entities", `{"type":"memory","content":"decided to use pgvector","visibility":"shared","tags":["decisions"]}`).want(http.StatusCreated))
	memID := mem["id"].(string)
	// pgm store … --owner alice / bob / shared
	owned := map[string]string{}
	for _, o := range []string{"alice", "bob", "shared"} {
		ent := entity(seed("POST", "/api/entities", fmt.Sprintf(`{"type":"memory","content":"owned by %s","visibility":"shared","owner":%q}`, o, o)).want(http.StatusCreated))
		owned[o] = ent["id"].(string)
	}
	e.enrich()

	// pgm search "database decisions" --type memory
	res := seed("POST", "/api/search", `{"query":"decided pgvector","type":"memory","limit":10,"threshold":0.35,"recency_weight":0.1}`).want(http.StatusOK).object()
	results, _ := res["results"].([]any)
	if len(results) == 0 {
		t.Fatalf("search found nothing: %v", res)
	}
	for _, r := range results {
		requireKeys(t, "search result", r.(map[string]any), "entity", "chunk_content", "similarity", "score")
	}
	// pgm search … --expand-graph --include-archived
	seed("POST", "/api/search", `{"query":"pgvector","limit":10,"threshold":0.35,"recency_weight":0.1,"expand_graph":true,"include_archived":true}`).want(http.StatusOK)

	// pgm recall <id> [--owner X]: the owner filter admits X, unowned and "shared".
	entity(seed("GET", "/api/entities/"+memID, "").want(http.StatusOK))
	for _, c := range []struct {
		id     string
		status int
	}{{memID, 200}, {owned["alice"], 200}, {owned["shared"], 200}, {owned["bob"], 404}} {
		seed("GET", "/api/entities/"+c.id+"?owner=alice", "").want(c.status)
	}

	// pgm list --type memory / --owner alice --include-archived / --tags
	page := seed("GET", "/api/entities?type=memory&limit=50&offset=0", "").want(http.StatusOK).object()
	requireKeys(t, "list", page, "items", "total", "limit", "offset")
	if page["total"] != float64(4) {
		t.Fatalf("list --type memory: total %v", page["total"])
	}
	seed("GET", "/api/entities?owner=alice&limit=50&offset=0&include_archived=true", "").want(http.StatusOK)
	seed("GET", "/api/entities?tags=decisions&limit=50&offset=0", "").want(http.StatusOK)

	// pgm update <id> --content "updated text" --version 1
	if ent := entity(seed("PATCH", "/api/entities/"+memID, `{"version":1,"content":"updated text"}`).want(http.StatusOK)); ent["version"] != float64(2) {
		t.Fatalf("update: %v", ent)
	}

	// Tasks: add, list, update, complete, list --include-archived.
	task := entity(seed("POST", "/api/tasks", `{"content":"set up monitoring","context":"@focus-work","status":"next","visibility":"shared"}`).want(http.StatusCreated))
	taskID := task["id"].(string)
	tl := seed("GET", "/api/tasks?status=next&limit=50&offset=0", "").want(http.StatusOK).object()
	if items := tl["items"].([]any); len(items) != 1 {
		t.Fatalf("task list --status next: %v", tl)
	}
	entity(seed("PATCH", "/api/tasks/"+taskID, `{"version":1,"status":"waiting"}`).want(http.StatusOK))
	done := entity(seed("POST", "/api/tasks/"+taskID+"/complete", `{"version":2}`).want(http.StatusOK))
	if done["status"] != "done" {
		t.Fatalf("task complete: %v", done)
	}
	seed("DELETE", "/api/entities/"+taskID, "").want(http.StatusOK)
	if n := len(seed("GET", "/api/tasks?limit=50&offset=0", "").want(http.StatusOK).object()["items"].([]any)); n != 0 {
		t.Fatalf("task list shows %d archived tasks", n)
	}
	if n := len(seed("GET", "/api/tasks?limit=50&offset=0&include_archived=true", "").want(http.StatusOK).object()["items"].([]any)); n != 1 {
		t.Fatalf("task list --include-archived: %d tasks", n)
	}

	// Graph: pgm link, expand [--owner], the edges route [--owner], unlink.
	link := func(src, dst string) string {
		ed := seed("POST", "/api/edges", fmt.Sprintf(`{"source_id":%q,"target_id":%q,"relation":"involves","confidence":1}`, src, dst)).want(http.StatusCreated).object()["edge"].(map[string]any)
		requireKeys(t, "edge", ed, "id", "source_id", "target_id", "relation", "confidence", "source", "metadata", "created_at")
		return ed["id"].(string)
	}
	link(memID, owned["alice"])
	link(memID, owned["bob"])
	bobShared := link(owned["bob"], owned["shared"])
	g := seed("GET", "/api/entities/"+memID+"/graph?depth=2", "").want(http.StatusOK).object()
	requireKeys(t, "graph", g, "entities", "edges")
	if n := len(g["entities"].([]any)); n != 4 {
		t.Fatalf("expand --depth 2: %d entities", n)
	}
	// --owner alice: bob's entity is neither returned nor followed, so
	// "shared" (reached only through bob) is left out too.
	g = seed("GET", "/api/entities/"+memID+"/graph?depth=2&relation_types=involves&owner=alice", "").want(http.StatusOK).object()
	var ids []string
	for _, x := range g["entities"].([]any) {
		ids = append(ids, x.(map[string]any)["id"].(string))
	}
	slices.Sort(ids)
	want := []string{memID, owned["alice"]}
	slices.Sort(want)
	if !slices.Equal(ids, want) || len(g["edges"].([]any)) != 1 {
		t.Fatalf("expand --owner alice: entities %v (want %v), edges %v", ids, want, g["edges"])
	}
	seed("GET", "/api/entities/"+owned["bob"]+"/graph?depth=1&owner=alice", "").want(http.StatusNotFound)
	edges := seed("GET", "/api/entities/"+memID+"/edges?owner=alice", "").want(http.StatusOK).object()["edges"].([]any)
	if len(edges) != 1 || edges[0].(map[string]any)["target_id"] != owned["alice"] {
		t.Fatalf("edges --owner alice: %v", edges)
	}
	if n := len(seed("GET", "/api/entities/"+memID+"/edges?relation=involves&direction=source", "").want(http.StatusOK).object()["edges"].([]any)); n != 2 {
		t.Fatalf("edges: %d", n)
	}
	seed("GET", "/api/entities/"+owned["bob"]+"/edges?owner=alice", "").want(http.StatusNotFound)
	if d := seed("DELETE", "/api/edges/"+bobShared, "").want(http.StatusOK).object(); d["deleted"] != true || d["id"] != bobShared {
		t.Fatalf("unlink: %v", d)
	}

	// pgm delete <id>
	if d := seed("DELETE", "/api/entities/"+owned["bob"], "").want(http.StatusOK).object(); d["deleted"] != true {
		t.Fatalf("delete: %v", d)
	}

	// pgm queue: extraction is null when extraction is off.
	q := seed("GET", "/api/queue", "").want(http.StatusOK)
	qm := q.object()
	requireKeys(t, "queue.embedding", qm["embedding"].(map[string]any), "pending", "completed", "failed", "retry_eligible", "oldest_pending_secs")
	if x, ok := qm["extraction"]; !ok || x != nil {
		t.Fatalf("queue extraction %v (present %v), want null: %s", x, ok, q.Body)
	}

	// pgm memory session-context, then memory groom --dry-run / --yes.
	sc := entity(seed("POST", "/api/memory/session-context", `{"content":"working on the seed compat test","visibility":"shared","topic":"postgram"}`).want(http.StatusCreated))
	dry := seed("POST", "/api/memory/session-context/groom", `{"dry_run":true,"older_than_ms":0,"limit":50,"topic":"postgram","tags":[]}`).want(http.StatusOK).object()
	requireKeys(t, "groom", dry, "dryRun", "archived", "promoted", "skipped", "mode", "eligible")
	el, _ := dry["eligible"].([]any)
	if dry["dryRun"] != true || len(el) != 1 {
		t.Fatalf("groom --dry-run: %v", dry)
	}
	cand := el[0].(map[string]any)
	requireKeys(t, "groom candidate", cand, "id", "content", "visibility", "owner", "tags", "metadata", "createdAt")
	if cand["id"] != sc["id"] || cand["content"] != "working on the seed compat test" || cand["metadata"].(map[string]any)["topic"] != "postgram" {
		t.Fatalf("groom candidate %v", cand)
	}
	// older_than_ms 7d leaves the fresh context alone.
	if el := seed("POST", "/api/memory/session-context/groom", `{"dry_run":true,"older_than_ms":604800000,"limit":50,"tags":[]}`).want(http.StatusOK).object()["eligible"].([]any); len(el) != 0 {
		t.Fatalf("groom --older-than 7d: %v", el)
	}
	arch := seed("POST", "/api/memory/session-context/groom", `{"dry_run":false,"confirmed":true,"older_than_ms":0,"limit":50,"tags":[]}`).want(http.StatusOK).object()
	if arch["dryRun"] != false || arch["archived"] != float64(1) || arch["skipped"] != float64(0) {
		t.Fatalf("groom --yes: %v", arch)
	}

	// pgm sync DIR --repo notes (dry run, then for real), with one note
	// over 1 MiB: the others are stored, finalize runs.
	files := map[string]string{
		"a.md":     "# Alpha\nfirst note\n",
		"dir/b.md": "# Beta\nsecond note\n",
		"big.md":   "# Big\n" + strings.Repeat("x", syncproto.MaxFileBytes+10),
	}
	manifest := func(paths ...string) string {
		var parts []string
		for _, p := range paths {
			parts = append(parts, fmt.Sprintf(`{"path":%q,"sha":%q}`, p, syncproto.SHA([]byte(files[p]))))
		}
		return `{"repo":"notes","files":[` + strings.Join(parts, ",") + `]}`
	}
	diff := seed("POST", "/api/sync/diff", manifest("a.md", "big.md", "dir/b.md")).want(http.StatusOK).object()
	requireKeys(t, "sync diff", diff, "toUpload", "unchanged", "toDelete")
	up := diff["toUpload"].([]any)
	if len(up) != 3 || len(diff["toDelete"].([]any)) != 0 {
		t.Fatalf("diff %v", diff)
	}
	var batch []string
	for _, it := range up {
		m := it.(map[string]any)
		requireKeys(t, "toUpload item", m, "path", "sha", "reason")
		p := m["path"].(string)
		batch = append(batch, fmt.Sprintf(`{"path":%q,"sha":%q,"content":%q}`, p, m["sha"], files[p]))
	}
	upl := seed("POST", "/api/sync/upload", `{"repo":"notes","files":[`+strings.Join(batch, ",")+`]}`).want(http.StatusOK).object()
	errs, _ := upl["errors"].([]any)
	if upl["created"] != float64(2) || upl["updated"] != float64(0) || len(errs) != 1 || errs[0].(map[string]any)["path"] != "big.md" {
		t.Fatalf("upload with an oversized note: %v", upl)
	}
	if fin := seed("POST", "/api/sync/finalize", manifest("a.md", "big.md", "dir/b.md")).want(http.StatusOK).object(); fin["deleted"] != float64(0) {
		t.Fatalf("finalize %v", fin)
	}
	st := seed("GET", "/api/sync/status/"+url.PathEscape("notes"), "").want(http.StatusOK).object()
	sf := st["files"].([]any)
	if len(sf) != 2 {
		t.Fatalf("status %v", st)
	}
	for _, f := range sf {
		m := f.(map[string]any)
		requireKeys(t, "status entry", m, "path", "sha", "syncStatus", "lastSynced", "entityId")
		if m["syncStatus"] != "synced" || m["entityId"] != m["entity_id"] {
			t.Fatalf("status entry %v", m)
		}
	}
	// dir/b.md leaves the folder: the diff names it in toDelete and
	// finalize archives it.
	diff = seed("POST", "/api/sync/diff", manifest("a.md")).want(http.StatusOK).object()
	if td := diff["toDelete"].([]any); len(td) != 1 || td[0] != "dir/b.md" || len(diff["toUpload"].([]any)) != 0 {
		t.Fatalf("diff after a removal: %v", diff)
	}
	if fin := seed("POST", "/api/sync/finalize", manifest("a.md")).want(http.StatusOK).object(); fin["deleted"] != float64(1) {
		t.Fatalf("finalize after a removal: %v", fin)
	}
	// The single-shot push (MCP and small syncs).
	push := seed("POST", "/api/sync", fmt.Sprintf(`{"repo":"small","files":[{"path":"n.md","sha":%q,"content":%q}]}`, syncproto.SHA([]byte("note")), "note")).want(http.StatusOK).object()
	requireKeys(t, "sync push", push, "created", "updated", "unchanged", "deleted")
}
