package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram/syncproto"
)

// newSyncStore returns the start function of a fresh store of the backend.
func newSyncStore(t *testing.T, backend string) func(t *testing.T) *server {
	t.Helper()
	if backend == "sqlite" {
		dir := t.TempDir()
		return func(t *testing.T) *server { return startServer(t, "", "POSTGRAM_DATA_DIR="+dir) }
	}
	dsn := freshDSN(t)
	return func(t *testing.T) *server { return startServer(t, dsn) }
}

func writeTreeFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func removeTreeFile(t *testing.T, root, rel string) {
	t.Helper()
	if err := os.Remove(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
		t.Fatal(err)
	}
}

// e2eNote is the path of note i: nested two levels.
func e2eNote(i int) string { return fmt.Sprintf("area%02d/sub%d/note%04d.md", i%25, i%4, i) }

func e2eBody(i int, rev string) string {
	return fmt.Sprintf("# Note %d\n\nRevision %s of note %d. Marker e2ekw%dr%s.\n", i, rev, i, i, rev)
}

// e2eTree writes n notes under a folder named vault, and files that must
// not be synced: a dot-directory, node_modules, a .pgmignore'd directory
// and a non-Markdown file.
func e2eTree(t *testing.T, n int) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "vault")
	for i := range n {
		writeTreeFile(t, root, e2eNote(i), e2eBody(i, "1"))
	}
	writeTreeFile(t, root, ".obsidian/workspace.md", "# not synced")
	writeTreeFile(t, root, "area01/.trash/old.md", "# not synced")
	writeTreeFile(t, root, "node_modules/pkg/README.md", "# not synced")
	writeTreeFile(t, root, "private/.pgmignore", "")
	writeTreeFile(t, root, "private/diary/secret.md", "# not synced")
	writeTreeFile(t, root, "area02/attachment.txt", "not markdown")
	return root
}

// pgmSync runs the real pgm sync with --json and returns its summary.
func pgmSync(t *testing.T, srv *server, key, root string, want [5]int) syncproto.Summary {
	t.Helper()
	began := time.Now()
	out, errOut, code := runCLI(t, "pgm", []string{"PGM_API_URL=" + srv.URL, "PGM_API_KEY=" + key}, "", "--json", "sync", root)
	t.Logf("pgm sync %v in %s", want, time.Since(began).Round(time.Millisecond))
	if code != 0 {
		t.Fatalf("pgm sync: exit %d\n%s\n%s", code, out, errOut)
	}
	var s syncproto.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("pgm sync output: %v\n%s", err, out)
	}
	if got := [5]int{s.Created, s.Updated, s.Unchanged, s.Deleted, s.Restored}; got != want {
		t.Fatalf("pgm sync counts (created, updated, unchanged, deleted, restored) %v, want %v", got, want)
	}
	return s
}

// syncDoc is a synced document as the REST API lists it.
type syncDoc struct {
	ID      string
	Content string
	Status  string
	Version int64
}

// repoDocs lists every document of repo through the REST API (archived
// included) by path, failing on two documents for one path.
func repoDocs(t *testing.T, srv *server, key, repo string) map[string]syncDoc {
	t.Helper()
	out := map[string]syncDoc{}
	for off := 0; ; off += 500 {
		code, page := api(t, "GET", fmt.Sprintf("%s/api/entities?type=document&include_archived=true&limit=500&offset=%d", srv.URL, off), key, nil)
		if code != 200 {
			t.Fatalf("list documents: %d %v", code, page)
		}
		items, _ := page["items"].([]any)
		for _, it := range items {
			e := it.(map[string]any)
			meta, _ := e["metadata"].(map[string]any)
			if meta["repo"] != repo {
				continue
			}
			p, _ := meta["path"].(string)
			if prev, dup := out[p]; dup {
				t.Fatalf("two documents for %s: %s and %s", p, prev.ID, e["id"])
			}
			out[p] = syncDoc{ID: e["id"].(string), Content: e["content"].(string), Status: e["status"].(string), Version: int64(e["version"].(float64))}
		}
		if len(items) < 500 {
			return out
		}
	}
}

func syncStatusFiles(t *testing.T, srv *server, key, repo string) []any {
	t.Helper()
	code, st := api(t, "GET", srv.URL+"/api/sync/status/"+url.PathEscape(repo), key, nil)
	if code != 200 {
		t.Fatalf("sync status: %d %v", code, st)
	}
	files, _ := st["files"].([]any)
	return files
}

