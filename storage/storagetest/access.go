package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/llm"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/syncproto"
)

// Access rules of DESIGN.md §2 that issue 14 found broken: what a key
// cannot see does not exist for it on every read and write path, and the
// write scope can neither hide nor archive.

// testWriteCannotHide: a write-scoped key may not change another client's
// memory_role (turning durable memory into its own session context hid it
// from everyone else) nor archive through status (that is deletion, the
// delete scope); the owning client and an administrator may. Untagged
// entities come back from Update with tags [] (not nil).
func testWriteCannotHide(t *testing.T, open Opener) {
	e := newEnv(t, open)
	owner := e.admin().As(postgram.Principal{KeyID: "k-owner", ClientID: "owner", Scopes: postgram.AllScopes})
	writer := e.admin().As(postgram.Principal{KeyID: "k-writer", ClientID: "writer",
		Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
	mem := mustStore(t, owner, postgram.StoreInput{Content: "durable fact about otters"})
	sc := postgram.Status("archived")
	role := map[string]any{"memory_role": "session_context"}

	if _, err := writer.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: mem.Version, Metadata: role}); !errors.Is(err, postgram.ErrForbidden) ||
		!strings.Contains(err.Error(), "memory_role") {
		t.Fatalf("another client changed memory_role: %v", err)
	}
	if _, err := writer.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: mem.Version, Metadata: map[string]any{"memory_role": nil}}); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("another client removed memory_role: %v", err)
	}
	if _, err := writer.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: mem.Version, Status: &sc}); !errors.Is(err, postgram.ErrForbidden) ||
		!strings.Contains(err.Error(), `"delete"`) {
		t.Fatalf("status archived without the delete scope: %v", err)
	}
	task := mustStore(t, writer, postgram.StoreInput{Type: postgram.TypeTask, Content: "file the otter report"})
	if _, err := writer.UpdateTask(e.ctx, task.ID, postgram.TaskUpdate{Version: task.Version, Status: &sc}); err == nil {
		t.Fatal("a task was archived without the delete scope")
	}
	if got, err := e.c.Recall(e.ctx, mem.ID); err != nil || got.Version != mem.Version || got.MemoryRole() != postgram.RoleDurableMemory {
		t.Fatalf("a refused update changed the entity: %+v, %v", got, err)
	}
	// Other metadata and the status otherwise stay writable.
	done := postgram.StatusDone
	upd, err := writer.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: mem.Version, Status: &done,
		Metadata: map[string]any{"note": "x", "memory_role": "durable_memory"}})
	if err != nil {
		t.Fatalf("an update keeping memory_role: %v", err)
	}
	if upd.Tags == nil {
		t.Fatal("Update returned nil tags for an untagged entity (the wire says null; want [])")
	}
	// The owner may change the role; an administrator too; the delete
	// scope archives.
	upd, err = owner.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: upd.Version, Metadata: role})
	if err != nil || upd.MemoryRole() != postgram.RoleSessionContext {
		t.Fatalf("the owning client changed memory_role: %+v, %v", upd, err)
	}
	upd, err = e.c.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: upd.Version, Metadata: map[string]any{"memory_role": "durable_memory"}})
	if err != nil || upd.MemoryRole() != postgram.RoleDurableMemory {
		t.Fatalf("an administrator changed memory_role: %+v, %v", upd, err)
	}
	if upd, err = owner.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: upd.Version, Status: &sc}); err != nil || upd.Status != postgram.StatusArchived {
		t.Fatalf("archiving with the delete scope: %+v, %v", upd, err)
	}
	// entity.update records which fields changed, never their values.
	audit, err := e.admin().Audit(e.ctx, postgram.AuditFilter{Operation: "entity.update"})
	if err != nil || len(audit) != 4 {
		t.Fatalf("entity.update audit: %d entries, %v", len(audit), err)
	}
	fields := func(a postgram.AuditEntry) []string {
		var out []string
		switch v := a.Details["fields"].(type) {
		case []string:
			out = v
		case []any:
			for _, x := range v {
				s, _ := x.(string)
				out = append(out, s)
			}
		}
		return out
	}
	if got := fields(audit[3]); !slices.Equal(got, []string{"status", "metadata"}) {
		t.Fatalf("entity.update fields %v, want [status metadata]", got)
	}
	if got := fields(audit[0]); !slices.Equal(got, []string{"status"}) {
		t.Fatalf("entity.update fields %v, want [status]", got)
	}
	for _, a := range audit {
		for k, v := range a.Details {
			if s, ok := v.(string); ok && (strings.Contains(s, "otter") || s == "x") {
				t.Fatalf("the audit log holds content (%s=%q)", k, s)
			}
		}
	}
}

