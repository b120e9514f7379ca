package mcp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/syncproto"
	pmcp "github.com/postgram-go/postgram/transport/mcp"
)

// lockedBuffer is a goroutine-safe log sink.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, s := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		if s == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", s)
		}
		out = append(out, m)
	}
	return out
}

// TestAccessProbes replays the probes of issue 14 (items 1-3, 9 and 16)
// over MCP with scoped keys, on both backends: each is refused with a
// clear error (naming the path or field) and changes nothing, and what a
// key cannot see is absent from sync_status and queue.
func TestAccessProbes(t *testing.T) {
	t.Parallel()
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			e := newEnvOn(t, backend, nil)
			a := e.admin
			// The admin syncs three notes and makes one personal; the
			// embedding of the personal one fails (its error names it).
			priv, shared, gone := "# Private\n\ndiary\n", "# Shared\n", "# Gone\n"
			up := func(p, c string) syncproto.UploadFile {
				return syncproto.UploadFile{Path: p, SHA: syncproto.SHA([]byte(c)), Content: c}
			}
			if _, err := a.Sync().Upload(ctx, syncproto.UploadRequest{Repo: "notes", Files: []syncproto.UploadFile{
				up("private.md", priv), up("shared.md", shared), up("gone.md", gone)}}); err != nil {
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
			ownerKey := e.key(t, postgram.KeySpec{Name: "owner", ClientID: "owner", Scopes: postgram.AllScopes})
			owner := connect(t, e.ts.URL, bearer(ownerKey))
			mem := ok(t, owner, "store", map[string]any{"type": "memory", "content": "durable fact about otters"})["entity"].(map[string]any)
			memID := mem["id"].(string)

			syncKey := e.key(t, postgram.KeySpec{Name: "laptop", ClientID: "laptop", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeSync},
				AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
			writerKey := e.key(t, postgram.KeySpec{Name: "writer", ClientID: "writer", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
			docsKey := e.key(t, postgram.KeySpec{Name: "docs", Scopes: []postgram.Scope{postgram.ScopeRead},
				AllowedTypes: []postgram.EntityType{postgram.TypeDocument}, AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
			syncer, writer, docs := connect(t, e.ts.URL, bearer(syncKey)), connect(t, e.ts.URL, bearer(writerKey)), connect(t, e.ts.URL, bearer(docsKey))
			file := func(p, c string) map[string]any { return map[string]any{"path": p, "content": c} }

			probes := []struct {
				name    string
				c       func() map[string]any
				mention []string
			}{
				{"sync_push over a document the key cannot see", func() map[string]any {
					return fail(t, syncer, "sync_push", map[string]any{"repo": "notes", "files": []any{
						file("shared.md", shared), file("gone.md", gone), file("private.md", "# Private\n\nowned\n")}}, "FORBIDDEN")
				}, []string{"files[2].path", "private.md"}},
				{"sync_push archiving without the delete scope", func() map[string]any {
					return fail(t, syncer, "sync_push", map[string]any{"repo": "notes", "files": []any{file("shared.md", shared)}}, "FORBIDDEN")
				}, []string{"gone.md", `"delete"`}},
				{"update changing another client's memory_role", func() map[string]any {
					return fail(t, writer, "update", map[string]any{"id": memID, "version": 1,
						"metadata": map[string]any{"memory_role": "session_context"}}, "FORBIDDEN")
				}, []string{"memory_role"}},
				{"update archiving without the delete scope", func() map[string]any {
					return fail(t, writer, "update", map[string]any{"id": memID, "version": 1, "status": "archived"}, "FORBIDDEN")
				}, []string{`"delete"`}},
				{"search with a NUL byte", func() map[string]any {
					return fail(t, writer, "search", map[string]any{"query": "otters\x00"}, "VALIDATION")
				}, []string{"query"}},
				{"store with metadata 65 levels deep", func() map[string]any {
					deep := map[string]any{}
					for range postgram.MaxMetadataDepth {
						deep = map[string]any{"k": deep}
					}
					return fail(t, writer, "store", map[string]any{"type": "memory", "content": "x", "metadata": deep}, "VALIDATION")
				}, []string{"metadata", "64"}},
			}
			for _, p := range probes {
				body := p.c()
				msg, _ := body["message"].(string)
				details, _ := json.Marshal(body["details"])
				for _, m := range p.mention {
					if !strings.Contains(msg+string(details), m) {
						t.Errorf("%s: %s does not mention %q", p.name, msg, m)
					}
				}
			}

			// Nothing changed.
			if got, err := a.Recall(ctx, privID); err != nil || got.Content != priv || got.Version != 2 {
				t.Fatalf("the private note changed: %+v, %v", got, err)
			}
			if got, err := a.Recall(ctx, uuid.MustParse(memID)); err != nil || got.Version != 1 || got.MemoryRole() != postgram.RoleDurableMemory {
				t.Fatalf("the memory changed: %+v, %v", got, err)
			}
			if st, _ := a.Sync().Status(ctx, "notes"); len(st.Files) != 3 || st.Files[0].SyncStatus != "synced" {
				t.Fatalf("the sync state changed: %+v", st)
			}
			// Reads show the key only what it can see.
			rows := ok(t, syncer, "sync_status", map[string]any{"repo": "notes", "full_response": true})["files"].([]any)
			if len(rows) != 2 || strings.Contains(func() string { b, _ := json.Marshal(rows); return string(b) }(), "private.md") {
				t.Fatalf("sync_status lists a hidden file: %v", rows)
			}
			q := ok(t, docs, "queue", map[string]any{"include_failures": true, "full_response": true})
			js, _ := json.Marshal(q)
			if strings.Contains(string(js), privID.String()) || strings.Contains(string(js), "private") {
				t.Fatalf("queue shows a hidden document: %s", js)
			}
			emb := q["embedding"].(map[string]any)
			if n := emb["pending"].(float64) + emb["completed"].(float64) + emb["failed"].(float64); n != 2 {
				t.Fatalf("queue counts cover %v entities, want the 2 documents the key sees: %s", n, js)
			}
			// An update of an untagged entity returns tags [] (was null).
			full := ok(t, owner, "update", map[string]any{"id": memID, "version": 1, "content": "durable fact about sea otters",
				"full_response": true})["entity"].(map[string]any)
			if tags, isList := full["tags"].([]any); !isList || len(tags) != 0 {
				t.Fatalf("update of an untagged entity: tags %#v, want []", full["tags"])
			}
		})
	}
}

// TestAccessLogKeyID: MCP requests' access-log lines and tool log lines
// carry the API key's id (issue 14), never the key.
func TestAccessLogKeyID(t *testing.T) {
	t.Parallel()
	logs := &lockedBuffer{}
	e := newEnvOn(t, "sqlite", logs)
	tok, k, err := postgramtest.Admin(t, e.admin).CreateKey(context.Background(), postgram.KeySpec{Name: "agent", Scopes: []postgram.Scope{postgram.ScopeRead}})
	if err != nil {
		t.Fatal(err)
	}
	c := connect(t, e.ts.URL, bearer(tok))
	ok(t, c, "queue", nil)
	fail(t, c, "store", map[string]any{"type": "memory", "content": "x"}, "FORBIDDEN")
	var requests, tools int
	for _, l := range logs.lines(t) {
		b, _ := json.Marshal(l)
		if strings.Contains(string(b), tok) {
			t.Fatalf("a log line holds the key: %s", b)
		}
		switch l["msg"] {
		case "http request":
			requests++
			if l["key_id"] != k.ID.String() {
				t.Errorf("access-log line without the key id: %s", b)
			}
		case "mcp: tool call", "mcp: tool refused":
			tools++
			if l["key_id"] != k.ID.String() {
				t.Errorf("tool log line without the key id: %s", b)
			}
		}
	}
	if requests < 3 || tools != 2 {
		t.Fatalf("%d access-log lines, %d tool lines", requests, tools)
	}
}

// TestStdioDrainsOnEOF: when stdin closes, postgram-mcp answers every call
// it has read before it exits (issue 14): a host that writes its requests
// and closes its end gets all the answers. mcp-go alone cancelled the calls
// still queued or running.
func TestStdioDrainsOnEOF(t *testing.T) {
	// Not parallel: mcp-go keeps one stdio session per process.
	e := newEnvOn(t, "sqlite", nil)
	srvIn, cliOut := io.Pipe()
	cliIn, srvOut := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := pmcp.ServeStdio(context.Background(), e.srv, srvIn, srvOut)
		_ = srvOut.Close()
		done <- err
	}()
	lines := bufio.NewScanner(cliIn)
	lines.Buffer(make([]byte, 0, 1<<16), 1<<22)
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(cliOut, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	if !lines.Scan() || !strings.Contains(lines.Text(), `"id":"init"`) {
		t.Fatalf("initialize: %q %v", lines.Text(), lines.Err())
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	const n = 40
	var burst strings.Builder
	for i := range n {
		fmt.Fprintf(&burst, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"store","arguments":{"type":"memory","content":"drained call %d"}}}`+"\n", i, i)
	}
	fmt.Fprintf(&burst, `{"jsonrpc":"2.0","id":"list","method":"tools/list"}`+"\n")
	if _, err := io.WriteString(cliOut, burst.String()); err != nil {
		t.Fatal(err)
	}
	_ = cliOut.Close() // the host is done writing
	answered := map[string]bool{}
	for lines.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Result *struct {
				IsError bool `json:"isError"`
			} `json:"result"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(lines.Bytes(), &msg); err != nil {
			t.Fatalf("output line %q: %v", lines.Text(), err)
		}
		if msg.Result == nil || msg.Result.IsError || msg.Error != nil {
			t.Fatalf("call failed at EOF: %s", lines.Text())
		}
		answered[string(msg.ID)] = true
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ServeStdio: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ServeStdio did not return after stdin closed")
	}
	if len(answered) != n+1 {
		t.Fatalf("%d of %d calls answered after stdin closed", len(answered), n+1)
	}
	page, err := e.admin.List(context.Background(), postgram.ListOptions{})
	if err != nil || page.Total != n {
		t.Fatalf("%d entities stored, want %d (%v)", page.Total, n, err)
	}
}
