package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/syncproto"
	"github.com/postgram-go/postgram/transport/rest"
)

func writeNote(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// noteTree makes DIR/notes with n notes and files that must not be synced.
func noteTree(t *testing.T, n int) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "notes")
	for i := range n {
		writeNote(t, root, fmt.Sprintf("d%d/n%02d.md", i%3, i), fmt.Sprintf("# Note %d\n\nSYNCCLI%dX body\n", i, i))
	}
	writeNote(t, root, ".obsidian/x.md", "# hidden")
	writeNote(t, root, "node_modules/p/README.md", "# pkg")
	writeNote(t, root, "private/.pgmignore", "")
	writeNote(t, root, "private/secret.md", "# secret")
	writeNote(t, root, "todo.txt", "not markdown")
	return root
}

func syncSummary(t *testing.T, r result) syncproto.Summary {
	t.Helper()
	wantOK(t, r)
	var s syncproto.Summary
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("sync --json output: %v\n%s", err, r.stdout)
	}
	return s
}

func counts(s syncproto.Summary) [5]int {
	return [5]int{s.Created, s.Updated, s.Unchanged, s.Deleted, s.Restored}
}

func TestSyncCommand(t *testing.T) {
	t.Parallel()
	s := newRealServer(t)
	root := noteTree(t, 12)

	// A dry run sends only the manifest.
	r := s.pgm(t, "sync", root, "--dry-run")
	wantOK(t, r)
	if !strings.Contains(r.stdout, "Dry run: a sync of 12 files of "+root+" as notes would create 12, update 0, delete 0 and restore 0") ||
		!strings.Contains(r.stdout, "  create   d0/n00.md") {
		t.Fatalf("dry run:\n%s", r.stdout)
	}
	st, err := s.client.Sync().Status(context.Background(), "notes")
	if err != nil || len(st.Files) != 0 {
		t.Fatalf("a dry run wrote %d files (%v)", len(st.Files), err)
	}

	// The first sync: repo defaults to the folder's name; small batches.
	sum := syncSummary(t, s.pgm(t, "--json", "sync", root, "--batch-files", "5"))
	if counts(sum) != [5]int{12, 0, 0, 0, 0} || sum.Repo != "notes" || sum.Files != 12 || sum.Batches != 3 {
		t.Fatalf("first sync %+v", sum)
	}
	r = s.pgm(t, "--json", "search", "SYNCCLI7X")
	wantOK(t, r)
	if !strings.Contains(r.stdout, `"type":"document"`) {
		t.Fatalf("search for a synced note: %s", r.stdout)
	}
	// No change: nothing uploaded, the human summary line.
	r = s.pgm(t, "sync", root)
	wantOK(t, r)
	if !strings.HasPrefix(r.stdout, "Synced 12 files of "+root+" as notes: 0 created, 0 updated, 12 unchanged, 0 deleted, 0 restored (0 batches,") || r.stderr != "" {
		t.Fatalf("no-change sync:\nstdout %s\nstderr %s", r.stdout, r.stderr)
	}

	// Edit 2, delete 1, add 1; the dry run lists them, the sync applies them.
	writeNote(t, root, "d0/n00.md", "# Note 0 edited\n")
	writeNote(t, root, "d1/n01.md", "# Note 1 edited\n")
	if err := os.Remove(filepath.Join(root, "d2/n02.md")); err != nil {
		t.Fatal(err)
	}
	writeNote(t, root, "new.md", "# New\n")
	r = s.pgm(t, "sync", root, "--dry-run")
	wantOK(t, r)
	for _, want := range []string{"would create 1, update 2, delete 1 and restore 0 (9 unchanged)", "  update   d0/n00.md", "  delete   d2/n02.md", "  create   new.md"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("dry run lacks %q:\n%s", want, r.stdout)
		}
	}
	// --progress prints plain lines when stderr is not a terminal.
	r = s.pgm(t, "--json", "sync", root, "--progress", "--batch-files", "2")
	sum = syncSummary(t, r)
	if counts(sum) != [5]int{1, 2, 9, 1, 0} || sum.Batches != 2 {
		t.Fatalf("sync after edits %+v", sum)
	}
	if r.stderr != "sync notes: 3 files to upload\nsync notes: uploaded 2 of 3 files\nsync notes: uploaded 3 of 3 files\n" {
		t.Fatalf("progress lines %q", r.stderr)
	}
	// The deleted file comes back: restored.
	writeNote(t, root, "d2/n02.md", "# Note 2\n\nSYNCCLI2X body\n")
	sum = syncSummary(t, s.pgm(t, "--json", "sync", root, "--quiet", "--progress"))
	if counts(sum) != [5]int{0, 0, 13, 0, 1} {
		t.Fatalf("restore %+v", sum)
	}
	// --repo names another repository; --toon works too.
	r = s.pgm(t, "--toon", "sync", root, "--repo", "notes-copy")
	wantOK(t, r)
	if !strings.Contains(r.stdout, "repo: notes-copy") || !strings.Contains(r.stdout, "created: 13") {
		t.Fatalf("toon summary:\n%s", r.stdout)
	}
}

