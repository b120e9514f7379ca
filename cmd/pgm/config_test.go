package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeRC writes ~/.pgmrc in a new temporary home and returns the home.
func writeRC(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	home := t.TempDir()
	path := filepath.Join(home, ".pgmrc")
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil { // umask may have narrowed it
		t.Fatal(err)
	}
	return home
}

func rcJSON(url, key string) string {
	return `{"api_url": "` + url + `", "api_key": "` + key + `"}`
}

func TestConfigPrecedence(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	dead := closedURL(t)
	for _, tc := range []struct {
		name  string
		rc    string // "" for none
		env   map[string]string
		flags []string
	}{
		{"rc only", rcJSON(f.URL, testKey), nil, nil},
		{"env over rc", rcJSON(dead, "pgm-wrong"), map[string]string{"PGM_API_URL": f.URL, "PGM_API_KEY": testKey}, nil},
		{"flags over env and rc", rcJSON(dead, "pgm-wrong"), map[string]string{"PGM_API_URL": dead, "PGM_API_KEY": "pgm-wrong"},
			[]string{"--api-url", f.URL, "--api-key", testKey}},
		{"per setting: env URL, rc key", rcJSON(dead, testKey), map[string]string{"PGM_API_URL": f.URL}, nil},
		{"per setting: flag key, rc URL", rcJSON(f.URL, "pgm-wrong"), nil, []string{"--api-key", testKey}},
		{"rc not read when flags and env suffice", `{not json`, map[string]string{"PGM_API_URL": f.URL},
			[]string{"--api-key", testKey}},
		{"trailing slash", "", map[string]string{"PGM_API_URL": f.URL + "/", "PGM_API_KEY": testKey}, nil},
	} {
		env := map[string]string{}
		for k, v := range tc.env {
			env[k] = v
		}
		if tc.rc != "" {
			env["HOME"] = writeRC(t, tc.rc, 0o600)
		} else {
			env["HOME"] = t.TempDir()
		}
		r := runPGM(t, env, "", append([]string{"queue"}, tc.flags...)...)
		if r.code != 0 || r.stderr != "" {
			t.Errorf("%s: exit %d stderr %q", tc.name, r.code, r.stderr)
			continue
		}
		if req := f.last(); req.Auth != "Bearer "+testKey || req.Path != "/api/queue" {
			t.Errorf("%s: request %+v", tc.name, req)
		}
	}
}

func TestConfigRCWarnings(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	home := writeRC(t, rcJSON(f.URL, testKey), 0o644)
	r := runPGM(t, map[string]string{"HOME": home}, "", "queue")
	if r.code != 0 {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	path := filepath.Join(home, ".pgmrc")
	want := "warning: " + path + " is readable by group or others (mode 0644) and may hold an API key; run: chmod 600 " + path + "\n"
	if r.stderr != want {
		t.Fatalf("stderr %q, want %q", r.stderr, want)
	}

	home = writeRC(t, `{"api_url": 3}`, 0o600)
	r = runPGM(t, map[string]string{"HOME": home}, "", "queue")
	if r.code != 2 || !strings.Contains(r.stderr, "error: cannot read "+filepath.Join(home, ".pgmrc")+": not valid JSON") {
		t.Fatalf("malformed rc: exit %d stderr %q", r.code, r.stderr)
	}

	home = writeRC(t, rcJSON("localhost:3100", testKey), 0o600)
	r = runPGM(t, map[string]string{"HOME": home}, "", "queue")
	if r.code != 2 || !strings.Contains(r.stderr, `invalid API URL "localhost:3100" (from `+filepath.Join(home, ".pgmrc")+`)`) {
		t.Fatalf("bad URL in rc: exit %d stderr %q", r.code, r.stderr)
	}
}

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	a := newApp(context.Background(), nil, nil, nil, envOf(map[string]string{"HOME": t.TempDir()}))
	c, err := a.config()
	if err != nil {
		t.Fatal(err)
	}
	if c.URL != "http://127.0.0.1:3100" || c.Key != "" || c.KeyFrom != "" {
		t.Fatalf("defaults: %+v", c)
	}
	// No HOME at all: no ~/.pgmrc, still the defaults.
	a = newApp(context.Background(), nil, nil, nil, nil)
	if c, err = a.config(); err != nil || c.URL != defaultAPIURL {
		t.Fatalf("no HOME: %+v %v", c, err)
	}
}
