package main

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/postgram-go/postgram/transport/apierror"
)

const someID = "123e4567-e89b-12d3-a456-426614174000"

func TestUnreachable(t *testing.T) {
	t.Parallel()
	u := closedURL(t)
	r := runPGM(t, map[string]string{"PGM_API_URL": u, "PGM_API_KEY": testKey}, "", "recall", someID)
	want := "error: cannot reach the Postgram server at " + u + ": connection refused; is postgram-server running?\n"
	if r.code != apierror.ExitUnreachable || r.stderr != want || r.stdout != "" {
		t.Fatalf("exit %d stderr %q, want %d %q", r.code, r.stderr, apierror.ExitUnreachable, want)
	}
}

func TestUnreachableDNS(t *testing.T) {
	t.Parallel()
	r := runPGM(t, map[string]string{"PGM_API_URL": "http://no-such-host.invalid"}, "", "queue", "--timeout", "5s")
	if r.code != apierror.ExitUnreachable ||
		!strings.HasPrefix(r.stderr, "error: cannot reach the Postgram server at http://no-such-host.invalid: ") ||
		!strings.HasSuffix(r.stderr, "; is postgram-server running?\n") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.override = func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	r := f.pgm(t, "", "queue", "--timeout", "100ms")
	want := "error: cannot reach the Postgram server at " + f.URL + ": no response within 100ms; is postgram-server running?\n"
	if r.code != apierror.ExitUnreachable || r.stderr != want {
		t.Fatalf("exit %d stderr %q, want %q", r.code, r.stderr, want)
	}
}

func TestInterrupted(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	started := make(chan struct{})
	f.override = func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	r := runPGMContext(t, ctx, map[string]string{"PGM_API_URL": f.URL, "PGM_API_KEY": testKey}, "", "queue")
	if r.code != exitInterrupted || r.stderr != "error: interrupted\n" {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
}

func TestServerErrors(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	id := f.seed("memory", "x", nil, 0)["id"].(string)
	env := func(key string) map[string]string {
		return map[string]string{"PGM_API_URL": f.URL, "PGM_API_KEY": key, "HOME": t.TempDir()}
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		args  []string
		code  int
		parts []string
	}{
		{"401 wrong key", env("pgm-wrong"), []string{"recall", id}, 4,
			[]string{"error: unauthorized: missing or invalid API key (hint: check the API key from PGM_API_KEY; it may be wrong or revoked)"}},
		{"401 no key", env(""), []string{"recall", id}, 4,
			[]string{"error: unauthorized: missing or invalid API key (hint: no API key is configured: set PGM_API_KEY"}},
		{"403", env(readKey), []string{"store", "x"}, 5,
			[]string{"error: forbidden: the key lacks the write scope (the API key lacks the scope"}},
		{"404", env(testKey), []string{"recall", someID}, 6, []string{"error: not found: entity " + someID + " not found\n"}},
		{"409", env(testKey), []string{"update", id, "--version", "7", "--status", "done"}, 7,
			[]string{"error: conflict: version conflict on " + id + ": expected version 7, current version is 1 " +
				"(current version: 1; hint: re-read with 'pgm recall " + id + "' and retry with --version 1)\n"}},
		{"400", env(testKey), []string{"store", "x", "--visibility", "secret"}, 2,
			[]string{`error: invalid input: invalid visibility: "secret" is not one of personal, work, shared (field: visibility)` + "\n"}},
	} {
		r := runPGM(t, tc.env, "", tc.args...)
		if r.code != tc.code {
			t.Errorf("%s: exit %d, want %d (stderr %q)", tc.name, r.code, tc.code, r.stderr)
		}
		for _, p := range tc.parts {
			if !strings.Contains(r.stderr, p) {
				t.Errorf("%s: stderr %q lacks %q", tc.name, r.stderr, p)
			}
		}
		if strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("%s: want one line on stderr and nothing on stdout: %q / %q", tc.name, r.stderr, r.stdout)
		}
	}
}

