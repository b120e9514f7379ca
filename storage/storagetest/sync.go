package storagetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/syncproto"
)

// LibTransport carries the sync protocol straight to a library client. It
// can simulate a server killed after some upload batches.
type LibTransport struct {
	C *postgram.Client
	// FailAfter > 0 makes upload batch number FailAfter+1 (and later) fail.
	FailAfter int
	Uploads   int
}

func (l *LibTransport) Diff(ctx context.Context, r syncproto.DiffRequest) (*syncproto.DiffResponse, error) {
	return l.C.Sync().Diff(ctx, r)
}

func (l *LibTransport) Upload(ctx context.Context, r syncproto.UploadRequest) (*syncproto.UploadResponse, error) {
	if l.FailAfter > 0 && l.Uploads >= l.FailAfter {
		return nil, errors.New("connection reset: server killed")
	}
	l.Uploads++
	return l.C.Sync().Upload(ctx, r)
}

func (l *LibTransport) Finalize(ctx context.Context, r syncproto.FinalizeRequest) (*syncproto.FinalizeResponse, error) {
	return l.C.Sync().Finalize(ctx, r)
}

func writeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func noteName(i int) string { return fmt.Sprintf("area%02d/note%04d.md", i%40, i) }

func noteBody(i int, v string) string {
	return fmt.Sprintf("# Note %d\n\nBody of note %d, revision %s. Keyword kw%dx.\n", i, i, v, i)
}

type syncCounts struct{ created, updated, unchanged, deleted, restored int }

func counts(s *syncproto.Summary) syncCounts {
	return syncCounts{s.Created, s.Updated, s.Unchanged, s.Deleted, s.Restored}
}

func repoDocs(t *testing.T, c *postgram.Client, archived bool) map[string]*postgram.Entity {
	t.Helper()
	out := map[string]*postgram.Entity{}
	for off := 0; ; off += postgram.MaxListLimit {
		p, err := c.List(context.Background(), postgram.ListOptions{Types: []postgram.EntityType{postgram.TypeDocument},
			IncludeArchived: archived, Limit: postgram.MaxListLimit, Offset: off})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range p.Items {
			path, _ := e.Metadata["path"].(string)
			if prev, dup := out[path]; dup {
				t.Fatalf("two documents for %s: %s and %s", path, prev.ID, e.ID)
			}
			out[path] = e
		}
		if len(p.Items) < postgram.MaxListLimit {
			return out
		}
	}
}