// searchPath returns the paths of the documents a keyword search finds.
func searchPaths(t *testing.T, srv *server, key, query string) []string {
	t.Helper()
	code, res := api(t, "POST", srv.URL+"/api/search", key, map[string]any{"query": query})
	if code != 200 {
		t.Fatalf("search %q: %d %v", query, code, res)
	}
	var out []string
	for _, r := range res["results"].([]any) {
		row := r.(map[string]any)
		if chunk, _ := row["chunk_content"].(string); !strings.Contains(chunk, query) {
			continue
		}
		meta, _ := row["entity"].(map[string]any)["metadata"].(map[string]any)
		p, _ := meta["path"].(string)
		out = append(out, p)
	}
	return out
}

func TestSyncFolder(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testSyncFolder(t, newSyncStore(t, backend))
		})
	}
}

// testSyncFolder syncs a 2,000-file tree with the real pgm and server,
// then edits, deletes, renames and restores files, with exact counts and
// contents after every run, and checks that no-change runs write nothing.
func testSyncFolder(t *testing.T, start func(t *testing.T) *server) {
	srv := start(t)
	key := bootstrapToken(t, srv)
	const n = 2000
	root := e2eTree(t, n)

	pgmSync(t, srv, key, root, [5]int{n, 0, 0, 0, 0})
	docs := repoDocs(t, srv, key, "vault")
	if len(docs) != n {
		t.Fatalf("%d documents, want %d", len(docs), n)
	}
	for i := range n {
		if d, ok := docs[e2eNote(i)]; !ok || d.Content != e2eBody(i, "1") || d.Status != "active" || d.Version != 1 {
			t.Fatalf("document %s = %+v", e2eNote(i), d)
		}
	}
	for p := range docs {
		if strings.Contains(p, ".obsidian") || strings.Contains(p, ".trash") || strings.Contains(p, "node_modules") || strings.HasPrefix(p, "private/") {
			t.Fatalf("%s was synced", p)
		}
	}
	if got := searchPaths(t, srv, key, "e2ekw1234r1"); len(got) != 1 || got[0] != e2eNote(1234) {
		t.Fatalf("search for a synced note: %v", got)
	}

	// A re-run with no change writes nothing: all unchanged, no batch,
	// versions and last_synced times as they were.
	before := syncStatusFiles(t, srv, key, "vault")
	if s := pgmSync(t, srv, key, root, [5]int{0, 0, n, 0, 0}); s.Batches != 0 {
		t.Fatalf("a no-change run uploaded %d batches", s.Batches)
	}
	if after := syncStatusFiles(t, srv, key, "vault"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("a no-change run changed the sync state")
	}
	if again := repoDocs(t, srv, key, "vault"); fmt.Sprint(again) != fmt.Sprint(docs) {
		t.Fatal("a no-change run changed documents")
	}

	// Edit 10, delete 5, rename 3, add 2.
	for i := 0; i < 10; i++ {
		writeTreeFile(t, root, e2eNote(i), e2eBody(i, "2"))
	}
	for i := 10; i < 15; i++ {
		removeTreeFile(t, root, e2eNote(i))
	}
	for i := 15; i < 18; i++ {
		if err := os.MkdirAll(filepath.Join(root, "renamed"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(root, filepath.FromSlash(e2eNote(i))), filepath.Join(root, "renamed", fmt.Sprintf("r%d.md", i))); err != nil {
			t.Fatal(err)
		}
	}
	writeTreeFile(t, root, "inbox/new-a.md", "a note without a heading, e2ekwnewa\n")
	writeTreeFile(t, root, "inbox/new-b.md", "# Fresh\n\ne2ekwnewb\n")
	pgmSync(t, srv, key, root, [5]int{5, 10, n - 18, 8, 0})
	docs = repoDocs(t, srv, key, "vault")
	if len(docs) != n+5 {
		t.Fatalf("%d documents after the edits, want %d", len(docs), n+5)
	}
	for i := 0; i < 10; i++ {
		if d := docs[e2eNote(i)]; d.Content != e2eBody(i, "2") || d.Version != 2 || d.Status != "active" {
			t.Fatalf("edited %s = %+v", e2eNote(i), d)
		}
	}
	for i := 10; i < 18; i++ {
		if d := docs[e2eNote(i)]; d.Status != "archived" {
			t.Fatalf("removed %s is %s", e2eNote(i), d.Status)
		}
	}
	if d := docs["renamed/r16.md"]; d.Content != e2eBody(16, "1") || d.Status != "active" {
		t.Fatalf("renamed file = %+v", d)
	}
	if got := searchPaths(t, srv, key, "e2ekw3r2"); len(got) != 1 || got[0] != e2eNote(3) {
		t.Fatalf("search for an edited note: %v", got)
	}
	if got := searchPaths(t, srv, key, "e2ekw3r1"); len(got) != 0 {
		t.Fatalf("the old revision is still found: %v", got)
	}
	if got := searchPaths(t, srv, key, "e2ekwnewb"); len(got) != 1 || got[0] != "inbox/new-b.md" {
		t.Fatalf("search for a new note: %v", got)
	}

	// Restore: four deleted files come back unchanged, one changed.
	for i := 10; i < 14; i++ {
		writeTreeFile(t, root, e2eNote(i), e2eBody(i, "1"))
	}
	writeTreeFile(t, root, e2eNote(14), e2eBody(14, "3"))
	pgmSync(t, srv, key, root, [5]int{0, 1, n + 1, 0, 4})
	docs = repoDocs(t, srv, key, "vault")
	if len(docs) != n+5 {
		t.Fatalf("%d documents after the restore, want %d (no duplicates)", len(docs), n+5)
	}
	for i := 10; i < 15; i++ {
		if d := docs[e2eNote(i)]; d.Status != "active" {
			t.Fatalf("restored %s is %s", e2eNote(i), d.Status)
		}
	}
	if d := docs[e2eNote(14)]; d.Content != e2eBody(14, "3") {
		t.Fatalf("changed restore = %+v", d)
	}
	if got := searchPaths(t, srv, key, "e2ekw12r1"); len(got) != 1 || got[0] != e2eNote(12) {
		t.Fatalf("search for a restored note: %v", got)
	}

	// And once more with no change.
	before = syncStatusFiles(t, srv, key, "vault")
	pgmSync(t, srv, key, root, [5]int{0, 0, n + 2, 0, 0})
	if after := syncStatusFiles(t, srv, key, "vault"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatal("the last no-change run changed the sync state")
	}
	if again := repoDocs(t, srv, key, "vault"); fmt.Sprint(again) != fmt.Sprint(docs) {
		t.Fatal("the last no-change run changed documents")
	}
}

func TestSyncInterrupted(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			testSyncInterrupted(t, newSyncStore(t, backend))
		})
	}
}

