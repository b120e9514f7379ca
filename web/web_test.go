package web

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func newHandler(t *testing.T) *Handler {
	t.Helper()
	h, err := New(Config{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func get(t *testing.T, h http.Handler, path string) (*http.Response, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	res := rec.Result()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	h := newHandler(t)
	for _, p := range []string{"/", "/static/app.css", "/static/vendor/htmx-" + HTMXVersion + ".min.js", "/nope"} {
		res, _ := get(t, h, p)
		for k, want := range map[string]string{
			"Content-Security-Policy": CSP,
			"X-Frame-Options":         "DENY",
			"X-Content-Type-Options":  "nosniff",
		} {
			if got := res.Header.Get(k); got != want {
				t.Errorf("%s: %s = %q, want %q", p, k, got, want)
			}
		}
	}
}

func TestIndexHasNoInlineScript(t *testing.T) {
	t.Parallel()
	res, body := get(t, newHandler(t), "/")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /: %d", res.StatusCode)
	}
	if !strings.Contains(body, `<script src="/static/vendor/htmx-`+HTMXVersion+`.min.js" defer></script>`) {
		t.Errorf("index does not load the vendored htmx:\n%s", body)
	}
	if n := strings.Count(body, "<script"); n != strings.Count(body, "<script src=") {
		t.Errorf("index has an inline script:\n%s", body)
	}
}

func TestVendoredHTMXIsPinned(t *testing.T) {
	t.Parallel()
	res, body := get(t, newHandler(t), "/static/vendor/htmx-"+HTMXVersion+".min.js")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("htmx: %d", res.StatusCode)
	}
	sum := sha256.Sum256([]byte(body))
	if got, want := hex.EncodeToString(sum[:]), "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717"; got != want {
		t.Errorf("htmx sha256 = %s, want %s (update static/vendor/README.md when upgrading)", got, want)
	}
	if ct := res.Header.Get("Content-Type"); !strings.Contains(ct, "javascript") {
		t.Errorf("htmx Content-Type = %q", ct)
	}
	if res, _ := get(t, newHandler(t), "/static/vendor/htmx-LICENSE"); res.StatusCode != http.StatusOK {
		t.Errorf("htmx licence not served: %d", res.StatusCode)
	}
}

func TestVendoredCytoscapeIsPinned(t *testing.T) {
	t.Parallel()
	res, body := get(t, newHandler(t), "/static/vendor/cytoscape-"+CytoscapeVersion+".min.js")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("cytoscape: %d", res.StatusCode)
	}
	sum := sha256.Sum256([]byte(body))
	if got, want := hex.EncodeToString(sum[:]), "71fa9ebec21a7ca2c40cff6aacc30d1f6464e363662ad4b2c197e1adc770cd94"; got != want {
		t.Errorf("cytoscape sha256 = %s, want %s (update static/vendor/README.md when upgrading)", got, want)
	}
	if res, _ := get(t, newHandler(t), "/static/vendor/cytoscape-LICENSE"); res.StatusCode != http.StatusOK {
		t.Errorf("cytoscape licence not served: %d", res.StatusCode)
	}
}

func TestUnknownPathIs404(t *testing.T) {
	t.Parallel()
	if res, _ := get(t, newHandler(t), "/api-not-here"); res.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404", res.StatusCode)
	}
}
