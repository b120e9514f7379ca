package rest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/syncproto"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/rest"
)

func syncFile(path, content string) map[string]any {
	return map[string]any{"path": path, "sha": syncproto.SHA([]byte(content)), "content": content}
}

func manifestOf(files ...map[string]any) []map[string]any {
	out := make([]map[string]any, len(files))
	for i, f := range files {
		out[i] = map[string]any{"path": f["path"], "sha": f["sha"]}
	}
	return out
}

// syncKey is a laptop's key: read, sync, and delete (finalize archives the
// documents of files that left the folder).
func (e *env) syncKey() string {
	return e.key(postgram.KeySpec{Name: "laptop", ClientID: "laptop",
		Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeSync, postgram.ScopeDelete}})
}

// TestSync runs the three phases, the single-shot push and the status over
// HTTP with a key that has the read, sync and delete scopes (not write).
func TestSync(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.syncKey()
	a := syncFile("a.md", "# Alpha\n\nThe SYNCKW-1 note.\n")
	b := syncFile("dir/b.md", "# Beta\n")
	c := syncFile("dir/sub/c.md", "no title here\n")

	var diff syncproto.DiffResponse
	e.do("POST", "/api/sync/diff", key, map[string]any{"repo": "notes", "files": manifestOf(a, b, c)}).want(http.StatusOK).decode(&diff)
	if len(diff.ToUpload) != 3 || diff.ToUpload[0].Reason != "new" || diff.Unchanged != 0 || len(diff.ToDelete) != 0 {
		t.Fatalf("first diff %+v", diff)
	}
	up := e.do("POST", "/api/sync/upload", key, map[string]any{"repo": "notes", "files": []any{a, b, c}}).want(http.StatusOK).object()
	if up["created"] != float64(3) || up["updated"] != float64(0) || up["unchanged"] != float64(0) {
		t.Fatalf("upload %v", up)
	}
	fin := e.do("POST", "/api/sync/finalize", key, map[string]any{"repo": "notes", "files": manifestOf(a, b, c)}).want(http.StatusOK).object()
	if fin["deleted"] != float64(0) || fin["restored"] != float64(0) || fin["missing"] != float64(0) {
		t.Fatalf("finalize %v", fin)
	}

	var st syncproto.StatusResponse
	e.do("GET", "/api/sync/status/notes", key, nil).want(http.StatusOK).decode(&st)
	if st.Repo != "notes" || len(st.Files) != 3 || st.Files[0].Path != "a.md" || st.Files[0].SyncStatus != "synced" || st.Files[0].SHA != a["sha"] {
		t.Fatalf("status %+v", st)
	}
	doc := e.do("GET", "/api/entities/"+st.Files[0].EntityID, key, nil).want(http.StatusOK).object()["entity"].(map[string]any)
	meta := doc["metadata"].(map[string]any)
	if doc["type"] != "document" || doc["content"] != a["content"] || meta["path"] != "a.md" || meta["repo"] != "notes" || meta["title"] != "Alpha" {
		t.Fatalf("synced document %v", doc)
	}
	res := e.do("POST", "/api/search", key, map[string]any{"query": "SYNCKW-1"}).want(http.StatusOK).object()["results"].([]any)
	if len(res) != 1 || res[0].(map[string]any)["entity"].(map[string]any)["id"] != st.Files[0].EntityID {
		t.Fatalf("keyword search of a synced note: %v", res)
	}

	// No change: the diff asks for nothing and empty lists are [] on the wire.
	r := e.do("POST", "/api/sync/diff", key, map[string]any{"repo": "notes", "files": manifestOf(a, b, c)}).want(http.StatusOK)
	if got := strings.TrimSpace(string(r.Body)); got != `{"to_upload":[],"unchanged":3,"to_delete":[],"to_restore":[],"toUpload":[],"toDelete":[]}` {
		t.Fatalf("no-change diff %s", got)
	}
	// c leaves the folder.
	e.do("POST", "/api/sync/diff", key, map[string]any{"repo": "notes", "files": manifestOf(a, b)}).want(http.StatusOK).decode(&diff)
	if len(diff.ToDelete) != 1 || diff.ToDelete[0] != "dir/sub/c.md" {
		t.Fatalf("diff after a removal %+v", diff)
	}
	fin = e.do("POST", "/api/sync/finalize", key, map[string]any{"repo": "notes", "files": manifestOf(a, b)}).want(http.StatusOK).object()
	if fin["deleted"] != float64(1) {
		t.Fatalf("finalize after a removal %v", fin)
	}
	e.do("GET", "/api/sync/status/notes", key, nil).want(http.StatusOK).decode(&st)
	if st.Files[2].Path != "dir/sub/c.md" || st.Files[2].SyncStatus != "deleted" {
		t.Fatalf("status after a removal %+v", st.Files)
	}

	// Single shot: c comes back unchanged (restored), b changes.
	b2 := syncFile("dir/b.md", "# Beta v2\n")
	push := e.do("POST", "/api/sync", key, map[string]any{"repo": "notes", "files": []any{a, b2, c}}).want(http.StatusOK).object()
	want := map[string]any{"created": float64(0), "updated": float64(1), "unchanged": float64(2), "deleted": float64(0), "restored": float64(1)}
	if fmt.Sprint(push) != fmt.Sprint(want) {
		t.Fatalf("push %v, want %v", push, want)
	}
	// Unknown repository: an empty status, not an error.
	e.do("GET", "/api/sync/status/other", key, nil).want(http.StatusOK).decode(&st)
	if st.Repo != "other" || st.Files == nil || len(st.Files) != 0 {
		t.Fatalf("status of an unknown repo %+v", st)
	}
}

