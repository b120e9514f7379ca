package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestFetchHTML(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte("<html><body><h1>Hi</h1></body></html>"))
	}))
	defer srv.Close()
	res, err := New(Config{AllowPrivate: true}).Fetch(context.Background(), srv.URL+"/a/page.html")
	if err != nil {
		t.Fatal(err)
	}
	got := []string{res.ContentType, res.Charset, res.Filename, string(res.Body)}
	want := []string{"text/html", "utf-8", "page.html", "<html><body><h1>Hi</h1></body></html>"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("result (-want +got):\n%s", d)
	}
}

func TestLoopbackRefusedByDefault(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("request reached the server")
	}))
	defer srv.Close()
	for _, u := range []string{srv.URL, strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)} {
		_, err := New(Config{}).Fetch(context.Background(), u)
		var ae *AddrError
		if !errors.Is(err, ErrForbidden) || !errors.As(err, &ae) {
			t.Fatalf("Fetch(%s) err = %v, want ErrForbidden", u, err)
		}
	}
}

func TestRedirectToPrivateRechecked(t *testing.T) {
	t.Parallel()
	// Redirects are followed with AllowPrivate=true, but the bound applies.
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srv.URL+r.URL.Path+"x", http.StatusFound)
	}))
	defer srv.Close()
	_, err := New(Config{AllowPrivate: true, MaxRedirects: 3}).Fetch(context.Background(), srv.URL+"/")
	if !errors.Is(err, ErrRedirects) {
		t.Fatalf("err = %v, want ErrRedirects", err)
	}
	_, err = New(Config{AllowPrivate: true, MaxRedirects: -1}).Fetch(context.Background(), srv.URL+"/")
	if !errors.Is(err, ErrRedirects) {
		t.Fatalf("no-redirect err = %v, want ErrRedirects", err)
	}
}

func TestRedirectSchemeChecked(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	}))
	defer srv.Close()
	_, err := New(Config{AllowPrivate: true}).Fetch(context.Background(), srv.URL)
	if !errors.Is(err, ErrScheme) {
		t.Fatalf("err = %v, want ErrScheme", err)
	}
}

func TestSizeCap(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("a", 2000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush() // no Content-Length
		}
		w.Write([]byte(big))
	}))
	defer srv.Close()
	f := New(Config{AllowPrivate: true, MaxBytes: 1000})
	for _, p := range []string{"/", "/chunked"} {
		if _, err := f.Fetch(context.Background(), srv.URL+p); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("%s: err = %v, want ErrTooLarge", p, err)
		}
	}
}

func TestReadTimeout(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	_, err := New(Config{AllowPrivate: true, ReadTimeout: 100 * time.Millisecond}).Fetch(context.Background(), srv.URL)
	if err == nil {
		t.Fatal("want timeout error")
	}
}

func TestStatusAndScheme(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	f := New(Config{AllowPrivate: true})
	var se *StatusError
	if _, err := f.Fetch(context.Background(), srv.URL); !errors.As(err, &se) || se.Code != 404 {
		t.Fatalf("err = %v, want StatusError 404", err)
	}
	for _, u := range []string{"ftp://example.com/x", "file:///etc/passwd", "gopher://x"} {
		if _, err := f.Fetch(context.Background(), u); !errors.Is(err, ErrScheme) {
			t.Fatalf("%s: err = %v, want ErrScheme", u, err)
		}
	}
	if _, err := f.Fetch(context.Background(), "http://"); !errors.Is(err, ErrInvalidURL) {
		t.Fatalf("err = %v, want ErrInvalidURL", err)
	}
}

func TestPublic(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"8.8.8.8": true, "2606:4700::1111": true,
		"127.0.0.1": false, "10.1.2.3": false, "172.16.0.1": false, "192.168.1.1": false,
		"169.254.169.254": false, "0.0.0.0": false, "::1": false, "::": false,
		"fe80::1": false, "fc00::1": false, "224.0.0.1": false, "ff02::1": false,
		"::ffff:127.0.0.1": false, "100.64.0.1": false, "255.255.255.255": false,
	}
	for s, want := range cases {
		if got := Public(netip.MustParseAddr(s)); got != want {
			t.Errorf("Public(%s) = %v, want %v", s, got, want)
		}
	}
}

func TestContentType(t *testing.T) {
	t.Parallel()
	pdf := []byte("%PDF-1.4\n")
	cases := []struct{ header, body, want string }{
		{"", "<!DOCTYPE html><html></html>", "text/html"},
		{"application/octet-stream", string(pdf), "application/pdf"},
		{"text/plain", "<html><body>x</body></html>", "text/html"},
		{"application/epub+zip", "PK\x03\x04", "application/epub+zip"},
		{"text/markdown; charset=utf-8", "# hi", "text/markdown"},
	}
	for _, c := range cases {
		if got, _ := ContentType(c.header, []byte(c.body)); got != c.want {
			t.Errorf("ContentType(%q) = %q, want %q", c.header, got, c.want)
		}
	}
}
