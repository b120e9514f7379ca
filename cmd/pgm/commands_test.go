package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/postgram-go/postgram/internal/toon"
)

// decodeJSON parses one JSON document from s (numbers as float64).
func decodeJSON(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, s)
	}
	return v
}

// jsonOf normalises v through JSON, for comparisons with decodeJSON.
func jsonOf(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return decodeJSON(t, string(b))
}

func wantOK(t *testing.T, r result) {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
}

func wantLines(t *testing.T, s string, n int) {
	t.Helper()
	if got := strings.Count(s, "\n"); got != n || !strings.HasSuffix(s, "\n") {
		t.Fatalf("output has %d lines, want %d:\n%s", got, n, s)
	}
}

func body(t *testing.T, r request) any { t.Helper(); return jsonOf(t, r.Body) }

func TestStore(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	r := f.pgm(t, "", "store", "decided to use <pgvector> & HNSW", "--type", "memory", "--tags", "decisions, db",
		"--visibility", "work", "--owner", "ada", "--source", "meeting", "--metadata", `{"k":1,"big":12345678901234567890}`, "--status", "active")
	wantOK(t, r)
	req := f.last()
	if req.Method != "POST" || req.Path != "/api/entities" || req.Auth != "Bearer "+testKey {
		t.Fatalf("request %s %s auth %q", req.Method, req.Path, req.Auth)
	}
	want := map[string]any{"type": "memory", "content": "decided to use <pgvector> & HNSW", "tags": []any{"decisions", "db"},
		"visibility": "work", "owner": "ada", "source": "meeting", "status": "active",
		"metadata": map[string]any{"k": 1.0, "big": 12345678901234567890.0}}
	if d := cmp.Diff(jsonOf(t, want), body(t, req)); d != "" {
		t.Fatalf("body (-want +got):\n%s", d)
	}
	// The metadata's big integer keeps its digits on the wire.
	if n := req.Body["metadata"].(map[string]any)["big"]; n.(json.Number).String() != "12345678901234567890" {
		t.Fatalf("metadata.big sent as %v", n)
	}
	wantLines(t, r.stdout, 1)
	for _, s := range []string{"Stored memory 00000000-0000-4000-8000-000000000001", "version 1", "work", "enrichment pending"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("table output lacks %q:\n%s", s, r.stdout)
		}
	}

	// Defaults: type memory, nothing else sent.
	wantOK(t, f.pgm(t, "", "store", "plain"))
	if d := cmp.Diff(map[string]any{"type": "memory", "content": "plain"}, body(t, f.last())); d != "" {
		t.Fatalf("default body (-want +got):\n%s", d)
	}
}

func TestStoreOutputModes(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	r := f.pgm(t, "", "store", "x", "--json")
	wantOK(t, r)
	wantLines(t, r.stdout, 1)
	want := map[string]any{"id": "00000000-0000-4000-8000-000000000001", "type": "memory", "version": 1.0,
		"status": "active", "visibility": "shared", "enrichment_status": "pending"}
	if d := cmp.Diff(want, decodeJSON(t, r.stdout)); d != "" {
		t.Fatalf("--json (-want +got):\n%s", d)
	}

	r = f.pgm(t, "", "store", "y", "--json", "--full-response")
	wantOK(t, r)
	wantLines(t, r.stdout, 1)
	full := decodeJSON(t, r.stdout).(map[string]any)
	e := full["entity"].(map[string]any)
	if e["content"] != "y" || e["enrichment_attempts"] != 0.0 || e["created_at"] == nil {
		t.Fatalf("--full-response is not the REST response: %s", r.stdout)
	}

	// --full-response alone implies JSON.
	r = f.pgm(t, "", "store", "y2", "--full-response")
	wantOK(t, r)
	if _, ok := decodeJSON(t, r.stdout).(map[string]any)["entity"]; !ok {
		t.Fatalf("--full-response without --json: %s", r.stdout)
	}

	r = f.pgm(t, "", "store", "z", "--toon")
	wantOK(t, r)
	got, err := toon.Unmarshal([]byte(r.stdout))
	if err != nil {
		t.Fatalf("--toon output does not decode: %v\n%s", err, r.stdout)
	}
	want["id"] = "00000000-0000-4000-8000-000000000004"
	if d := cmp.Diff(want, jsonOf(t, got)); d != "" {
		t.Fatalf("--toon (-want +got):\n%s\n%s", d, r.stdout)
	}
	if !strings.HasPrefix(r.stdout, "id: 00000000-0000-4000-8000-000000000004\ntype: memory\n") {
		t.Fatalf("--toon output:\n%s", r.stdout)
	}

	r = f.pgm(t, "", "store", "w", "--toon", "--full-response")
	wantOK(t, r)
	got, err = toon.Unmarshal([]byte(r.stdout))
	if err != nil {
		t.Fatalf("--toon --full-response does not decode: %v", err)
	}
	if e, _ := got.(toon.Object).Get("entity"); e == nil {
		t.Fatalf("--toon --full-response lacks the entity:\n%s", r.stdout)
	}
}