// TestSyncBadInput: every bad item is a 400 VALIDATION naming it, a
// rejected batch writes nothing, and a key without the sync scope gets 403.
func TestSyncBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.syncKey()
	good := syncFile("good.md", "# Good\n")
	upload := func(files ...any) *response {
		return e.do("POST", "/api/sync/upload", key, map[string]any{"repo": "r", "files": files})
	}
	goodJSON := fmt.Sprintf(`{"path":"good.md","sha":%q,"content":"# Good\n"}`, good["sha"])
	cases := []struct {
		name    string
		r       *response
		field   string
		msgPart string
	}{
		{"escape", upload(good, syncFile("../x.md", "x")), "files[1].path", `"../x.md"`},
		{"inner escape", upload(good, syncFile("a/../../x.md", "x")), "files[1].path", "escape"},
		{"absolute", upload(good, syncFile("/etc/x.md", "x")), "files[1].path", "absolute"},
		{"windows absolute", upload(good, syncFile("C:/x.md", "x")), "files[1].path", "absolute"},
		{"backslash", upload(good, syncFile(`a\x.md`, "x")), "files[1].path", "backslash"},
		{"not markdown", upload(good, syncFile("x.txt", "x")), "files[1].path", "Markdown"},
		// encoding/json would turn these bytes into U+FFFD; the raw body is sent.
		{"non-UTF-8 content", e.do("POST", "/api/sync/upload", key,
			[]byte(`{"repo":"r","files":[`+goodJSON+`,{"path":"bin.md","sha":"`+syncproto.SHA([]byte("\xff\xfe"))+"\",\"content\":\"\xff\xfe\"}]}")),
			"files[1].content", "bin.md"},
		{"non-UTF-8 path", e.do("POST", "/api/sync/upload", key,
			[]byte(`{"repo":"r","files":[`+goodJSON+`,{"path":"caf`+"\xe9"+`.md","sha":"`+good["sha"].(string)+`","content":"x"}]}`)),
			"files[1].path", "UTF-8"},
		{"sha mismatch", upload(good, map[string]any{"path": "m.md", "sha": syncproto.SHA([]byte("other")), "content": "mine"}),
			"files[1].sha", "m.md"},
		{"bad sha", upload(good, map[string]any{"path": "m.md", "sha": "ABC", "content": "mine"}), "files[1].sha", "SHA-256"},
		{"duplicate", upload(good, good), "files[1].path", "twice"},
		{"too many", upload(func() []any {
			var fs []any
			for i := range syncproto.MaxBatchFiles + 1 {
				fs = append(fs, syncFile(fmt.Sprintf("f%d.md", i), "x"))
			}
			return fs
		}()...), "files", "maximum"},
		{"missing repo", e.do("POST", "/api/sync/upload", key, map[string]any{"files": []any{good}}), "repo", "repository name"},
		{"bad repo", e.do("POST", "/api/sync/diff", key, map[string]any{"repo": "../r", "files": []any{}}), "repo", ""},
		{"missing files", e.do("POST", "/api/sync/finalize", key, map[string]any{"repo": "r"}), "files", "manifest"},
		{"missing push files", e.do("POST", "/api/sync", key, map[string]any{"repo": "r"}), "files", "required"},
		{"unknown field", e.do("POST", "/api/sync/diff", key, map[string]any{"repo": "r", "files": []any{}, "dry_run": true}), "dry_run", "accepted fields: repo, files"},
		{"unknown item field", upload(map[string]any{"path": "a.md", "sha": good["sha"], "content": "x", "mode": "0644"}), "files[0].mode", "in files[0]; accepted fields: path, sha, content"},
		{"item not an object", e.do("POST", "/api/sync/finalize", key, map[string]any{"repo": "r", "files": []any{map[string]any{"path": "a.md", "sha": good["sha"]}, 7}}), "files[1]", "JSON object"},
		{"item type", e.do("POST", "/api/sync/diff", key, map[string]any{"repo": "r", "files": []any{map[string]any{"path": 7, "sha": good["sha"]}}}), "files[0].path", "string"},
		{"diff escape", e.do("POST", "/api/sync/diff", key, map[string]any{"repo": "r", "files": []any{map[string]any{"path": "../x.md", "sha": good["sha"]}}}), "files[0].path", "escape"},
		{"finalize absolute", e.do("POST", "/api/sync/finalize", key, map[string]any{"repo": "r", "files": []any{map[string]any{"path": "/x.md", "sha": good["sha"]}}}), "files[0].path", "absolute"},
		{"push escape", e.do("POST", "/api/sync", key, map[string]any{"repo": "r", "files": []any{good, syncFile("../x.md", "x")}}), "files[1].path", "escape"},
		{"status repo", e.do("GET", "/api/sync/status/-r", key, nil), "repo", ""},
		{"status query", e.do("GET", "/api/sync/status/r?all=1", key, nil), "all", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.r.t = t
			tc.r.wantError(http.StatusBadRequest, apierror.Validation, tc.field, tc.msgPart)
		})
	}
	var st syncproto.StatusResponse
	e.do("GET", "/api/sync/status/r", key, nil).want(http.StatusOK).decode(&st)
	if len(st.Files) != 0 {
		t.Fatalf("rejected batches left %d files", len(st.Files))
	}

	// A key without the sync scope may do none of it.
	rw := e.key(postgram.KeySpec{Name: "rw", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite, postgram.ScopeDelete}})
	for _, call := range []struct{ method, path string }{
		{"POST", "/api/sync/diff"}, {"POST", "/api/sync/upload"}, {"POST", "/api/sync/finalize"}, {"POST", "/api/sync"}, {"GET", "/api/sync/status/r"},
	} {
		var body any
		if call.method == "POST" {
			body = map[string]any{"repo": "r", "files": []any{}}
			if strings.HasSuffix(call.path, "upload") || call.path == "/api/sync" {
				body = map[string]any{"repo": "r", "files": []any{good}}
			}
		}
		e.do(call.method, call.path, rw, body).wantError(http.StatusForbidden, apierror.Forbidden, "", "sync")
	}
	// A key limited to memories may not write synced documents.
	mem := e.key(postgram.KeySpec{Name: "mem", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeSync},
		AllowedTypes: []postgram.EntityType{postgram.TypeMemory}})
	e.do("POST", "/api/sync/upload", mem, map[string]any{"repo": "r", "files": []any{good}}).wantError(http.StatusForbidden, apierror.Forbidden, "", "document")
	e.do("GET", "/api/sync/status/r", mem, nil).want(http.StatusOK)
}

