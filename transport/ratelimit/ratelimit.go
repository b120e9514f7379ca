// Package ratelimit limits HTTP requests per API key and per client IP,
// and failed authentications per client IP (brute force), with token
// buckets (golang.org/x/time/rate). A refused request gets 429 with the
// RATE_LIMITED error envelope and a Retry-After header in seconds.
//
// It wraps the whole HTTP handler (REST and MCP alike): the key is the
// credential the request presents (Authorization: Bearer, or MCP's apiKey
// query parameter), identified by its SHA-256 digest; a response of 401
// counts as a failed authentication of the client IP, and while that IP's
// failure bucket is empty every request from it is refused before it
// reaches authentication. Memory is bounded: buckets that have refilled
// (and so behave like new ones) are dropped, and each map holds at most
// Config.MaxEntries buckets.
package ratelimit

import (
	"crypto/sha256"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/postgram-go/postgram/transport/apierror"
)

// Config configures a Limiter. A zero rate turns that limit off.
type Config struct {
	// PerKey is the sustained rate of requests per API key, per minute
	// (RATE_LIMIT_PER_KEY). 0: no per-key limit.
	PerKey float64
	// PerIP is the sustained rate of requests per client IP, per minute
	// (RATE_LIMIT_PER_IP). 0: no per-IP limit.
	PerIP float64
	// Burst is how many requests a key or an IP may make at once before
	// the sustained rate applies (RATE_LIMIT_BURST). Default: a tenth of
	// the rate per minute, at least 10.
	Burst int
	// AuthFailuresPerIP is how many failed authentications (401) a client
	// IP may make per minute, all at once at most (RATE_LIMIT_AUTH_FAILURES).
	// Once they are used, every request from the IP is refused until the
	// bucket refills. 0: no limit.
	AuthFailuresPerIP float64
	// TrustedProxies are the networks of reverse proxies whose
	// X-Forwarded-For header names the client (TRUSTED_PROXIES): for a
	// request from one of them the client IP is the right-most address of
	// the header that is not itself a trusted proxy. Default none: the
	// client IP is the connection's peer.
	TrustedProxies []netip.Prefix
	// MaxEntries bounds each bucket map (keys, IPs, failing IPs).
	// Default 100,000.
	MaxEntries int
	// Logger receives a warning when a map is full. Default: discard.
	Logger *slog.Logger
	// Now is the clock (tests set it). Default time.Now.
	Now func() time.Time
}

// Enabled reports whether any limit is on.
func (c Config) Enabled() bool { return c.PerKey > 0 || c.PerIP > 0 || c.AuthFailuresPerIP > 0 }

func (c *Config) defaults() {
	if c.MaxEntries <= 0 {
		c.MaxEntries = 100_000
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

func (c Config) burstFor(perMinute float64) int {
	if c.Burst > 0 {
		return c.Burst
	}
	return max(10, int(perMinute/10))
}

// Limiter is an http middleware. It is safe for concurrent use.
type Limiter struct {
	cfg   Config
	keys  *buckets[[32]byte]
	ips   *buckets[netip.Addr]
	fails *buckets[netip.Addr]
}

// New builds a Limiter.
func New(cfg Config) *Limiter {
	cfg.defaults()
	l := &Limiter{cfg: cfg}
	if cfg.PerKey > 0 {
		l.keys = newBuckets[[32]byte](perMinute(cfg.PerKey), cfg.burstFor(cfg.PerKey), cfg.MaxEntries, "key", cfg.Logger)
	}
	if cfg.PerIP > 0 {
		l.ips = newBuckets[netip.Addr](perMinute(cfg.PerIP), cfg.burstFor(cfg.PerIP), cfg.MaxEntries, "ip", cfg.Logger)
	}
	if cfg.AuthFailuresPerIP > 0 {
		l.fails = newBuckets[netip.Addr](perMinute(cfg.AuthFailuresPerIP), max(1, int(cfg.AuthFailuresPerIP)), cfg.MaxEntries, "auth failures", cfg.Logger)
	}
	return l
}

func perMinute(n float64) rate.Limit { return rate.Limit(n / 60) }

// Middleware wraps next with the limits.
func (l *Limiter) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := l.cfg.Now()
		ip := l.clientIP(r)
		if l.fails != nil {
			// Refused while the IP's failure bucket is empty; the token is
			// only taken when the request does fail.
			if wait := l.fails.waitFor(ip, now); wait > 0 {
				refuse(w, wait, "too many failed authentications from this address")
				return
			}
		}
		if l.ips != nil {
			if wait := l.ips.take(ip, now); wait > 0 {
				refuse(w, wait, "too many requests from this address")
				return
			}
		}
		var key [32]byte
		hasKey := false
		if l.keys != nil {
			if tok := credential(r); tok != "" {
				key, hasKey = sha256.Sum256([]byte(tok)), true
				if wait := l.keys.take(key, now); wait > 0 {
					refuse(w, wait, "too many requests with this API key")
					return
				}
			}
		}
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status == http.StatusUnauthorized {
			if l.fails != nil {
				l.fails.take(ip, l.cfg.Now())
			}
			if hasKey {
				// A credential that does not authenticate keeps no bucket.
				l.keys.forget(key)
			}
		}
	})
}

