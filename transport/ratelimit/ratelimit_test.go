package ratelimit_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/ratelimit"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// app answers 200 to the key "good" and 401 to anything else.
var app = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer good" && r.URL.Query().Get("apiKey") != "good" {
		apierror.Write(w, apierror.New(apierror.Unauthorized, "unknown API key", nil))
		return
	}
	w.WriteHeader(http.StatusOK)
})

func send(h http.Handler, ip, key string, header map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", "/api/entities", nil)
	req.RemoteAddr = ip + ":40000"
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func wantLimited(t *testing.T, rec *httptest.ResponseRecorder, retryAfter, msg string) {
	t.Helper()
	if rec.Code != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429: %s", rec.Code, rec.Body)
	}
	if got := rec.Header().Get("Retry-After"); got != retryAfter {
		t.Errorf("Retry-After %q, want %q", got, retryAfter)
	}
	var env apierror.Envelope
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error.Code != apierror.RateLimited || !strings.Contains(env.Error.Message, msg) {
		t.Errorf("envelope %s (want RATE_LIMITED saying %q)", rec.Body, msg)
	}
}

func TestPerKey(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := ratelimit.New(ratelimit.Config{PerKey: 60, Burst: 3, Now: clk.now})
	h := l.Middleware(app)
	for i := range 3 {
		if rec := send(h, "10.0.0.1", "good", nil); rec.Code != 200 {
			t.Fatalf("request %d within the burst: %d", i, rec.Code)
		}
	}
	// 60 per minute: the next token comes in a second.
	wantLimited(t, send(h, "10.0.0.2", "good", nil), "1", "API key")
	// Another key, and requests without a key, are not affected.
	if rec := send(h, "10.0.0.1", "", nil); rec.Code != 401 {
		t.Fatalf("no key: %d", rec.Code)
	}
	clk.add(time.Second)
	if rec := send(h, "10.0.0.1", "good", nil); rec.Code != 200 {
		t.Fatalf("after the refill: %d", rec.Code)
	}
	// MCP's apiKey query parameter is the same key.
	req := httptest.NewRequest("POST", "/mcp?apiKey=good", nil)
	req.RemoteAddr = "10.0.0.3:1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	wantLimited(t, rec, "1", "API key")
}

func TestPerIP(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := ratelimit.New(ratelimit.Config{PerIP: 6, Burst: 2, Now: clk.now,
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	h := l.Middleware(app)
	send(h, "192.0.2.1", "good", nil)
	send(h, "192.0.2.1", "good", nil)
	// 6 per minute: one every 10 s.
	wantLimited(t, send(h, "192.0.2.1", "good", nil), "10", "address")
	if rec := send(h, "192.0.2.2", "good", nil); rec.Code != 200 {
		t.Fatalf("another address: %d", rec.Code)
	}
	// Behind a trusted proxy the client is the right-most untrusted
	// X-Forwarded-For address; from anyone else the header is ignored.
	xff := map[string]string{"X-Forwarded-For": "203.0.113.9, 192.0.2.1"}
	wantLimited(t, send(h, "127.0.0.1", "good", xff), "10", "address")
	if rec := send(h, "127.0.0.1", "good", map[string]string{"X-Forwarded-For": "192.0.2.7"}); rec.Code != 200 {
		t.Fatalf("proxied client: %d", rec.Code)
	}
	if rec := send(h, "198.51.100.1", "good", xff); rec.Code != 200 {
		t.Fatalf("an untrusted peer's X-Forwarded-For must be ignored: %d", rec.Code)
	}
}

func TestAuthFailures(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := ratelimit.New(ratelimit.Config{PerKey: 600, AuthFailuresPerIP: 5, Now: clk.now})
	h := l.Middleware(app)
	for i := range 5 {
		if rec := send(h, "192.0.2.5", fmt.Sprintf("guess-%d", i), nil); rec.Code != 401 {
			t.Fatalf("guess %d: %d", i, rec.Code)
		}
	}
	// The address is locked out, even with a good key; 5 per minute: the
	// next attempt in 12 s.
	wantLimited(t, send(h, "192.0.2.5", "good", nil), "12", "failed authentications")
	if rec := send(h, "192.0.2.6", "good", nil); rec.Code != 200 {
		t.Fatalf("another address: %d", rec.Code)
	}
	// Failed guesses leave no per-key buckets behind.
	if keys, _, fails := l.Sizes(); keys != 1 || fails != 1 {
		t.Fatalf("buckets: %d keys, %d failing addresses", keys, fails)
	}
	clk.add(12 * time.Second)
	if rec := send(h, "192.0.2.5", "good", nil); rec.Code != 200 {
		t.Fatalf("after the refill: %d", rec.Code)
	}
}

// TestBoundedMemory: a flood of distinct addresses and keys never grows
// the maps past MaxEntries, and refilled buckets are dropped first.
func TestBoundedMemory(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	l := ratelimit.New(ratelimit.Config{PerIP: 60, PerKey: 60, AuthFailuresPerIP: 10, MaxEntries: 1000, Now: clk.now})
	h := l.Middleware(app)
	for i := range 20_000 {
		ip := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}).String()
		send(h, ip, fmt.Sprintf("key-%d", i), nil)
		if i%1000 == 0 {
			clk.add(time.Millisecond)
		}
	}
	keys, ips, fails := l.Sizes()
	if keys > 1000 || ips > 1000 || fails > 1000 {
		t.Fatalf("maps grew past MaxEntries: %d keys, %d ips, %d failing", keys, ips, fails)
	}
	// An hour later every bucket has refilled: new clients replace them.
	clk.add(time.Hour)
	for i := range 2000 {
		send(h, netip.AddrFrom4([4]byte{172, 16, byte(i >> 8), byte(i)}).String(), "good", nil)
	}
	if _, ips, _ := l.Sizes(); ips > 1000 {
		t.Fatalf("%d ips", ips)
	}
}

func TestOff(t *testing.T) {
	t.Parallel()
	if (ratelimit.Config{}).Enabled() {
		t.Fatal("a zero config must be off")
	}
	h := ratelimit.New(ratelimit.Config{}).Middleware(app)
	for range 1000 {
		if rec := send(h, "192.0.2.1", "good", nil); rec.Code != 200 {
			t.Fatalf("limits off: %d", rec.Code)
		}
	}
}