// TestSyncBodyLimit: the sync routes take bodies above the general limit,
// up to their own.
func TestSyncBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *rest.Config) { c.MaxBodyBytes = 64 << 10; c.MaxSyncBodyBytes = 512 << 10 })
	key := e.syncKey()
	big := strings.Repeat("Lorem ipsum dolor sit amet. ", 200<<10/28)
	e.do("POST", "/api/entities", e.admin, map[string]any{"type": "memory", "content": big}).
		wantError(http.StatusRequestEntityTooLarge, apierror.PayloadTooLarge, "", "")
	up := e.do("POST", "/api/sync/upload", key, map[string]any{"repo": "big", "files": []any{syncFile("big.md", big)}}).want(http.StatusOK).object()
	if up["created"] != float64(1) {
		t.Fatalf("upload above the general limit: %v", up)
	}
	huge := strings.Repeat(big, 3)
	body := e.do("POST", "/api/sync", key, map[string]any{"repo": "big", "files": []any{syncFile("big.md", huge)}}).
		wantError(http.StatusRequestEntityTooLarge, apierror.PayloadTooLarge, "", "")
	if body.Details["limit_bytes"] != float64(512<<10) {
		t.Fatalf("limit_bytes %v", body.Details)
	}
	if rest.DefaultMaxSyncBodyBytes < 6*syncproto.MaxBatchBytes {
		t.Fatalf("the default sync body limit %d cannot carry a worst-case escaped batch", rest.DefaultMaxSyncBodyBytes)
	}
}