// upFile is a sync upload of content at path.
func upFile(path, content string) syncproto.UploadFile {
	return syncproto.UploadFile{Path: path, SHA: syncproto.SHA([]byte(content)), Content: content}
}

func manifest(files ...syncproto.UploadFile) []syncproto.FileEntry {
	out := make([]syncproto.FileEntry, len(files))
	for i, f := range files {
		out[i] = syncproto.FileEntry{Path: f.Path, SHA: f.SHA}
	}
	return out
}

// wantRefused fails unless err wraps target and its message names every
// part.
func wantRefused(t *testing.T, what string, err, target error, parts ...string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: %q does not name %q", what, err, p)
		}
	}
}

// testSyncAccess: sync loads its targets through the key's rights. A
// shared-only sync key overwrote a personal document through upload and
// archived it through finalize without the delete scope; now a file whose
// document the key cannot see is refused naming its path, nothing of the
// batch is applied, archiving needs the delete scope, and status and diff
// list only what the key can see.
func testSyncAccess(t *testing.T, open Opener) {
	e := newEnv(t, open)
	priv, shared, gone := upFile("private.md", "# Private\n\ndiary\n"), upFile("shared.md", "# Shared\n"), upFile("gone.md", "# Gone\n")
	if _, err := e.c.Sync().Upload(e.ctx, syncproto.UploadRequest{Repo: "notes", Files: []syncproto.UploadFile{priv, shared, gone}}); err != nil {
		t.Fatal(err)
	}
	docs := repoDocs(t, e.c, true)
	personal := postgram.VisibilityPersonal
	if _, err := e.c.Update(e.ctx, docs["private.md"].ID, postgram.UpdateInput{Version: 1, Visibility: &personal}); err != nil {
		t.Fatal(err)
	}
	syncer := e.admin().As(postgram.Principal{KeyID: "k-sync", ClientID: "laptop", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeSync},
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
	deleter := e.admin().As(postgram.Principal{KeyID: "k-sync-del", ClientID: "laptop",
		Scopes:              []postgram.Scope{postgram.ScopeRead, postgram.ScopeSync, postgram.ScopeDelete},
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
	if _, err := syncer.Recall(e.ctx, docs["private.md"].ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("the sync key sees the personal document: %v", err)
	}
	audits := syncAuditCount(t, e.c)
	unchanged := func(what string) {
		t.Helper()
		now := repoDocs(t, e.c, true)
		if len(now) != 3 {
			t.Fatalf("%s: %d documents after a refused batch, want 3", what, len(now))
		}
		for p, d := range docs {
			got := now[p]
			want := d.Version
			if p == "private.md" {
				want++
			}
			if got.Version != want || got.Status != postgram.StatusActive || got.Content != d.Content {
				t.Fatalf("%s: a refused batch changed %s: %+v", what, p, got)
			}
		}
		if n := syncAuditCount(t, e.c); n != audits {
			t.Fatalf("%s: a refused batch audited %d sync writes", what, n-audits)
		}
		st, err := e.c.Sync().Status(e.ctx, "notes")
		if err != nil || len(st.Files) != 3 {
			t.Fatalf("%s: status after a refused batch: %+v, %v", what, st, err)
		}
		for _, f := range st.Files {
			if f.SyncStatus != driver.SyncStatusSynced {
				t.Fatalf("%s: a refused batch changed the state of %s: %+v", what, f.Path, f)
			}
		}
	}

	hijack := upFile("private.md", "# Private\n\nowned by the sync key\n")
	_, err := syncer.Sync().Upload(e.ctx, syncproto.UploadRequest{Repo: "notes", Files: []syncproto.UploadFile{upFile("new.md", "# New\n"), hijack}})
	wantRefused(t, "upload over a hidden document", err, postgram.ErrForbidden, "files[1].path", "private.md")
	unchanged("upload")
	_, err = syncer.Sync().Upload(e.ctx, syncproto.UploadRequest{Repo: "notes", Files: []syncproto.UploadFile{priv}})
	wantRefused(t, "an unchanged upload of a hidden document", err, postgram.ErrForbidden, "private.md")
	_, err = syncer.Sync().Finalize(e.ctx, syncproto.FinalizeRequest{Repo: "notes", Files: manifest(shared, priv)})
	wantRefused(t, "finalize naming a hidden document", err, postgram.ErrForbidden, "files[1].path", "private.md")
	unchanged("finalize naming a hidden path")
	_, err = syncer.Sync().Finalize(e.ctx, syncproto.FinalizeRequest{Repo: "notes", Files: manifest(shared)})
	wantRefused(t, "finalize archiving without the delete scope", err, postgram.ErrForbidden, "gone.md", `"delete"`)
	unchanged("finalize without the delete scope")
	_, err = syncer.Sync().Push(e.ctx, syncproto.PushRequest{Repo: "notes", Files: []syncproto.UploadFile{shared, gone, hijack}})
	wantRefused(t, "push over a hidden document", err, postgram.ErrForbidden, "files[2].path", "private.md")
	unchanged("push over a hidden document")
	_, err = syncer.Sync().Push(e.ctx, syncproto.PushRequest{Repo: "notes", Files: []syncproto.UploadFile{upFile("new.md", "# New\n"), shared}})
	wantRefused(t, "push archiving without the delete scope", err, postgram.ErrForbidden, "gone.md", `"delete"`)
	unchanged("push without the delete scope")

	// Status and diff show the key only what it can see.
	st, err := syncer.Sync().Status(e.ctx, "notes")
	if err != nil || len(st.Files) != 2 || st.Files[0].Path != "gone.md" || st.Files[1].Path != "shared.md" {
		t.Fatalf("status for the sync key lists hidden files: %+v, %v", st, err)
	}
	diff, err := syncer.Sync().Diff(e.ctx, syncproto.DiffRequest{Repo: "notes", Files: manifest(shared, priv)})
	if err != nil || len(diff.ToUpload) != 1 || diff.ToUpload[0].Path != "private.md" || diff.ToUpload[0].Reason != syncproto.ReasonNew ||
		len(diff.ToDelete) != 1 || diff.ToDelete[0] != "gone.md" {
		t.Fatalf("diff for the sync key: %+v, %v", diff, err)
	}

	// With the delete scope, finalize archives what left the folder and
	// leaves the hidden document alone.
	fin, err := deleter.Sync().Finalize(e.ctx, syncproto.FinalizeRequest{Repo: "notes", Files: manifest(shared)})
	if err != nil || fin.Deleted != 1 {
		t.Fatalf("finalize with the delete scope: %+v, %v", fin, err)
	}
	now := repoDocs(t, e.c, true)
	if now["gone.md"].Status != postgram.StatusArchived || now["private.md"].Status != postgram.StatusActive {
		t.Fatalf("after finalize: gone %s, private %s", now["gone.md"].Status, now["private.md"].Status)
	}
	// A restore needs no delete scope.
	if fin, err := syncer.Sync().Finalize(e.ctx, syncproto.FinalizeRequest{Repo: "notes", Files: manifest(shared, gone)}); err != nil || fin.Restored != 1 {
		t.Fatalf("restore by the sync key: %+v, %v", fin, err)
	}
	// An administrator sees every file.
	if st, err := e.c.Sync().Status(e.ctx, "notes"); err != nil || len(st.Files) != 3 {
		t.Fatalf("admin status: %+v, %v", st, err)
	}
}

// testQueueAccess: GET /api/queue and MCP queue returned the ids, paths
// and error texts of documents a key gets 404 on, and workspace-wide
// counts. Counts and failures now cover what the key can see; an
// administrator sees everything.
func testQueueAccess(t *testing.T, open Opener) {
	// Extraction is on (never run here), so the queue reports its counts.
	e := newEnv(t, open, func(c *postgram.Config) { c.Extraction.Extractor = llm.NewExtractor(postgramtest.NewScriptedLLM("")) })
	other := e.admin().As(postgram.Principal{KeyID: "k-other", ClientID: "other", Scopes: postgram.AllScopes})
	mustStore(t, e.c, postgram.StoreInput{Type: postgram.TypeDocument, Content: "a personal secret", Visibility: postgram.VisibilityPersonal,
		Metadata: map[string]any{"path": "secret/diary.md"}})
	mustStore(t, e.c, postgram.StoreInput{Type: postgram.TypePerson, Content: "a shared person"})
	mustStore(t, other, postgram.StoreInput{Content: "other client's session context", Metadata: map[string]any{"memory_role": "session_context"}})
	seen := mustStore(t, e.c, postgram.StoreInput{Type: postgram.TypeDocument, Content: "a shared document"})
	e.emb.Fail(errors.New("provider refused: quota for secret/diary.md"))
	if _, err := e.admin().EnrichPending(e.ctx); err != nil {
		t.Fatal(err)
	}
	key := e.admin().As(postgram.Principal{KeyID: "k-docs", ClientID: "docs", Scopes: []postgram.Scope{postgram.ScopeRead},
		AllowedTypes: []postgram.EntityType{postgram.TypeDocument, postgram.TypeMemory}, AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
	q, err := key.QueueStatus(e.ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Failures) != 1 || q.Failures[0].ID != seen.ID {
		t.Fatalf("failures for a limited key: %+v", q.Failures)
	}
	if n := q.Embedding.Pending + q.Embedding.Completed + q.Embedding.Failed; n != 1 || q.Embedding.Failed != 1 {
		t.Fatalf("embedding counts for a limited key cover %d entities: %+v", n, q.Embedding)
	}
	if x := q.Extraction; x == nil || x.Pending+x.Completed+x.Failed+x.Skipped != 1 {
		t.Fatalf("extraction counts for a limited key: %+v", x)
	}
	// Another client's session context is not counted either.
	own := e.admin().As(postgram.Principal{KeyID: "k-own", ClientID: "me", Scopes: []postgram.Scope{postgram.ScopeRead}})
	if q, err := own.QueueStatus(e.ctx, 100); err != nil || q.Embedding.Failed != 3 || len(q.Failures) != 3 {
		t.Fatalf("queue for a key of another client: %+v %+v, %v", q.Embedding, q.Failures, err)
	}
	if q, err := newEnv(t, open).c.QueueStatus(e.ctx, 0); err != nil || q.Extraction != nil {
		t.Fatalf("with extraction off the queue has no extraction part: %+v, %v", q.Extraction, err)
	}
	all, err := e.c.QueueStatus(e.ctx, 100)
	if err != nil || all.Embedding.Failed != 4 || len(all.Failures) != 4 {
		t.Fatalf("admin queue: %+v %d failures, %v", all.Embedding, len(all.Failures), err)
	}
}

// nested returns a metadata object nesting depth objects (the outer one
// included): {"k":{"k":…{}}}.
func nested(depth int) map[string]any {
	m := map[string]any{}
	for i := 1; i < depth; i++ {
		m = map[string]any{"k": m}
	}
	return m
}

// testBadInputSameAnswer: metadata nested deeper than 64 levels and a NUL
// byte in a query or any stored text are a validation error naming the
// field, on every backend (SQLite answered 500 for deep metadata and 200
// for a NUL query; PostgreSQL stored 9,990 levels and answered a NUL with
// its own error text).
func testBadInputSameAnswer(t *testing.T, open Opener) {
	e := newEnv(t, open)
	c := e.c
	ent := e.store1(postgram.StoreInput{Content: "a target for updates"})
	other := e.store1(postgram.StoreInput{Content: "a target for links"})
	task, err := c.CreateTask(e.ctx, postgram.TaskInput{Content: "a task"})
	if err != nil {
		t.Fatal(err)
	}
	nul := "bad\x00value"
	deep := nested(postgram.MaxMetadataDepth + 1)
	list := func(o postgram.ListOptions) error { _, err := c.List(e.ctx, o); return err }
	search := func(r postgram.SearchRequest) error { _, err := c.Search(e.ctx, r); return err }
	store := func(in postgram.StoreInput) error {
		if in.Type == "" {
			in.Type = postgram.TypeMemory
		}
		if in.Content == "" {
			in.Content = "content"
		}
		_, err := c.Store(e.ctx, in)
		return err
	}
	update := func(in postgram.UpdateInput) error {
		in.Version = ent.Version
		_, err := c.Update(e.ctx, ent.ID, in)
		return err
	}
	cases := []struct {
		name, field string
		err         error
	}{
		{"search query", "query", search(postgram.SearchRequest{Query: nul})},
		{"search owner", "owner", search(postgram.SearchRequest{Query: "x", Owner: nul})},
		{"search tag", "tags[0]", search(postgram.SearchRequest{Query: "x", Tags: []string{nul}})},
		{"list owner", "owner", list(postgram.ListOptions{Owner: nul})},
		{"list tag", "tags[0]", list(postgram.ListOptions{Tags: []string{nul}})},
		{"store content", "content", store(postgram.StoreInput{Content: nul})},
		{"store source", "source", store(postgram.StoreInput{Source: nul})},
		{"store metadata value", "metadata", store(postgram.StoreInput{Metadata: map[string]any{"a": []any{nul}}})},
		{"store metadata key", "metadata", store(postgram.StoreInput{Metadata: map[string]any{nul: 1}})},
		{"store deep metadata", "metadata", store(postgram.StoreInput{Metadata: deep})},
		{"store very deep metadata", "metadata", store(postgram.StoreInput{Metadata: nested(9990)})},
		{"update content", "content", update(postgram.UpdateInput{Content: &nul})},
		{"update deep metadata", "metadata", update(postgram.UpdateInput{Metadata: map[string]any{"x": deep}})},
		{"task deep metadata", "metadata", func() error {
			_, err := c.UpdateTask(e.ctx, task.ID, postgram.TaskUpdate{Version: task.Version, Metadata: map[string]any{"x": deep}})
			return err
		}()},
		{"session context deep metadata", "metadata", func() error {
			_, err := c.StoreSessionContext(e.ctx, postgram.SessionContextInput{Content: "ctx", Metadata: deep})
			return err
		}()},
		{"session topic", "topic", func() error {
			_, err := c.StoreSessionContext(e.ctx, postgram.SessionContextInput{Content: "ctx", Topic: nul})
			return err
		}()},
		{"link deep metadata", "metadata", func() error {
			_, err := c.Link(e.ctx, postgram.LinkInput{SourceID: ent.ID, TargetID: other.ID, Relation: "related_to", Metadata: deep})
			return err
		}()},
		{"link relation", "relation", func() error {
			_, err := c.Link(e.ctx, postgram.LinkInput{SourceID: ent.ID, TargetID: other.ID, Relation: nul})
			return err
		}()},
		{"expand relation", "relation_types[0]", func() error {
			_, err := c.Expand(e.ctx, ent.ID, postgram.ExpandOptions{RelationTypes: []string{nul}})
			return err
		}()},
		{"sync content", "files[0].content", func() error {
			_, err := c.Sync().Upload(e.ctx, syncproto.UploadRequest{Repo: "r", Files: []syncproto.UploadFile{upFile("a.md", nul)}})
			return err
		}()},
		{"sync path", "files[0].path", func() error {
			_, err := c.Sync().Upload(e.ctx, syncproto.UploadRequest{Repo: "r", Files: []syncproto.UploadFile{upFile("a\x00.md", "x")}})
			return err
		}()},
		{"key name", "name", func() error {
			_, _, err := adminOf(t, c).CreateKey(e.ctx, postgram.KeySpec{Name: nul})
			return err
		}()},
		{"audit operation", "operation", func() error {
			_, err := adminOf(t, c).Audit(e.ctx, postgram.AuditFilter{Operation: nul})
			return err
		}()},
		{"audit key id", "key_id", func() error {
			_, err := adminOf(t, c).Audit(e.ctx, postgram.AuditFilter{KeyID: nul})
			return err
		}()},
	}
	for _, tc := range cases {
		if tc.err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		if !errors.Is(tc.err, postgram.ErrInvalidArgument) || postgram.FieldOf(tc.err) != tc.field {
			t.Errorf("%s: %v (field %q), want a validation error naming %q", tc.name, tc.err, postgram.FieldOf(tc.err), tc.field)
		}
		var be *postgram.BackendError
		if errors.As(tc.err, &be) {
			t.Errorf("%s: answered by the backend: %v", tc.name, tc.err)
		}
	}
	// 64 levels are fine and come back as stored.
	ok := e.store1(postgram.StoreInput{Content: "deep but allowed", Metadata: nested(postgram.MaxMetadataDepth)})
	back, err := c.Recall(e.ctx, ok.ID)
	if err != nil {
		t.Fatal(err)
	}
	d, m := 1, back.Metadata
	for {
		next, found := m["k"].(map[string]any)
		if !found {
			break
		}
		d, m = d+1, next
	}
	if d != postgram.MaxMetadataDepth {
		t.Fatalf("stored %d levels, read back %d", postgram.MaxMetadataDepth, d)
	}
}

// testAuditPrune: the audit log's retention (pgm-admin audit prune) deletes
// the entries from before the cut-off and records itself, in one
// transaction; it is an administrator's act; the cut-off is required and
// not in the future. (Each backend's own tests prove that its audit table
// refuses UPDATE and DELETE otherwise.)
func testAuditPrune(t *testing.T, open Opener) {
	var mu sync.Mutex
	clock := time.Now().Add(-30 * 24 * time.Hour)
	e := newEnv(t, open, func(c *postgram.Config) {
		c.Now = func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return clock
		}
	})
	set := func(t time.Time) { mu.Lock(); clock = t; mu.Unlock() }
	for i := 0; i < 3; i++ {
		e.store1(postgram.StoreInput{Content: fmt.Sprintf("old entry %d", i)})
	}
	set(time.Now().Add(-time.Hour))
	for i := 0; i < 2; i++ {
		e.store1(postgram.StoreInput{Content: fmt.Sprintf("recent entry %d", i)})
	}
	set(time.Now())
	cut := time.Now().Add(-7 * 24 * time.Hour)

	key := e.admin().As(postgram.Principal{KeyID: "k", ClientID: "k", Scopes: postgram.AllScopes})
	if _, err := key.Admin(); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("a key pruned the audit log: %v", err)
	}
	if _, err := e.admin().PruneAudit(e.ctx, time.Time{}, false); postgram.FieldOf(err) != "before" {
		t.Fatalf("prune without a cut-off: %v", err)
	}
	if _, err := e.admin().PruneAudit(e.ctx, time.Now().Add(time.Hour), false); postgram.FieldOf(err) != "before" {
		t.Fatalf("prune with a future cut-off: %v", err)
	}
	if n, err := e.admin().PruneAudit(e.ctx, cut, true); err != nil || n != 3 {
		t.Fatalf("dry run: %d, %v", n, err)
	}
	if all, _ := e.admin().Audit(e.ctx, postgram.AuditFilter{}); len(all) != 5 {
		t.Fatalf("a dry run deleted entries: %d left", len(all))
	}
	n, err := e.admin().PruneAudit(e.ctx, cut, false)
	if err != nil || n != 3 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	all, err := e.admin().Audit(e.ctx, postgram.AuditFilter{})
	if err != nil || len(all) != 3 {
		t.Fatalf("after the prune: %+v, %v", all, err)
	}
	if p := all[0]; p.Operation != "audit.prune" || fmt.Sprint(p.Details["deleted"]) != "3" || p.Details["before"] == nil {
		t.Fatalf("the prune is not audited: %+v", p)
	}
	for _, a := range all[1:] {
		if a.Operation != "entity.store" || a.At.Before(cut) {
			t.Fatalf("the prune left or removed the wrong entries: %+v", all)
		}
	}
	// Pruning again deletes nothing and is recorded too.
	if n, err := e.admin().PruneAudit(e.ctx, cut, false); err != nil || n != 0 {
		t.Fatalf("second prune: %d, %v", n, err)
	}
	if p, _ := e.admin().Audit(e.ctx, postgram.AuditFilter{Operation: "audit.prune"}); len(p) != 2 {
		t.Fatalf("prunes audited: %d", len(p))
	}
}

// racingStore is a real store whose next UpdateEntity first runs before
// (a concurrent writer).
type racingStore struct {
	driver.Storage
	mu     sync.Mutex
	before func()
}

func (r *racingStore) UpdateEntity(ctx context.Context, ws string, e *postgram.Entity, expected int64, chunks []driver.ChunkInput, audit *postgram.AuditEntry) error {
	r.mu.Lock()
	f := r.before
	r.before = nil
	r.mu.Unlock()
	if f != nil {
		f()
	}
	return r.Storage.UpdateEntity(ctx, ws, e, expected, chunks, audit)
}

// testConflictHidesInvisible: a version conflict whose current entity a
// concurrent writer made invisible to the key is not found for it: the
// conflict's details (the current entity) never show what the key cannot
// see.
func testConflictHidesInvisible(t *testing.T, open Opener) {
	e := newEnv(t, open)
	race := &racingStore{Storage: e.store}
	c := e.client(func(cfg *postgram.Config) { cfg.Store = race })
	ent := e.store1(postgram.StoreInput{Content: "shared for now"})
	key := adminOf(t, c).As(postgram.Principal{KeyID: "k", ClientID: "k", Scopes: postgram.AllScopes,
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
	race.before = func() {
		personal := postgram.VisibilityPersonal
		if _, err := e.c.Update(e.ctx, ent.ID, postgram.UpdateInput{Version: ent.Version, Visibility: &personal}); err != nil {
			t.Error(err)
		}
	}
	content := "overwritten"
	_, err := key.Update(e.ctx, ent.ID, postgram.UpdateInput{Version: ent.Version, Content: &content})
	var ce *postgram.ConflictError
	if !errors.Is(err, postgram.ErrNotFound) || errors.As(err, &ce) {
		t.Fatalf("a conflict over an entity made invisible: %v", err)
	}
}

// testRetryFailed: an entity whose embedding failed for good is due again
// after an operator's RetryFailed, with fresh attempts, and then embeds.
func testRetryFailed(t *testing.T, open Opener) {
	e := newEnv(t, open, func(c *postgram.Config) { c.Worker.MaxAttempts = 1 })
	ent := mustStore(t, e.c, postgram.StoreInput{Content: "an entity whose provider failed"})
	e.emb.Fail(errors.New("provider down"))
	if _, err := e.admin().EnrichPending(e.ctx); err != nil {
		t.Fatal(err)
	}
	q, err := e.c.QueueStatus(e.ctx, 0)
	if err != nil || q.Embedding.Failed != 1 || q.Embedding.RetryEligible != 0 {
		t.Fatalf("after the failure: %+v, %v", q.Embedding, err)
	}
	if _, err := e.admin().RetryFailed(e.ctx, "enrichment"); !errors.Is(err, postgram.ErrInvalidArgument) || postgram.FieldOf(err) != "queue" {
		t.Fatalf("an unknown queue: %v", err)
	}
	e.emb.Recover()
	n, err := e.admin().RetryFailed(e.ctx, "embedding")
	if err != nil || n != 1 {
		t.Fatalf("RetryFailed = %d, %v", n, err)
	}
	if _, err := e.admin().EnrichPending(e.ctx); err != nil {
		t.Fatal(err)
	}
	got, err := e.c.Recall(e.ctx, ent.ID)
	if err != nil || got.EnrichmentStatus != postgram.StageCompleted || got.EnrichmentAttempts != 0 {
		t.Fatalf("after the retry: %s attempts %d, %v", got.EnrichmentStatus, got.EnrichmentAttempts, err)
	}
	if n, err := e.admin().RetryFailed(e.ctx, "extraction"); err != nil || n != 0 {
		t.Fatalf("nothing to retry: %d, %v", n, err)
	}
}