func TestStoreStdin(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	for _, tc := range []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"dash", "from stdin\n\n", []string{"store", "-", "--type", "document"}, "from stdin"},
		{"no argument, piped", "line 1\nline 2\n", []string{"store"}, "line 1\nline 2"},
		{"argument wins over stdin", "ignored", []string{"store", "arg"}, "arg"},
	} {
		r := f.pgm(t, tc.stdin, tc.args...)
		wantOK(t, r)
		if got := f.last().Body["content"]; got != tc.want {
			t.Errorf("%s: content %q, want %q", tc.name, got, tc.want)
		}
	}
	n := f.count()
	r := f.pgm(t, "  \n", "store")
	if r.code != 2 || !strings.Contains(r.stderr, "content is empty") {
		t.Fatalf("empty stdin: exit %d, stderr %q", r.code, r.stderr)
	}
	if f.count() != n {
		t.Fatal("empty content was sent to the server")
	}
}

func TestRecall(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	e := f.seed("document", "# Title\n\nbody\twith tab \x1b[31mred", []string{"a", "b"}, 2*time.Hour)
	id := e["id"].(string)
	e["metadata"] = map[string]any{"path": "notes/a.md"}

	r := f.pgm(t, "", "recall", id)
	wantOK(t, r)
	if req := f.last(); req.Method != "GET" || req.Path != "/api/entities/"+id || req.Auth != "Bearer "+testKey {
		t.Fatalf("request %+v", req)
	}
	for _, s := range []string{"ID          " + id, "Type        document", "Tags        a, b", "Version     1",
		"(2h ago)", `Metadata    {"path":"notes/a.md"}`, "\n\n# Title\n\nbody\twith tab [31mred\n"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("recall output lacks %q:\n%s", s, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "\x1b") {
		t.Error("recall printed an escape character")
	}

	r = f.pgm(t, "", "recall", strings.ToUpper(id), "--json")
	wantOK(t, r)
	got := decodeJSON(t, r.stdout).(map[string]any)
	if got["content"] != e["content"] || got["id"] != id || got["version"] != 1.0 || got["updated_at"] == nil {
		t.Fatalf("recall --json: %s", r.stdout)
	}
	for _, k := range []string{"enrichment_attempts", "extraction_status", "owner", "source"} {
		if _, ok := got[k]; ok {
			t.Errorf("compact recall row has %q", k)
		}
	}

	r = f.pgm(t, "", "recall", id, "--json", "--full-response")
	wantOK(t, r)
	if full := decodeJSON(t, r.stdout).(map[string]any)["entity"].(map[string]any); full["enrichment_attempts"] != 0.0 {
		t.Fatalf("recall --full-response: %s", r.stdout)
	}

	r = f.pgm(t, "", "recall", id, "--toon")
	wantOK(t, r)
	if !strings.Contains(r.stdout, "tags[2]: a,b") || !strings.Contains(r.stdout, `content: "# Title\n\nbody\twith tab `+"\x1b[31mred\"") {
		t.Fatalf("recall --toon:\n%s", r.stdout)
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	a := f.seed("memory", "decided to use pgvector for vectors", []string{"decisions"}, time.Hour)
	f.seed("memory", "unrelated note", nil, time.Hour)
	b := f.seed("project", "pgvector migration\nplan", nil, time.Hour)

	r := f.pgm(t, "", "search", "pgvector", "--type", "memory", "--tags", "decisions,db", "--visibility", "work",
		"--owner", "ada", "--memory-role", "durable_memory", "--limit", "5", "--threshold", "0.4",
		"--recency-weight", "0.25", "--expand-graph", "--include-archived")
	wantOK(t, r)
	req := f.last()
	if req.Method != "POST" || req.Path != "/api/search" || req.Auth != "Bearer "+testKey {
		t.Fatalf("request %+v", req)
	}
	want := map[string]any{"query": "pgvector", "type": "memory", "tags": []any{"decisions", "db"}, "visibility": "work",
		"owner": "ada", "memory_role": "durable_memory", "limit": 5.0, "threshold": 0.4, "recency_weight": 0.25,
		"expand_graph": true, "include_archived": true}
	if d := cmp.Diff(want, body(t, req)); d != "" {
		t.Fatalf("body (-want +got):\n%s", d)
	}
	// Table: header, two results, each with one related row.
	wantLines(t, r.stdout, 5)
	lines := strings.Split(r.stdout, "\n")
	if !strings.HasPrefix(lines[0], "ID ") || !strings.Contains(lines[0], "SCORE") || !strings.Contains(lines[0], "CHUNK") {
		t.Fatalf("header: %q", lines[0])
	}
	if !strings.HasPrefix(lines[1], a["id"].(string)) || !strings.Contains(lines[1], "0.03279") ||
		!strings.Contains(lines[1], "decisions") || !strings.Contains(lines[1], "decided to use pgvector for vectors") {
		t.Fatalf("row 1: %q", lines[1])
	}
	if !strings.Contains(lines[2], "→ 00000000-0000-4000-8000-000000000777") || !strings.Contains(lines[2], "involves") {
		t.Fatalf("related row: %q", lines[2])
	}
	if !strings.Contains(lines[3], "pgvector migration plan") {
		t.Fatalf("row 2 (newline collapsed): %q", lines[3])
	}

	// Defaults: limit 10, nothing else; several words are one query.
	wantOK(t, f.pgm(t, "", "search", "pgvector", "migration"))
	if d := cmp.Diff(map[string]any{"query": "pgvector migration", "limit": 10.0}, body(t, f.last())); d != "" {
		t.Fatalf("default body (-want +got):\n%s", d)
	}

	r = f.pgm(t, "", "search", "pgvector", "--json")
	wantOK(t, r)
	wantLines(t, r.stdout, 1)
	wantRows := []any{
		map[string]any{"id": a["id"], "type": "memory", "score": 0.032787, "chunk": "decided to use pgvector for vectors", "tags": []any{"decisions"}},
		map[string]any{"id": b["id"], "type": "project", "score": 0.032258, "chunk": "pgvector migration\nplan", "tags": []any{}},
	}
	if d := cmp.Diff(wantRows, decodeJSON(t, r.stdout)); d != "" {
		t.Fatalf("--json (-want +got):\n%s", d)
	}

	r = f.pgm(t, "", "search", "pgvector", "--json", "--expand-graph")
	wantOK(t, r)
	row0 := decodeJSON(t, r.stdout).([]any)[0].(map[string]any)
	if row0["edges"] != 1.0 || len(row0["related"].([]any)) != 1 {
		t.Fatalf("--expand-graph --json row: %v", row0)
	}

	r = f.pgm(t, "", "search", "pgvector", "--json", "--full-response")
	wantOK(t, r)
	full := decodeJSON(t, r.stdout).(map[string]any)
	if len(full["results"].([]any)) != 2 || full["stats"] == nil {
		t.Fatalf("--full-response: %s", r.stdout)
	}

	r = f.pgm(t, "", "search", "pgvector", "--toon")
	wantOK(t, r)
	got, err := toon.Unmarshal([]byte(r.stdout))
	if err != nil {
		t.Fatalf("--toon does not decode: %v\n%s", err, r.stdout)
	}
	if d := cmp.Diff(wantRows, jsonOf(t, got)); d != "" {
		t.Fatalf("--toon (-want +got):\n%s\n%s", d, r.stdout)
	}

	r = f.pgm(t, "", "search", "nothing-matches")
	wantOK(t, r)
	if r.stdout != "No results.\n" {
		t.Fatalf("empty table: %q", r.stdout)
	}
	r = f.pgm(t, "", "search", "nothing-matches", "--json")
	if r.stdout != "[]\n" {
		t.Fatalf("empty --json: %q", r.stdout)
	}
}

func TestSearchDegraded(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.seed("memory", "pgvector", nil, time.Hour)
	f.degraded = []map[string]any{{"component": "vector", "reason": "embedding provider failed: 503"}}
	r := f.pgm(t, "", "search", "pgvector", "--json")
	wantOK(t, r)
	if len(decodeJSON(t, r.stdout).([]any)) != 1 {
		t.Fatalf("stdout: %s", r.stdout)
	}
	if want := "warning: search degraded: the vector branch did not run: embedding provider failed: 503\n"; r.stderr != want {
		t.Fatalf("stderr %q, want %q", r.stderr, want)
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	var ids []string
	for i := range 5 {
		e := f.seed("memory", strings.Repeat("long content ", 10)+string(rune('a'+i)), []string{"t"}, time.Duration(5-i)*time.Hour)
		ids = append(ids, e["id"].(string))
	}
	f.seed("person", "Ada", nil, 0)

	r := f.pgm(t, "", "list", "--type", "memory", "--status", "active", "--visibility", "shared", "--owner", "ada",
		"--tags", "t,u", "--memory-role", "session_context", "--limit", "2", "--offset", "1", "--include-archived")
	wantOK(t, r)
	req := f.last()
	if req.Method != "GET" || req.Path != "/api/entities" || req.Auth != "Bearer "+testKey || req.Body != nil {
		t.Fatalf("request %+v", req)
	}
	wantQuery := map[string]string{"type": "memory", "status": "active", "visibility": "shared", "owner": "ada",
		"tags": "t,u", "memory_role": "session_context", "limit": "2", "offset": "1", "include_archived": "true"}
	if d := cmp.Diff(wantQuery, req.Query); d != "" {
		t.Fatalf("query (-want +got):\n%s", d)
	}
	wantLines(t, r.stdout, 4)
	lines := strings.Split(r.stdout, "\n")
	if !strings.Contains(lines[0], "UPDATED") || !strings.HasPrefix(lines[1], ids[3]) || !strings.HasPrefix(lines[2], ids[2]) {
		t.Fatalf("table:\n%s", r.stdout)
	}
	if !strings.Contains(lines[1], "2h ago") || !strings.Contains(lines[1], "…") || strings.Contains(lines[1], "long content d") {
		t.Fatalf("row is not truncated or lacks its age: %q", lines[1])
	}
	if lines[3] != "2–3 of 5 (next page: --offset 3)" {
		t.Fatalf("footer %q", lines[3])
	}

	wantOK(t, f.pgm(t, "", "list"))
	if q := f.last().Query; len(q) != 0 {
		t.Fatalf("default query %v, want none", q)
	}

	r = f.pgm(t, "", "list", "--type", "person", "--json")
	wantOK(t, r)
	rows := decodeJSON(t, r.stdout).([]any)
	if len(rows) != 1 {
		t.Fatalf("--json: %s", r.stdout)
	}
	row := rows[0].(map[string]any)
	if row["preview"] != "Ada" || row["type"] != "person" || row["version"] != 1.0 || row["updated_at"] == nil {
		t.Fatalf("--json row: %v", row)
	}
	if _, ok := row["content"]; ok {
		t.Fatal("compact list rows carry full content")
	}

	r = f.pgm(t, "", "list", "--json", "--full-response")
	wantOK(t, r)
	full := decodeJSON(t, r.stdout).(map[string]any)
	if full["total"] != 6.0 || len(full["items"].([]any)) != 6 {
		t.Fatalf("--full-response: %s", r.stdout)
	}

	r = f.pgm(t, "", "list", "--type", "person", "--toon")
	wantOK(t, r)
	got, err := toon.Unmarshal([]byte(r.stdout))
	if err != nil {
		t.Fatalf("--toon: %v\n%s", err, r.stdout)
	}
	if d := cmp.Diff(rows, jsonOf(t, got)); d != "" {
		t.Fatalf("--toon differs from --json (-json +toon):\n%s", d)
	}

	r = f.pgm(t, "", "list", "--type", "task")
	wantOK(t, r)
	if r.stdout != "No entities (0 in total).\n" {
		t.Fatalf("empty list: %q", r.stdout)
	}
}

func TestUpdate(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	e := f.seed("memory", "old", []string{"x"}, time.Hour)
	id := e["id"].(string)

	r := f.pgm(t, "", "update", id, "--version", "1", "--content", "new text", "--tags", "a,b", "--visibility", "work",
		"--status", "done", "--owner", "ada", "--source", "cli", "--metadata", `{"k":2,"gone":null}`)
	wantOK(t, r)
	req := f.last()
	if req.Method != "PATCH" || req.Path != "/api/entities/"+id || req.Auth != "Bearer "+testKey {
		t.Fatalf("request %+v", req)
	}
	want := map[string]any{"version": 1.0, "content": "new text", "tags": []any{"a", "b"}, "visibility": "work",
		"status": "done", "owner": "ada", "source": "cli", "metadata": map[string]any{"k": 2.0, "gone": nil}}
	if d := cmp.Diff(want, body(t, req)); d != "" {
		t.Fatalf("body (-want +got):\n%s", d)
	}
	if !strings.Contains(r.stdout, "Updated memory "+id+" (now version 2, done") {
		t.Fatalf("table: %q", r.stdout)
	}

	// Only the given fields are sent; --tags "" clears the tags.
	r = f.pgm(t, "", "update", id, "--version", "2", "--tags", "", "--json")
	wantOK(t, r)
	if d := cmp.Diff(map[string]any{"version": 2.0, "tags": []any{}}, body(t, f.last())); d != "" {
		t.Fatalf("body (-want +got):\n%s", d)
	}
	if got := decodeJSON(t, r.stdout).(map[string]any); got["version"] != 3.0 || got["id"] != id {
		t.Fatalf("--json: %s", r.stdout)
	}

	// Content from stdin, with --content - or a trailing "-".
	wantOK(t, f.pgm(t, "piped\n", "update", id, "--version", "3", "--content", "-"))
	if got := f.last().Body["content"]; got != "piped" {
		t.Fatalf("--content -: %q", got)
	}
	wantOK(t, f.pgm(t, "piped 2", "update", id, "-", "--version", "4", "--full-response"))
	if got := f.last().Body["content"]; got != "piped 2" {
		t.Fatalf("trailing -: %q", got)
	}

	r = f.pgm(t, "", "update", id, "--version", "5", "--status", "active", "--toon")
	wantOK(t, r)
	if !strings.Contains(r.stdout, "version: 6\n") {
		t.Fatalf("--toon:\n%s", r.stdout)
	}
}

func TestDelete(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	id := f.seed("memory", "bye", nil, 0)["id"].(string)
	r := f.pgm(t, "", "delete", id)
	wantOK(t, r)
	if req := f.last(); req.Method != "DELETE" || req.Path != "/api/entities/"+id || req.Auth != "Bearer "+testKey {
		t.Fatalf("request %+v", req)
	}
	if r.stdout != "Deleted "+id+" (archived)\n" {
		t.Fatalf("table: %q", r.stdout)
	}
	for _, mode := range [][]string{{"--json"}, {"--json", "--full-response"}} {
		r = f.pgm(t, "", append([]string{"delete", id}, mode...)...)
		wantOK(t, r)
		if d := cmp.Diff(map[string]any{"id": id, "deleted": true}, decodeJSON(t, r.stdout)); d != "" {
			t.Fatalf("%v (-want +got):\n%s", mode, d)
		}
	}
	r = f.pgm(t, "", "delete", id, "--toon")
	wantOK(t, r)
	if r.stdout != "id: "+id+"\ndeleted: true\n" {
		t.Fatalf("--toon: %q", r.stdout)
	}
}

func TestQueue(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	r := f.pgm(t, "", "queue")
	wantOK(t, r)
	req := f.last()
	if req.Method != "GET" || req.Path != "/api/queue" || len(req.Query) != 0 || req.Auth != "Bearer "+testKey {
		t.Fatalf("request %+v", req)
	}
	lines := strings.Split(r.stdout, "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "embedding") || !strings.Contains(lines[1], "1m35s") ||
		!strings.Contains(lines[2], "disabled") {
		t.Fatalf("table:\n%s", r.stdout)
	}

	r = f.pgm(t, "", "queue", "--include-failures")
	wantOK(t, r)
	if q := f.last().Query; q["include_failures"] != "true" || q["failure_limit"] != "" {
		t.Fatalf("query %v", q)
	}
	if !strings.Contains(r.stdout, "Recent failures:") || !strings.Contains(r.stdout, "notes/a.md: provider said 500 retry later") ||
		!strings.Contains(r.stdout, "3h ago") {
		t.Fatalf("failures table:\n%s", r.stdout)
	}

	r = f.pgm(t, "", "queue", "--failure-limit", "7", "--json")
	wantOK(t, r)
	if q := f.last().Query; q["include_failures"] != "true" || q["failure_limit"] != "7" {
		t.Fatalf("query %v", q)
	}
	got := decodeJSON(t, r.stdout).(map[string]any)
	if got["extraction"] != nil || got["embedding"].(map[string]any)["pending"] != 3.0 || len(got["failures"].([]any)) != 1 {
		t.Fatalf("--json: %s", r.stdout)
	}

	r = f.pgm(t, "", "queue", "--full-response")
	wantOK(t, r)
	if _, ok := decodeJSON(t, r.stdout).(map[string]any)["extraction"]; !ok {
		t.Fatalf("--full-response: %s", r.stdout)
	}

	r = f.pgm(t, "", "queue", "--toon")
	wantOK(t, r)
	if !strings.Contains(r.stdout, "embedding:\n  pending: 3\n") || !strings.Contains(r.stdout, "extraction: null") {
		t.Fatalf("--toon:\n%s", r.stdout)
	}
}