func TestSyncCommandProblems(t *testing.T) {
	t.Parallel()
	s := newRealServer(t)
	root := noteTree(t, 3)
	writeNote(t, root, "bad/caf\xe9.md", "# latin-1 name")
	writeNote(t, root, "bad/binary.md", "\xff\xfe\x00")
	writeNote(t, root, "big.md", strings.Repeat("x", syncproto.MaxFileBytes+1))
	r := s.pgm(t, "sync", root)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"3 file(s) under " + root + " cannot be synced; nothing was sent", "bad/caf\uFFFD.md: the file name is not valid UTF-8",
		"bad/binary.md: the content is not valid UTF-8", "big.md: 1048577 bytes; the maximum is 1048576", "error: 3 file(s) cannot be synced (listed above)", ".pgmignore"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if st, _ := s.client.Sync().Status(context.Background(), "notes"); len(st.Files) != 0 {
		t.Fatalf("%d files synced despite the problems", len(st.Files))
	}
	// Excluding the folder and the file fixes it.
	writeNote(t, root, "bad/.pgmignore", "")
	if err := os.Remove(filepath.Join(root, "big.md")); err != nil {
		t.Fatal(err)
	}
	if sum := syncSummary(t, s.pgm(t, "--json", "sync", root)); sum.Created != 3 {
		t.Fatalf("after excluding %+v", sum)
	}
}

func TestSyncCommandUsageAndErrors(t *testing.T) {
	t.Parallel()
	s := newRealServer(t)
	root := noteTree(t, 2)
	spaced := filepath.Join(t.TempDir(), "my notes")
	writeNote(t, spaced, "a.md", "# A")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sync"}, 2, "one folder"},
		{[]string{"sync", root, root}, 2, "one folder"},
		{[]string{"sync", filepath.Join(root, "missing")}, 2, "no such file or directory"},
		{[]string{"sync", filepath.Join(root, "todo.txt")}, 2, "is not a folder"},
		{[]string{"sync", spaced}, 2, `"my notes" cannot be the repository name`},
		{[]string{"sync", root, "--repo", "../x"}, 2, "--repo"},
		{[]string{"sync", root, "--batch-files", "51"}, 2, "--batch-files"},
	} {
		r := s.pgm(t, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	wantOK(t, s.pgm(t, "sync", spaced, "--repo", "my-notes"))

	// A key without the sync scope: exit 5, nothing written.
	key, _, err := postgramtest.Admin(t, s.client).CreateKey(context.Background(), postgram.KeySpec{Name: "rw", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
	if err != nil {
		t.Fatal(err)
	}
	r := runPGM(t, map[string]string{"PGM_API_URL": s.url, "PGM_API_KEY": key, "HOME": t.TempDir()}, "", "sync", root)
	if r.code != 5 || !strings.Contains(r.stderr, "sync") {
		t.Fatalf("without the sync scope: exit %d %s", r.code, r.stderr)
	}
	// No server: exit 3.
	r = runPGM(t, map[string]string{"PGM_API_URL": closedURL(t), "PGM_API_KEY": key, "HOME": t.TempDir()}, "", "sync", root)
	if r.code != 3 {
		t.Fatalf("unreachable server: exit %d %s", r.code, r.stderr)
	}
}

// TestSyncCommandResumes: the server fails the third upload batch; pgm
// says how far it got and exits 3; the next run uploads only the rest.
func TestSyncCommandResumes(t *testing.T) {
	t.Parallel()
	s := newRealServer(t)
	var uploads atomic.Int32
	var failing atomic.Bool
	failing.Store(true)
	h := rest.New(rest.Config{Client: s.client})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/sync/upload" && failing.Load() && uploads.Add(1) == 3 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"code":"UNAVAILABLE","message":"the store is restarting"}}`)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	root := noteTree(t, 10)
	env := map[string]string{"PGM_API_URL": hs.URL, "PGM_API_KEY": s.key, "HOME": t.TempDir()}
	r := runPGM(t, env, "", "sync", root, "--batch-files", "2")
	if r.code != 3 || !strings.Contains(r.stderr, "stopped after 4 of 10 files were uploaded (2 batches committed); run the same command again to resume") {
		t.Fatalf("interrupted sync: exit %d\n%s", r.code, r.stderr)
	}
	failing.Store(false)
	r = runPGM(t, env, "", "--json", "sync", root, "--batch-files", "2")
	if sum := syncSummary(t, r); counts(sum) != [5]int{6, 0, 4, 0, 0} || sum.Batches != 3 {
		t.Fatalf("resumed sync %+v", sum)
	}
	st, err := s.client.Sync().Status(context.Background(), "notes")
	if err != nil || len(st.Files) != 10 {
		t.Fatalf("status after resuming: %d files, %v", len(st.Files), err)
	}
}

// The bar (drawn when stderr is a terminal) overwrites one line and ends
// it at the finish.
func TestSyncProgressBar(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	p := &syncProgress{w: &b, bar: true, label: "sync notes"}
	p.set(0, 4)
	p.set(2, 4) // throttled: within 100ms of the last draw
	p.set(4, 4) // the last one is always drawn
	p.finish()
	out := b.String()
	if strings.Count(out, "\r") != 3 || !strings.Contains(out, "sync notes [                              ]   0% 0/4 files") || strings.Contains(out, "2/4") ||
		!strings.Contains(out, "[==============================] 100% 4/4 files") || !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
		t.Fatalf("bar output %q", out)
	}
	if isTerminal(&b) || newSyncProgress(&b, "x", false, true).bar {
		t.Fatal("a buffer is not a terminal")
	}
}
