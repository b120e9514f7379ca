package config

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postgram-go/postgram/internal/pgtest"
)

// lockedBuffer is a log sink safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
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

// freePort returns a loopback address nothing listens on (now).
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// proxy forwards connections on addr to target until the test ends.
func proxy(t *testing.T, addr, target string) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Errorf("proxy listen: %v", err)
		return
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
}

// TestOpenStoreWaitsForDatabase: PostgreSQL comes up 1.5 s after the
// server starts; the server retries, logging each attempt, and opens it.
func TestOpenStoreWaitsForDatabase(t *testing.T) {
	t.Parallel()
	u, err := url.Parse(pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	addr := freePort(t)
	u.Host = addr
	e, err := Parse(env(map[string]string{"DATABASE_URL": u.String(), "DATABASE_CONNECT_TIMEOUT": "30s"}))
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	time.AfterFunc(1500*time.Millisecond, func() { proxy(t, addr, target) })
	start := time.Now()
	st, err := e.OpenStoreWait(context.Background(), log)
	if err != nil {
		t.Fatalf("OpenStoreWait: %v\n%s", err, logs)
	}
	defer st.Close()
	if err := st.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), `"msg":"database not reachable; retrying"`); n < 2 || time.Since(start) < 1500*time.Millisecond {
		t.Fatalf("%d retry lines after %v:\n%s", n, time.Since(start), logs)
	}
	if !strings.Contains(logs.String(), `"attempt":2`) || !strings.Contains(logs.String(), `"msg":"database reachable"`) {
		t.Fatalf("attempts not logged:\n%s", logs)
	}
}

// TestOpenStoreWaitGivesUp: with nothing listening, the server gives up
// after DATABASE_CONNECT_TIMEOUT with an error saying so; a malformed
// DATABASE_URL fails at once.
func TestOpenStoreWaitGivesUp(t *testing.T) {
	t.Parallel()
	e, err := Parse(env(map[string]string{"DATABASE_URL": "postgres://postgres@" + freePort(t) + "/postgres?sslmode=disable",
		"DATABASE_CONNECT_TIMEOUT": "1s"}))
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	start := time.Now()
	_, err = e.OpenStoreWait(context.Background(), slog.New(slog.NewJSONHandler(logs, nil)))
	if err == nil || !strings.Contains(err.Error(), "gave up after") || time.Since(start) < time.Second || time.Since(start) > 10*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
	if !strings.Contains(logs.String(), `"attempt":1`) {
		t.Fatalf("no attempt logged:\n%s", logs)
	}
	bad, err := Parse(env(map[string]string{"DATABASE_URL": "postgres://%zz", "DATABASE_CONNECT_TIMEOUT": "30s"}))
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if _, err := bad.OpenStoreWait(context.Background(), slog.New(slog.DiscardHandler)); err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("malformed DSN: %v after %v", err, time.Since(start))
	}
}

func TestOpsVariables(t *testing.T) {
	t.Parallel()
	loop, err := Parse(env(map[string]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if !loop.LoopbackBind() || loop.RateLimit(nil).Enabled() || loop.DatabaseConnectTimeout != time.Minute || loop.TLS() {
		t.Fatalf("loopback defaults: %+v", loop)
	}
	pub, err := Parse(env(map[string]string{"POSTGRAM_BIND": "0.0.0.0", "HOME": "/home/u", "TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1",
		"DATABASE_CONNECT_TIMEOUT": "90", "TLS_CERT_FILE": "/c.pem", "TLS_KEY_FILE": "/k.pem"}))
	if err != nil {
		t.Fatal(err)
	}
	if pub.LoopbackBind() || pub.RateLimitPerKey != 1200 || pub.RateLimitPerIP != 3000 || pub.RateLimitAuthFailures != 30 ||
		len(pub.TrustedProxies) != 2 || pub.DatabaseConnectTimeout != 90*time.Second || !pub.TLS() ||
		pub.BootstrapKeyFile != "/home/u/.local/share/postgram/bootstrap-admin.key" {
		t.Fatalf("public defaults: %+v", pub)
	}
	off, err := Parse(env(map[string]string{"POSTGRAM_BIND": "0.0.0.0", "RATE_LIMIT_PER_KEY": "0", "RATE_LIMIT_PER_IP": "0", "RATE_LIMIT_AUTH_FAILURES": "0"}))
	if err != nil || off.RateLimit(nil).Enabled() {
		t.Fatalf("limits turned off: %v %+v", err, off)
	}
	for k, v := range map[string]string{"TLS_CERT_FILE": "/c.pem", "RATE_LIMIT_PER_IP": "lots", "TRUSTED_PROXIES": "proxy.local",
		"DATABASE_CONNECT_TIMEOUT": "soon", "RATE_LIMIT_BURST": "-1", "OAUTH_ENABLED": "true"} {
		if _, err := Parse(env(map[string]string{k: v})); err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v, want an error naming the variable", k, v, err)
		}
	}
}
