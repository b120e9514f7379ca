// Package fetch downloads a document from an http or https URL for ingestion
// without letting the caller reach private networks (SSRF-safe).
//
// The address check runs in the dialer's Control hook, i.e. after DNS
// resolution and for every connection, including each redirect hop, so a
// public name that resolves to 127.0.0.1 or a redirect to 10.0.0.1 is refused.
package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Defaults used when the corresponding Config field is zero.
const (
	DefaultMaxBytes       = 64 << 20 // 64 MiB
	DefaultConnectTimeout = 10 * time.Second
	DefaultReadTimeout    = 60 * time.Second
	DefaultMaxRedirects   = 5
	DefaultUserAgent      = "postgram-ingest/1"
)

// Config configures a Fetcher. The zero value is usable.
type Config struct {
	// MaxBytes caps the body size; larger bodies fail with ErrTooLarge.
	// Default DefaultMaxBytes (64 MiB).
	MaxBytes int64
	// ConnectTimeout bounds dialing and the TLS handshake. Default 10s.
	ConnectTimeout time.Duration
	// ReadTimeout bounds the whole request from first byte sent to last
	// byte read. Default 60s.
	ReadTimeout time.Duration
	// MaxRedirects bounds the number of redirects followed. Default 5;
	// a negative value disables redirects.
	MaxRedirects int
	// AllowPrivate permits loopback, private, link-local, unspecified and
	// multicast targets. Off by default; tests against httptest need it.
	AllowPrivate bool
	// UserAgent is sent with every request. Default DefaultUserAgent.
	UserAgent string
}

// Errors returned by Fetch, matched with errors.Is.
var (
	ErrScheme     = errors.New("fetch: only http and https URLs are allowed")
	ErrForbidden  = errors.New("fetch: target address is not allowed")
	ErrTooLarge   = errors.New("fetch: body exceeds the size limit")
	ErrRedirects  = errors.New("fetch: too many redirects")
	ErrStatus     = errors.New("fetch: unexpected HTTP status")
	ErrInvalidURL = errors.New("fetch: invalid URL")
)

// AddrError reports a refused target address.
type AddrError struct {
	Host string
	Addr netip.Addr
}

func (e *AddrError) Error() string {
	return fmt.Sprintf("fetch: refusing to connect to %s (%s): private, loopback, link-local, unspecified or multicast address", e.Host, e.Addr)
}

// Unwrap lets errors.Is(err, ErrForbidden) match.
func (e *AddrError) Unwrap() error { return ErrForbidden }

// StatusError reports a non-2xx response.
type StatusError struct {
	URL  string
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("fetch: %s answered HTTP %d", e.URL, e.Code)
}

// Unwrap lets errors.Is(err, ErrStatus) match.
func (e *StatusError) Unwrap() error { return ErrStatus }

// Result is a fetched document.
type Result struct {
	URL         string // final URL after redirects
	Body        []byte
	ContentType string // media type without parameters, e.g. "text/html"
	Charset     string // charset parameter when given or sniffed
	Filename    string // from Content-Disposition or the URL path, may be empty
	Status      int
}

// Fetcher downloads URLs. It is safe for concurrent use.
type Fetcher struct {
	cfg    Config
	client *http.Client
}

// New returns a Fetcher with cfg's defaults applied.
func New(cfg Config) *Fetcher {
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.ReadTimeout <= 0 {
		cfg.ReadTimeout = DefaultReadTimeout
	}
	if cfg.MaxRedirects == 0 {
		cfg.MaxRedirects = DefaultMaxRedirects
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = DefaultUserAgent
	}
	f := &Fetcher{cfg: cfg}
	dialer := &net.Dialer{Timeout: cfg.ConnectTimeout, Control: f.control}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would bypass the address check
		DialContext:           dialer.DialContext,
		TLSHandshakeTimeout:   cfg.ConnectTimeout,
		ResponseHeaderTimeout: cfg.ReadTimeout,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
	}
	f.client = &http.Client{
		Transport: tr,
		Timeout:   cfg.ReadTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if cfg.MaxRedirects < 0 || len(via) > cfg.MaxRedirects {
				return fmt.Errorf("%w (limit %d)", ErrRedirects, max(cfg.MaxRedirects, 0))
			}
			return checkScheme(req.URL)
		},
	}
	return f
}