// testSyncInterrupted kills the server (SIGKILL) while pgm uploads, after
// the first committed batch; after a restart on the same store, the same
// command finishes the sync with no duplicate and no loss.
func testSyncInterrupted(t *testing.T, start func(t *testing.T) *server) {
	srv := start(t)
	key := bootstrapToken(t, srv)
	const n = 3000
	root := e2eTree(t, n)

	cmd := exec.Command(filepath.Join(binDir, "pgm"), "sync", root, "--progress", "--batch-files", "10")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "PGM_API_URL=" + srv.URL, "PGM_API_KEY=" + key}
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout // progress lines and errors go to the pipe too
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	killed := false
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if !killed && strings.Contains(line, "uploaded ") {
			if err := srv.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			<-srv.done
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("pgm finished before any progress line: %v\n%s", err, log.String())
	}
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != 3 || !strings.Contains(log.String(), "run the same command again to resume") {
		t.Fatalf("pgm after the server was killed: %v\n%s", err, log.String())
	}

	srv2 := start(t)
	landed := len(syncStatusFiles(t, srv2, key, "vault"))
	if landed < 10 || landed >= n || landed%10 != 0 {
		t.Fatalf("%d files landed before the kill; want whole batches of 10, at least one, not all", landed)
	}
	if docs := repoDocs(t, srv2, key, "vault"); len(docs) != landed {
		t.Fatalf("%d documents but %d synced files after the kill", len(docs), landed)
	}
	t.Logf("%d of %d files landed before SIGKILL", landed, n)

	pgmSync(t, srv2, key, root, [5]int{n - landed, 0, landed, 0, 0})
	docs := repoDocs(t, srv2, key, "vault")
	if len(docs) != n {
		t.Fatalf("%d documents after resuming, want %d", len(docs), n)
	}
	for i := range n {
		if d, ok := docs[e2eNote(i)]; !ok || d.Content != e2eBody(i, "1") || d.Status != "active" || d.Version != 1 {
			t.Fatalf("document %s after resuming = %+v", e2eNote(i), d)
		}
	}
	pgmSync(t, srv2, key, root, [5]int{0, 0, n, 0, 0})
}
