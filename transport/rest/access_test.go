package rest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/syncproto"
	"github.com/postgram-go/postgram/transport/apierror"
)

// TestAccessProbes replays the probes of issue 14 (items 1-3, 9 and 16)
// over REST with scoped keys, on both backends: each is refused with a
// clear 4xx naming the path or field and changes nothing, and what a key
// cannot see is absent from sync status, diff and queue.
func TestAccessProbes(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnvOn(t, backend)
			a := e.client
			priv, shared, gone := syncFile("private.md", "# Private\n\ndiary\n"), syncFile("shared.md", "# Shared\n"), syncFile("gone.md", "# Gone\n")
			upload := func(files ...map[string]any) []syncproto.UploadFile {
				out := make([]syncproto.UploadFile, len(files))
				for i, f := range files {
					out[i] = syncproto.UploadFile{Path: f["path"].(string), SHA: f["sha"].(string), Content: f["content"].(string)}
				}
				return out
			}
			if _, err := a.Sync().Upload(ctx, syncproto.UploadRequest{Repo: "notes", Files: upload(priv, shared, gone)}); err != nil {
				t.Fatal(err)
			}
			st, err := a.Sync().Status(ctx, "notes")
			if err != nil {
				t.Fatal(err)
			}
			privID := uuid.MustParse(st.Files[1].EntityID)
			personal := postgram.VisibilityPersonal
			if _, err := a.Update(ctx, privID, postgram.UpdateInput{Version: 1, Visibility: &personal}); err != nil {
				t.Fatal(err)
			}
			e.emb.Fail(errors.New("provider refused"))
			if _, err := postgramtest.Admin(t, a).EnrichPending(ctx); err != nil {
				t.Fatal(err)
			}
			e.emb.Recover()
			owner := e.key(postgram.KeySpec{Name: "owner", ClientID: "owner", Scopes: postgram.AllScopes})
			mem := e.store(owner, map[string]any{"type": "memory", "content": "durable fact about otters"})

			syncKey := e.key(postgram.KeySpec{Name: "laptop", ClientID: "laptop", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeSync},
				AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
			writer := e.key(postgram.KeySpec{Name: "writer", ClientID: "writer", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
			docs := e.key(postgram.KeySpec{Name: "docs", Scopes: []postgram.Scope{postgram.ScopeRead},
				AllowedTypes: []postgram.EntityType{postgram.TypeDocument}, AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
			hijack := syncFile("private.md", "# Private\n\nowned by the sync key\n")
			memPath := "/api/entities/" + mem.ID.String()
			deep := map[string]any{}
			for range postgram.MaxMetadataDepth {
				deep = map[string]any{"k": deep}
			}

			probes := []struct {
				name         string
				method, path string
				key          string
				body         any
				status       int
				code         apierror.Code
				field        string
				mention      []string
			}{
				{"upload over a document the key cannot see", "POST", "/api/sync/upload", syncKey,
					map[string]any{"repo": "notes", "files": []any{syncFile("new.md", "# New\n"), hijack}},
					http.StatusForbidden, apierror.Forbidden, "", []string{"files[1].path", "private.md"}},
				{"finalize naming a document the key cannot see", "POST", "/api/sync/finalize", syncKey,
					map[string]any{"repo": "notes", "files": manifestOf(shared, gone, priv)},
					http.StatusForbidden, apierror.Forbidden, "", []string{"files[2].path", "private.md"}},
				{"finalize archiving without the delete scope", "POST", "/api/sync/finalize", syncKey,
					map[string]any{"repo": "notes", "files": manifestOf(shared)},
					http.StatusForbidden, apierror.Forbidden, "", []string{"gone.md", `"delete"`}},
				{"push over a document the key cannot see", "POST", "/api/sync", syncKey,
					map[string]any{"repo": "notes", "files": []any{shared, gone, hijack}},
					http.StatusForbidden, apierror.Forbidden, "", []string{"files[2].path", "private.md"}},
				{"push archiving without the delete scope", "POST", "/api/sync", syncKey,
					map[string]any{"repo": "notes", "files": []any{shared}},
					http.StatusForbidden, apierror.Forbidden, "", []string{"gone.md", `"delete"`}},
				{"PATCH changing another client's memory_role", "PATCH", memPath, writer,
					map[string]any{"version": 1, "metadata": map[string]any{"memory_role": "session_context"}},
					http.StatusForbidden, apierror.Forbidden, "", []string{"memory_role"}},
				{"PATCH archiving without the delete scope", "PATCH", memPath, writer,
					map[string]any{"version": 1, "status": "archived"},
					http.StatusForbidden, apierror.Forbidden, "", []string{`"delete"`}},
				{"search with a NUL byte", "POST", "/api/search", writer,
					`{"query":"otters\u0000"}`, http.StatusBadRequest, apierror.Validation, "query", []string{"NUL"}},
				{"content with a NUL byte", "POST", "/api/entities", writer,
					`{"type":"memory","content":"otters\u0000"}`, http.StatusBadRequest, apierror.Validation, "content", []string{"NUL"}},
				{"metadata 65 levels deep", "POST", "/api/entities", writer,
					map[string]any{"type": "memory", "content": "x", "metadata": deep},
					http.StatusBadRequest, apierror.Validation, "metadata", []string{"64"}},
			}
			for _, p := range probes {
				body := e.do(p.method, p.path, p.key, p.body).wantError(p.status, p.code, p.field, "")
				for _, m := range p.mention {
					if !strings.Contains(body.Message, m) {
						t.Errorf("%s: %q does not mention %q", p.name, body.Message, m)
					}
				}
			}

			// Nothing changed.
			if got, err := a.Recall(ctx, privID); err != nil || got.Content != priv["content"] || got.Version != 2 {
				t.Fatalf("the private note changed: %+v, %v", got, err)
			}
			if got, err := a.Recall(ctx, mem.ID); err != nil || got.Version != 1 || got.MemoryRole() != postgram.RoleDurableMemory {
				t.Fatalf("the memory changed: %+v, %v", got, err)
			}
			if st, _ := a.Sync().Status(ctx, "notes"); len(st.Files) != 3 || st.Files[0].SyncStatus != "synced" || st.Files[1].SyncStatus != "synced" {
				t.Fatalf("the sync state changed: %+v", st)
			}
			if p, _ := a.List(ctx, postgram.ListOptions{Types: []postgram.EntityType{postgram.TypeDocument}, IncludeArchived: true}); p.Total != 3 {
				t.Fatalf("%d documents after the refused batches, want 3", p.Total)
			}

			// Reads show the key only what it can see.
			var status syncproto.StatusResponse
			e.do("GET", "/api/sync/status/notes", syncKey, nil).want(http.StatusOK).decode(&status)
			if len(status.Files) != 2 || status.Files[0].Path != "gone.md" || status.Files[1].Path != "shared.md" {
				t.Fatalf("sync status lists a hidden file: %+v", status.Files)
			}
			var diff syncproto.DiffResponse
			e.do("POST", "/api/sync/diff", syncKey, map[string]any{"repo": "notes", "files": manifestOf(shared, priv)}).want(http.StatusOK).decode(&diff)
			if len(diff.ToUpload) != 1 || diff.ToUpload[0].Path != "private.md" || diff.ToUpload[0].Reason != "new" ||
				len(diff.ToDelete) != 1 || diff.ToDelete[0] != "gone.md" {
				t.Fatalf("diff for the sync key: %+v", diff)
			}
			r := e.do("GET", "/api/queue?include_failures=true&failure_limit=100", docs, nil).want(http.StatusOK)
			if strings.Contains(string(r.Body), privID.String()) || strings.Contains(string(r.Body), "private.md") {
				t.Fatalf("queue shows a hidden document: %s", r.Body)
			}
			var q postgram.QueueStatus
			r.decode(&q)
			if n := q.Embedding.Pending + q.Embedding.Completed + q.Embedding.Failed; n != 2 || len(q.Failures) != 2 {
				t.Fatalf("queue for the docs key covers %d entities, %d failures; want 2 and 2: %s", n, len(q.Failures), r.Body)
			}
			var all postgram.QueueStatus
			e.do("GET", "/api/queue?include_failures=true&failure_limit=100", e.admin, nil).want(http.StatusOK).decode(&all)
			if all.Embedding.Failed != 3 || all.Embedding.Pending != 1 || len(all.Failures) != 3 {
				t.Fatalf("admin queue: %+v, %d failures", all.Embedding, len(all.Failures))
			}

			// PATCH of an untagged entity answers tags [] (it said null).
			r = e.do("PATCH", memPath, owner, map[string]any{"version": 1, "content": "durable fact about sea otters"}).want(http.StatusOK)
			var patched struct {
				Entity map[string]json.RawMessage `json:"entity"`
			}
			r.decode(&patched)
			if got := string(patched.Entity["tags"]); got != "[]" {
				t.Fatalf("PATCH of an untagged entity: tags %s, want []", got)
			}
		})
	}
}