func syncAuditCount(t *testing.T, c *postgram.Client) int {
	t.Helper()
	n := 0
	for _, op := range []string{"sync.create", "sync.update", "sync.archive", "sync.restore"} {
		es, err := adminOf(t, c).Audit(context.Background(), postgram.AuditFilter{Operation: op, Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		n += len(es)
	}
	return n
}

// testMarkdownSync syncs a generated 2,000-file tree, interrupts the first
// upload half-way, then edits, deletes, renames and restores files, with
// exact counts and contents after each run.
func testMarkdownSync(t *testing.T, open Opener) {
	e := newEnv(t, open)
	// Files leave the folder below: archiving their documents needs the
	// delete scope.
	c := e.admin().As(postgram.Principal{ClientID: "laptop", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeSync, postgram.ScopeDelete}})
	root := t.TempDir()
	const n = 2000
	for i := 0; i < n; i++ {
		writeFile(t, root, noteName(i), noteBody(i, "1"))
	}
	// Not synced: dot-directories, node_modules, ignored directories, other files.
	writeFile(t, root, ".git/notes.md", "# git")
	writeFile(t, root, "node_modules/pkg/README.md", "# pkg")
	writeFile(t, root, "private/secret.md", "# secret")
	writeFile(t, root, "private/.pgmignore", "")
	writeFile(t, root, "archive/old/x.md", "# x")
	writeFile(t, root, "archive/.noindex", "")
	writeFile(t, root, "todo.txt", "not markdown")

	run := func(tr *LibTransport, dry bool) (*syncproto.Summary, error) {
		return syncproto.Sync(e.ctx, tr, root, syncproto.Options{Repo: "notes", DryRun: dry})
	}
	mustRun := func(want syncCounts) *syncproto.Summary {
		t.Helper()
		s, err := run(&LibTransport{C: c}, false)
		if err != nil {
			t.Fatalf("sync: %v", err)
		}
		if got := counts(s); got != want {
			t.Fatalf("sync counts %+v, want %+v", got, want)
		}
		return s
	}

	// A dry run writes nothing.
	dry, err := run(&LibTransport{C: c}, true)
	if err != nil || dry.Created != n || dry.Files != n || len(repoDocs(t, e.c, true)) != 0 {
		t.Fatalf("dry run: %+v %v", dry, err)
	}
	// The first sync is interrupted after 20 of 40 batches.
	tr := &LibTransport{C: c, FailAfter: 20}
	if _, err := run(tr, false); err == nil || !strings.Contains(err.Error(), "server killed") {
		t.Fatalf("interrupted sync: %v", err)
	}
	if got := len(repoDocs(t, e.c, true)); got != 1000 {
		t.Fatalf("after the interruption %d documents, want 1000", got)
	}
	// The next run resumes: no duplicate, no loss.
	s := mustRun(syncCounts{created: 1000, unchanged: 1000})
	if s.Batches != 20 {
		t.Fatalf("resumed in %d batches, want 20", s.Batches)
	}
	docs := repoDocs(t, e.c, true)
	if len(docs) != n {
		t.Fatalf("%d documents, want %d", len(docs), n)
	}
	for i := 0; i < n; i += 97 {
		d := docs[noteName(i)]
		if d == nil || d.Content != noteBody(i, "1") || d.Metadata["title"] != fmt.Sprintf("Note %d", i) || d.Type != postgram.TypeDocument ||
			d.Metadata["repo"] != "notes" || d.Metadata["sha"] != syncproto.SHA([]byte(noteBody(i, "1"))) {
			t.Fatalf("document %s = %+v", noteName(i), d)
		}
	}
	for _, skipped := range []string{".git/notes.md", "node_modules/pkg/README.md", "private/secret.md", "archive/old/x.md"} {
		if docs[skipped] != nil {
			t.Fatalf("%s was synced", skipped)
		}
	}
	if r := e.search(postgram.SearchRequest{Query: "kw1234x"}); len(r.Results) != 1 || r.Results[0].Entity.ID != docs[noteName(1234)].ID {
		t.Fatalf("keyword search of a synced note: %v", ids(r))
	}

	// A re-run with no change writes nothing.
	before := syncAuditCount(t, e.c)
	if s := mustRun(syncCounts{unchanged: n}); s.Batches != 0 {
		t.Fatalf("no-change run uploaded %d batches", s.Batches)
	}
	if after := syncAuditCount(t, e.c); after != before {
		t.Fatalf("no-change run wrote %d audit entries", after-before)
	}
	st, err := c.Sync().Status(e.ctx, "notes")
	if err != nil || len(st.Files) != n || st.Files[0].SyncStatus != "synced" {
		t.Fatalf("status: %d files, %v", len(st.Files), err)
	}

	// Edit 10, delete 5, rename 3, add 2.
	for i := 0; i < 10; i++ {
		writeFile(t, root, noteName(i), noteBody(i, "2"))
	}
	for i := 10; i < 15; i++ {
		if err := os.Remove(filepath.Join(root, noteName(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "renamed"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 15; i < 18; i++ {
		if err := os.Rename(filepath.Join(root, noteName(i)), filepath.Join(root, "renamed", fmt.Sprintf("r%d.md", i))); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, root, "new/a.md", "no heading here\n")
	writeFile(t, root, "new/b.md", "```\n# not a title\n```\n# Real Title #\n")
	mustRun(syncCounts{created: 5, updated: 10, unchanged: n - 10 - 5 - 3, deleted: 8})
	docs = repoDocs(t, e.c, true)
	if len(docs) != n+5 {
		t.Fatalf("%d documents after edits, want %d", len(docs), n+5)
	}
	for i := 0; i < 10; i++ {
		if d := docs[noteName(i)]; d.Content != noteBody(i, "2") || d.Status != postgram.StatusActive || d.Version != 2 {
			t.Fatalf("edited %s: %q %s v%d", noteName(i), d.Content, d.Status, d.Version)
		}
	}
	for i := 10; i < 18; i++ {
		if d := docs[noteName(i)]; d.Status != postgram.StatusArchived {
			t.Fatalf("removed %s is %s", noteName(i), d.Status)
		}
	}
	if d := docs["renamed/r16.md"]; d == nil || d.Content != noteBody(16, "1") || d.Status != postgram.StatusActive {
		t.Fatalf("renamed file: %+v", d)
	}
	if docs["new/a.md"].Metadata["title"] != "a" || docs["new/b.md"].Metadata["title"] != "Real Title" {
		t.Fatalf("titles: %v %v", docs["new/a.md"].Metadata["title"], docs["new/b.md"].Metadata["title"])
	}
	if active := repoDocs(t, e.c, false); len(active) != n+5-8 {
		t.Fatalf("%d active documents, want %d", len(active), n+5-8)
	}

	// Restore: four deleted files come back unchanged, one changed.
	for i := 10; i < 14; i++ {
		writeFile(t, root, noteName(i), noteBody(i, "1"))
	}
	writeFile(t, root, noteName(14), noteBody(14, "3"))
	mustRun(syncCounts{updated: 1, unchanged: n - 8 + 5 + 4, restored: 4})
	docs = repoDocs(t, e.c, true)
	for i := 10; i < 15; i++ {
		if d := docs[noteName(i)]; d.Status != postgram.StatusActive {
			t.Fatalf("restored %s is %s", noteName(i), d.Status)
		}
	}
	if d := docs[noteName(14)]; d.Content != noteBody(14, "3") {
		t.Fatalf("changed restore: %q", d.Content)
	}
	if len(docs) != n+5 {
		t.Fatalf("%d documents after restore, want %d (no duplicates)", len(docs), n+5)
	}
	mustRun(syncCounts{unchanged: n + 2}) // 3 renamed files moved, 2 added
}

// testSyncBadInput: every bad item is a clear error naming it, and nothing
// of the batch is applied.
func testSyncBadInput(t *testing.T, open Opener) {
	e := newEnv(t, open)
	c := e.c
	good := "# Good\n"
	gf := syncproto.UploadFile{Path: "good.md", SHA: syncproto.SHA([]byte(good)), Content: good}
	up := func(files ...syncproto.UploadFile) error {
		_, err := c.Sync().Upload(e.ctx, syncproto.UploadRequest{Repo: "r", Files: files})
		return err
	}
	file := func(p, content string) syncproto.UploadFile {
		return syncproto.UploadFile{Path: p, SHA: syncproto.SHA([]byte(content)), Content: content}
	}
	cases := []struct {
		name  string
		err   error
		field string
	}{
		{"escape", up(gf, file("../etc/passwd.md", "x")), "files[1].path"},
		{"inner escape", up(gf, file("a/../../b.md", "x")), "files[1].path"},
		{"absolute", up(gf, file("/etc/x.md", "x")), "files[1].path"},
		{"not markdown", up(gf, file("a.txt", "x")), "files[1].path"},
		{"non-UTF-8 name", up(gf, file("caf\xe9.md", "x")), "files[1].path"},
		{"non-UTF-8 content", up(gf, file("bin.md", "\xff\xfe")), "files[1].content"},
		{"sha mismatch", up(gf, syncproto.UploadFile{Path: "m.md", SHA: syncproto.SHA([]byte("other")), Content: "mine"}), "files[1].sha"},
		{"bad sha", up(gf, syncproto.UploadFile{Path: "m.md", SHA: "abc", Content: "mine"}), "files[1].sha"},
		{"duplicate", up(gf, gf), "files[1].path"},
		{"bad repo", func() error {
			_, err := c.Sync().Diff(e.ctx, syncproto.DiffRequest{Repo: "../r", Files: nil})
			return err
		}(), "repo"},
		{"diff escape", func() error {
			_, err := c.Sync().Diff(e.ctx, syncproto.DiffRequest{Repo: "r", Files: []syncproto.FileEntry{{Path: "../x.md", SHA: gf.SHA}}})
			return err
		}(), "files[0].path"},
	}
	for _, tc := range cases {
		if tc.err == nil {
			t.Fatalf("%s: accepted", tc.name)
		}
		wantErr(t, tc.err, postgram.ErrInvalidArgument, tc.field)
		if !strings.Contains(tc.err.Error(), "files[") && tc.field != "repo" {
			t.Fatalf("%s: %v does not name the item", tc.name, tc.err)
		}
	}
	if docs := repoDocs(t, c, true); len(docs) != 0 {
		t.Fatalf("a rejected batch left %d documents", len(docs))
	}
	// A key without the sync scope may not sync.
	ro := adminOf(t, c).As(postgram.Principal{ClientID: "x", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
	if err := func() error {
		_, err := ro.Sync().Upload(e.ctx, syncproto.UploadRequest{Repo: "r", Files: []syncproto.UploadFile{gf}})
		return err
	}(); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("upload without the sync scope: %v", err)
	}

	// Single-shot push: create, no-op, delete + restore.
	push := func(files ...syncproto.UploadFile) *syncproto.PushResponse {
		t.Helper()
		r, err := c.Sync().Push(e.ctx, syncproto.PushRequest{Repo: "p", Files: files})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b := file("a.md", "# A\n"), file("dir/b.md", "# B\n")
	if r := push(a, b); *r != (syncproto.PushResponse{Created: 2}) {
		t.Fatalf("push 1: %+v", r)
	}
	if r := push(a, b); *r != (syncproto.PushResponse{Unchanged: 2}) {
		t.Fatalf("push 2: %+v", r)
	}
	if r := push(a); *r != (syncproto.PushResponse{Unchanged: 1, Deleted: 1}) {
		t.Fatalf("push 3: %+v", r)
	}
	if r := push(a, b); *r != (syncproto.PushResponse{Unchanged: 2, Restored: 1}) {
		t.Fatalf("push 4: %+v", r)
	}
	b2 := file("dir/b.md", "# B2\n")
	if r := push(a, b2); *r != (syncproto.PushResponse{Unchanged: 1, Updated: 1}) {
		t.Fatalf("push 5: %+v", r)
	}
}

// testSyncRepos covers the per-repository summary: counts of synced and
// deleted files, limited to what the caller may read.
func testSyncRepos(t *testing.T, open Opener) {
	e := newEnv(t, open)
	c := e.admin().As(postgram.Principal{ClientID: "laptop", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeSync, postgram.ScopeDelete}})
	push := func(repo string, files map[string]string) {
		t.Helper()
		var req syncproto.PushRequest
		req.Repo = repo
		for p, body := range files {
			sum := sha256.Sum256([]byte(body))
			req.Files = append(req.Files, syncproto.UploadFile{Path: p, SHA: hex.EncodeToString(sum[:]), Content: body})
		}
		if _, err := c.Sync().Push(e.ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	push("notes", map[string]string{"a.md": "# A", "b.md": "# B", "c.md": "# C"})
	push("notes", map[string]string{"a.md": "# A", "b.md": "# B"}) // c.md left the folder
	push("work", map[string]string{"x.md": "# X"})
	repos, err := c.Sync().Repos(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(repos) != 2 || repos[0].Repo != "notes" || repos[0].Synced != 2 || repos[0].Deleted != 1 || repos[1].Repo != "work" ||
		repos[1].Synced != 1 || repos[0].LastSynced == "" {
		t.Fatalf("Repos = %+v", repos)
	}
	// A key limited to tasks sees no synced document.
	tasks := e.admin().As(postgram.Principal{ClientID: "t", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeSync},
		AllowedTypes: []postgram.EntityType{postgram.TypeTask}})
	if repos, err := tasks.Sync().Repos(e.ctx); err != nil || len(repos) != 0 {
		t.Fatalf("Repos for a task-only key = %+v, %v", repos, err)
	}
}