func TestErrorEnvelopes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		body   string
		code   int
		stderr string
	}{
		{"validation with field", 400, `{"error":{"code":"VALIDATION","message":"invalid visibility: \"x\" is not one of personal, work, shared","details":{"field":"visibility"}}}`,
			2, `error: invalid input: invalid visibility: "x" is not one of personal, work, shared (field: visibility)`},
		{"validation without field", 400, `{"error":{"code":"VALIDATION","message":"malformed JSON"}}`, 2, "error: invalid input: malformed JSON"},
		{"401", 401, `{"error":{"code":"UNAUTHORIZED","message":"key revoked"}}`, 4, "error: unauthorized: key revoked (hint: check the API key from PGM_API_KEY; it may be wrong or revoked)"},
		{"403", 403, `{"error":{"code":"FORBIDDEN","message":"visibility work not allowed"}}`, 5, "error: forbidden: visibility work not allowed (the API key lacks the scope, entity type or visibility this needs)"},
		{"404", 404, `{"error":{"code":"NOT_FOUND","message":"entity not found"}}`, 6, "error: not found: entity not found"},
		{"409 with current", 409, `{"error":{"code":"CONFLICT","message":"stale","details":{"current":{"id":"` + someID + `","version":12}}}}`,
			7, "error: conflict: stale (current version: 12; hint: re-read with 'pgm recall " + someID + "' and retry with --version 12)"},
		{"409 without current", 409, `{"error":{"code":"CONFLICT","message":"stale"}}`, 7,
			"error: conflict: stale (hint: re-read the entity with 'pgm recall ID' and retry with its current version)"},
		{"405", 405, `{"error":{"code":"METHOD_NOT_ALLOWED","message":"GET only"}}`, 2, "error: method not allowed: GET only"},
		{"413", 413, `{"error":{"code":"PAYLOAD_TOO_LARGE","message":"body over 2 MiB"}}`, 2, "error: payload too large: body over 2 MiB"},
		{"429", 429, `{"error":{"code":"RATE_LIMITED","message":"slow down"}}`, 8, "error: rate limited: slow down (retry later)"},
		{"502", 502, `{"error":{"code":"EMBEDDING_FAILED","message":"provider 500"}}`, 9, "error: the embedding provider failed: provider 500"},
		{"503", 503, `{"error":{"code":"UNAVAILABLE","message":"store down"}}`, 3, "error: the server is unavailable: store down"},
		{"500", 500, `{"error":{"code":"INTERNAL","message":"internal error"}}`, 1, "error: server error (HTTP 500): internal error"},
		{"unknown code classified by status", 404, `{"error":{"code":"GONE_FISHING","message":"nope"}}`, 6, "error: not found: nope"},
		{"multi-line message", 400, `{"error":{"code":"VALIDATION","message":"line one\nline two\u001b[0m"}}`, 2, "error: invalid input: line one line two[0m"},
		{"proxy page 502", 502, `<html>Bad Gateway</html>`, 3,
			"error: the server is unavailable: HTTP 502 Bad Gateway (not a Postgram error response: is the API URL right, or is a proxy failing?)"},
		{"foreign 404", 404, `404 page not found`, 6,
			"error: not found: HTTP 404 Not Found (not a Postgram error response: is the API URL right, or is a proxy failing?)"},
		{"unreadable success", 200, `{"items":`, 1, "error: unexpected response from the server (HTTP 200): unexpected EOF"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			f.override = func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}
			r := f.pgm(t, "", "list")
			if r.code != tc.code || r.stderr != tc.stderr+"\n" {
				t.Fatalf("exit %d stderr %q\nwant %d %q", r.code, r.stderr, tc.code, tc.stderr+"\n")
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	for _, tc := range []struct {
		args  []string
		stdin string
		part  string
	}{
		{[]string{"bogus"}, "", `unknown command "bogus" for "pgm" (see 'pgm --help')`},
		{[]string{"list", "--bogus"}, "", "unknown flag: --bogus (see 'pgm list --help')"},
		{[]string{"list", "--limit", "ten"}, "", `invalid argument "ten" for "--limit"`},
		{[]string{"list", "--json", "--toon"}, "", "--json and --toon cannot be used together"},
		{[]string{"recall"}, "", "accepts 1 arg(s), received 0 (see 'pgm recall --help')"},
		{[]string{"recall", "not-a-uuid"}, "", `invalid entity ID "not-a-uuid"`},
		{[]string{"delete", "../../queue"}, "", `invalid entity ID "../../queue"`},
		{[]string{"store", "a", "b"}, "", "accepts at most 1 arg(s)"},
		{[]string{"store", "x", "--metadata", "[1]"}, "", "invalid --metadata: want a JSON object"},
		{[]string{"store", "x", "--metadata", `{"a":1} x`}, "", "invalid --metadata"},
		{[]string{"store", "x", "--metadata", `null`}, "", "invalid --metadata"},
		{[]string{"update", someID}, "", `required flag(s) "version" not set`},
		{[]string{"update", someID, "--version", "1"}, "", "nothing to update"},
		{[]string{"update", someID, "extra", "--version", "1"}, "", `unexpected argument "extra"`},
		{[]string{"search"}, "", "requires at least 1 arg(s)"},
		{[]string{"search", " "}, "", "the query is empty"},
		{[]string{"queue", "--failure-limit", "0"}, "", "--failure-limit must be at least 1"},
		{[]string{"list", "--limit", "-1"}, "", "must not be negative"},
		{[]string{"list", "--timeout", "-1s"}, "", "--timeout must not be negative"},
		{[]string{"list", "--api-url", "ftp://x"}, "", `invalid API URL "ftp://x" (from --api-url)`},
	} {
		n := f.count()
		r := f.pgm(t, tc.stdin, tc.args...)
		if r.code != apierror.ExitUsage || !strings.Contains(r.stderr, tc.part) || !strings.HasPrefix(r.stderr, "error: ") ||
			strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%v: exit %d stderr %q, want 2 and %q", tc.args, r.code, r.stderr, tc.part)
		}
		if f.count() != n {
			t.Errorf("%v: a request was sent", tc.args)
		}
	}
}

func TestClassifyUnknownRunError(t *testing.T) {
	t.Parallel()
	a := newApp(context.Background(), nil, nil, nil, nil)
	if _, code, usage := a.classify(&runError{err: context.DeadlineExceeded}); code != apierror.ExitInternal || usage {
		t.Fatalf("a command's own unexpected error: exit %d usage %v", code, usage)
	}
}