// control runs after DNS resolution for every dialed address.
func (f *Fetcher) control(network, address string, _ syscall.RawConn) error {
	if f.cfg.AllowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse dialed address %q", ErrForbidden, address)
	}
	if !Public(ap.Addr()) {
		return &AddrError{Host: address, Addr: ap.Addr()}
	}
	return nil
}

// Public reports whether addr is a globally routable unicast address that
// Fetch may connect to by default.
func Public(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsValid() || addr.IsLoopback() || addr.IsPrivate() || addr.IsUnspecified() ||
		addr.IsLinkLocalUnicast() || addr.IsLinkLocalMulticast() || addr.IsInterfaceLocalMulticast() ||
		addr.IsMulticast() {
		return false
	}
	for _, p := range blocked {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// blocked lists further non-public ranges not covered by netip's predicates.
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),     // "this" network
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),  // IETF protocol assignments
	netip.MustParsePrefix("198.18.0.0/15"), // benchmarking
	netip.MustParsePrefix("240.0.0.0/4"),   // reserved, broadcast
	netip.MustParsePrefix("64:ff9b::/96"),  // NAT64 can reach IPv4 private space
	netip.MustParsePrefix("2001:db8::/32"), // documentation
}

func checkScheme(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: got scheme %q in %q", ErrScheme, u.Scheme, u.Redacted())
	}
	if u.Host == "" {
		return fmt.Errorf("%w: %q has no host", ErrInvalidURL, u.Redacted())
	}
	return nil
}

// Fetch downloads rawURL and returns its body and sniffed content type.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string) (*Result, error) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	if err := checkScheme(u); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	req.Header.Set("User-Agent", f.cfg.UserAgent)
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, unwrapURLError(err)
	}
	defer resp.Body.Close()
	final := resp.Request.URL.String()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &StatusError{URL: final, Code: resp.StatusCode}
	}
	if resp.ContentLength > f.cfg.MaxBytes {
		return nil, fmt.Errorf("%w: Content-Length %d > %d bytes", ErrTooLarge, resp.ContentLength, f.cfg.MaxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.cfg.MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch: reading body of %s: %w", final, err)
	}
	if int64(len(body)) > f.cfg.MaxBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, f.cfg.MaxBytes)
	}
	ct, cs := ContentType(resp.Header.Get("Content-Type"), body)
	return &Result{
		URL:         final,
		Body:        body,
		ContentType: ct,
		Charset:     cs,
		Filename:    filename(resp),
		Status:      resp.StatusCode,
	}, nil
}

// unwrapURLError keeps the typed cause (AddrError, ErrRedirects...) visible
// while naming the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("fetch %s: %w", ue.URL, ue.Err)
	}
	return fmt.Errorf("fetch: %w", err)
}

// ContentType combines the declared header with http.DetectContentType.
// A specific declared type wins over a generic sniff; a generic or missing
// declaration ("application/octet-stream", "text/plain") defers to sniffing.
func ContentType(header string, body []byte) (mediaType, charset string) {
	sniffed, sparams, _ := mime.ParseMediaType(http.DetectContentType(body))
	declared, dparams, err := mime.ParseMediaType(header)
	if err != nil || declared == "" || declared == "application/octet-stream" ||
		(declared == "text/plain" && sniffed != "text/plain") {
		return sniffed, sparams["charset"]
	}
	cs := dparams["charset"]
	if cs == "" && sniffed == declared {
		cs = sparams["charset"]
	}
	return declared, cs
}

func filename(resp *http.Response) string {
	if cd := resp.Header.Get("Content-Disposition"); cd != "" {
		if _, p, err := mime.ParseMediaType(cd); err == nil && p["filename"] != "" {
			return p["filename"]
		}
	}
	p := resp.Request.URL.Path
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		p = p[i+1:]
	}
	return p
}