// Sizes returns how many buckets each map holds (keys, IPs, failing IPs).
func (l *Limiter) Sizes() (keys, ips, fails int) {
	return l.keys.size(), l.ips.size(), l.fails.size()
}

// refuse writes 429 RATE_LIMITED with Retry-After.
func refuse(w http.ResponseWriter, wait time.Duration, msg string) {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	apierror.Write(w, apierror.New(apierror.RateLimited, fmt.Sprintf("%s; retry in %d s", msg, secs),
		map[string]any{"retry_after_seconds": secs}))
}

// credential is the API key a request presents ("" when none).
func credential(r *http.Request) string {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, tok, ok := strings.Cut(strings.TrimSpace(h), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
		return ""
	}
	if r.URL.RawQuery != "" {
		return r.URL.Query().Get("apiKey")
	}
	return ""
}

// clientIP is the connection's peer, or, when the peer is a trusted
// proxy, the right-most X-Forwarded-For address that is not.
func (l *Limiter) clientIP(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	ip = ip.Unmap()
	if !l.trusted(ip) {
		return ip
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		hop = hop.Unmap()
		if !l.trusted(hop) {
			return hop
		}
	}
	return ip
}

func (l *Limiter) trusted(ip netip.Addr) bool {
	for _, p := range l.cfg.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// buckets is a bounded map of token buckets.
type buckets[K comparable] struct {
	limit rate.Limit
	burst int
	max   int
	name  string
	log   *slog.Logger

	mu sync.Mutex
	m  map[K]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

func newBuckets[K comparable](limit rate.Limit, burst, maxEntries int, name string, log *slog.Logger) *buckets[K] {
	return &buckets[K]{limit: limit, burst: burst, max: maxEntries, name: name, log: log, m: map[K]*bucket{}}
}

// get returns k's bucket, creating it (and making room) when missing.
// The caller holds b.mu.
func (b *buckets[K]) get(k K, now time.Time) *bucket {
	bk, ok := b.m[k]
	if !ok {
		if len(b.m) >= b.max {
			b.evict(now)
		}
		bk = &bucket{lim: rate.NewLimiter(b.limit, b.burst)}
		b.m[k] = bk
	}
	bk.last = now
	return bk
}

// take takes a token for k and returns 0, or, when none is left, how long
// until one is (taking nothing).
func (b *buckets[K]) take(k K, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	res := b.get(k, now).lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d
	}
	return 0
}

// waitFor returns how long until k's bucket has a token (0 when it has
// one), taking nothing. A missing bucket is full.
func (b *buckets[K]) waitFor(k K, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	bk, ok := b.m[k]
	if !ok {
		return 0
	}
	tokens := bk.lim.TokensAt(now)
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) / float64(b.limit) * float64(time.Second))
}

func (b *buckets[K]) forget(k K) {
	b.mu.Lock()
	delete(b.m, k)
	b.mu.Unlock()
}

func (b *buckets[K]) size() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}

// evict drops the buckets that have refilled (a full bucket behaves like a
// new one, so dropping it changes nothing); when that frees less than a
// tenth of the map, it also drops the least recently used buckets down to
// 90%. The caller holds b.mu.
func (b *buckets[K]) evict(now time.Time) {
	for k, bk := range b.m {
		if bk.lim.TokensAt(now) >= float64(b.burst) {
			delete(b.m, k)
		}
	}
	target := b.max - max(1, b.max/10)
	if len(b.m) <= target {
		return
	}
	b.log.Warn("rate limiter map full: dropping the least recently used buckets", "map", b.name, "entries", len(b.m))
	type aged struct {
		k    K
		last time.Time
	}
	all := make([]aged, 0, len(b.m))
	for k, bk := range b.m {
		all = append(all, aged{k, bk.last})
	}
	// A sort of at most MaxEntries items, once per tenth of the map's
	// turnover, is cheap enough.
	slices.SortFunc(all, func(a, b aged) int { return a.last.Compare(b.last) })
	for _, a := range all[:len(all)-target] {
		delete(b.m, a.k)
	}
}

// statusWriter records the status of a response. Unwrap lets
// http.ResponseController reach the underlying writer.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
