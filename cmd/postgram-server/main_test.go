package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/web"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs the server with vars (plus a fresh data directory and port
// 0) until the test ends, and returns its address and log.
func start(t *testing.T, vars map[string]string) (string, *lockedBuffer) {
	t.Helper()
	env := map[string]string{"POSTGRAM_DATA_DIR": t.TempDir(), "PORT": "0", "LOG_LEVEL": "info"}
	for k, v := range vars {
		env[k] = v
	}
	logs := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- run(ctx, func(k string) string { return env[k] }, logs, ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case addr := <-ready:
		_, port, _ := net.SplitHostPort(addr)
		return net.JoinHostPort("127.0.0.1", port), logs
	case err := <-done:
		t.Fatalf("run: %v\n%s", err, logs)
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not start:\n%s", logs)
	}
	return "", nil
}

// writePair writes a self-signed certificate for 127.0.0.1.
func writePair(t *testing.T, certFile, keyFile string, serial int64) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "postgram test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	// Written to temporary names and renamed, as certificate tools do.
	for path, block := range map[string]*pem.Block{certFile: {Type: "CERTIFICATE", Bytes: der}, keyFile: {Type: "EC PRIVATE KEY", Bytes: kder}} {
		if err := os.WriteFile(path+".tmp", pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func getJSON(t *testing.T, c *http.Client, url string) (*http.Response, map[string]any) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &m)
	return resp, m
}

// TestTLS: with TLS_CERT_FILE and TLS_KEY_FILE the server speaks HTTPS
// only, and serves a renewed certificate without a restart.
func TestTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	first := writePair(t, certFile, keyFile, 1)
	addr, logs := start(t, map[string]string{"TLS_CERT_FILE": certFile, "TLS_KEY_FILE": keyFile})
	roots := x509.NewCertPool()
	roots.AddCert(first)
	client := func() *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	}
	resp, h := getJSON(t, client(), "https://"+addr+"/health")
	if resp.StatusCode != 200 || resp.TLS == nil || resp.TLS.PeerCertificates[0].SerialNumber.Int64() != 1 || h["warnings"] != nil {
		t.Fatalf("https health: %d %v", resp.StatusCode, h)
	}
	if !strings.Contains(logs.String(), `"tls":true`) || strings.Contains(logs.String(), "INSECURE") {
		t.Fatalf("log:\n%s", logs)
	}
	// Plain HTTP is not served.
	if resp, err := http.Get("http://" + addr + "/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == 200 {
			t.Fatal("plain HTTP answered 200 on a TLS server")
		}
	}
	// Renewal: new files, picked up within a second or so.
	second := writePair(t, certFile, keyFile, 2)
	roots.AddCert(second)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, _ := getJSON(t, client(), "https://"+addr+"/health")
		if resp.TLS.PeerCertificates[0].SerialNumber.Int64() == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the renewed certificate was not served:\n%s", logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "TLS certificate reloaded") {
		t.Errorf("reload not logged:\n%s", logs)
	}
}

// TestPublicBind: plain HTTP on a non-loopback address warns loudly at
// start and in /health, and rate limits are on by default there: failed
// authentications from one address are cut off with 429 and Retry-After.
func TestPublicBind(t *testing.T) {
	t.Parallel()
	addr, logs := start(t, map[string]string{"POSTGRAM_BIND": "0.0.0.0", "RATE_LIMIT_AUTH_FAILURES": "5"})
	if !strings.Contains(logs.String(), `"level":"ERROR","msg":"INSECURE: plain HTTP on the non-loopback address 0.0.0.0`) {
		t.Fatalf("no loud warning:\n%s", logs)
	}
	resp, h := getJSON(t, http.DefaultClient, "http://"+addr+"/health")
	if resp.StatusCode != 200 || !strings.Contains(fmt.Sprint(h["warnings"]), "plain HTTP") {
		t.Fatalf("health: %v", h)
	}
	codes := map[int]int{}
	var retry string
	for i := range 8 {
		req, _ := http.NewRequest("GET", "http://"+addr+"/api/entities", nil)
		req.Header.Set("Authorization", fmt.Sprintf("Bearer pgm-%043d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes[resp.StatusCode]++
		if resp.StatusCode == 429 {
			retry = resp.Header.Get("Retry-After")
		}
	}
	if codes[401] != 5 || codes[429] != 3 || retry == "" {
		t.Fatalf("statuses %v, Retry-After %q", codes, retry)
	}
}

// TestBootstrapKeyFile: stderr is not a terminal, so the first admin key
// goes to a 0600 file and never into the JSON log.
func TestBootstrapKeyFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "sub", "admin.key")
	addr, logs := start(t, map[string]string{"BOOTSTRAP_KEY_FILE": file})
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v\n%s", err, logs)
	}
	key := strings.TrimSpace(string(b))
	if fi, _ := os.Stat(file); !strings.HasPrefix(key, "pgm-") || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file %q mode %v", key, fi.Mode().Perm())
	}
	if strings.Contains(logs.String(), key) || !strings.Contains(logs.String(), file) {
		t.Fatalf("the log must name the file and never hold the key:\n%s", logs)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/entities", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the bootstrap key: %d", resp.StatusCode)
	}
}

// TestWebMountedAtRoot: the web app answers at / with its security
// headers, and /health, /api and /mcp keep their own handlers.
func TestWebMountedAtRoot(t *testing.T) {
	t.Parallel()
	addr, logs := start(t, nil)
	check := func(path string, status int, ctype string) *http.Response {
		t.Helper()
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != status || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) {
			t.Fatalf("GET %s: %d %q, want %d %q\n%s", path, resp.StatusCode, resp.Header.Get("Content-Type"), status, ctype, logs)
		}
		return resp
	}
	if resp := check("/", 200, "text/html"); resp.Header.Get("Content-Security-Policy") != web.CSP || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("/ security headers: %v", resp.Header)
	}
	check("/setup", 200, "text/html") // a new store: onboarding (the first visit to / is sent here)
	check("/static/vendor/htmx-"+web.HTMXVersion+".min.js", 200, "text/javascript")
	check("/health", 200, "application/json")
	check("/api/entities", 401, "application/json")
	if resp, err := http.Post("http://"+addr+"/mcp", "application/json", strings.NewReader(`{}`)); err != nil {
		t.Fatal(err)
	} else if resp.Body.Close(); resp.StatusCode != 401 {
		t.Errorf("POST /mcp without a key: %d, want 401", resp.StatusCode)
	}
}

// TestMemoryIndexWarmsAtStart: with DATABASE_MEMORY_INDEX the server loads
// each workspace's in-memory index at start, before any search.
func TestMemoryIndexWarmsAtStart(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	_, logs := start(t, map[string]string{"DATABASE_URL": url, "DATABASE_MEMORY_INDEX": "true", "EMBEDDING_PROVIDER": "deterministic"})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "in-memory index loaded") {
		if time.Now().After(deadline) {
			t.Fatalf("no in-memory index loaded at start:\n%s", logs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), `"workspace":"default"`) {
		t.Errorf("the load's log names no workspace:\n%s", logs)
	}
}
