// Package oauth is Postgram's OAuth 2.1 authorization server for remote
// MCP clients (a hosted assistant's "custom connector"): instead of a
// pasted API key, the client discovers the server, registers itself,
// sends the person to a consent page and receives short-lived tokens.
//
//   - Discovery: protected-resource metadata (RFC 9728) at
//     /.well-known/oauth-protected-resource (and its /mcp suffix form) and
//     authorization-server metadata (RFC 8414) at
//     /.well-known/oauth-authorization-server.
//   - Dynamic client registration (RFC 7591) at /oauth/register: public
//     clients only (no secret; PKCE protects the code), redirect URIs
//     https or http on a loopback host, matched exactly.
//   - Authorization code with PKCE S256 only (plain is refused). The
//     consent page is the web app's (package web): the signed-in person
//     sees the client and picks the rights it gets, never more than their
//     own. Codes live two minutes and are single-use; a reused code
//     revokes what was issued from it.
//   - Tokens at /oauth/token: an access token is an API key of the
//     workspace that expires after AccessTTL (one hour), so it maps to a
//     Principal exactly like a pasted key and is audited the same way;
//     refresh tokens rotate on every use, and presenting a used one
//     revokes the whole grant (replay detection). Revocation (RFC 7009)
//     at /oauth/revoke.
//
// State (clients, codes, grants, refresh tokens) is kept in the store's
// OAuth records (driver.OAuthStorage); codes and refresh tokens only as
// SHA-256 digests. Static API keys keep working beside OAuth.
package oauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// Record kinds in driver.OAuthStorage.
const (
	kindClient  = "client"
	kindCode    = "code"
	kindGrant   = "grant"
	kindRefresh = "refresh"
)

// Defaults of Config.
const (
	DefaultAccessTTL  = time.Hour
	DefaultRefreshTTL = 30 * 24 * time.Hour
	DefaultCodeTTL    = 2 * time.Minute
)

// Config configures a Server. Zero durations take the defaults.
type Config struct {
	// Store keeps the OAuth records; Admin creates and revokes the API
	// keys that serve as access tokens. Both required.
	Store driver.OAuthStorage
	Admin *postgram.Admin
	// Issuer is the server's public base URL (PUBLIC_BASE_URL), e.g.
	// https://notes.example.com: the issuer, the base of every endpoint
	// and, with "/mcp", the protected resource. Required.
	Issuer string
	// AccessTTL is an access token's lifetime (default 1h), RefreshTTL a
	// refresh token's (default 30 days, renewed at each rotation), CodeTTL
	// an authorization code's (default 2 minutes).
	AccessTTL, RefreshTTL, CodeTTL time.Duration
	// Logger receives failures the client is not told about. Default:
	// slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default: time.Now.
	Now func() time.Time
}

// Server is the authorization server. Create it with New.
type Server struct {
	store  driver.OAuthStorage
	admin  *postgram.Admin
	issuer string
	access time.Duration
	renew  time.Duration
	code   time.Duration
	log    *slog.Logger
	now    func() time.Time
}

// New checks cfg and returns the server.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Admin == nil {
		return nil, errors.New("oauth: Store and Admin are required")
	}
	iss := strings.TrimRight(strings.TrimSpace(cfg.Issuer), "/")
	if err := checkIssuer(iss); err != nil {
		return nil, err
	}
	s := &Server{store: cfg.Store, admin: cfg.Admin, issuer: iss, access: or(cfg.AccessTTL, DefaultAccessTTL),
		renew: or(cfg.RefreshTTL, DefaultRefreshTTL), code: or(cfg.CodeTTL, DefaultCodeTTL), log: cfg.Logger, now: cfg.Now}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s, nil
}

func or(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Issuer is the issuer URL; Resource the protected resource (the MCP
// endpoint); ResourceMetadataURL where its metadata is, for the
// WWW-Authenticate header of a 401 from /mcp.
func (s *Server) Issuer() string   { return s.issuer }
func (s *Server) Resource() string { return s.issuer + "/mcp" }
func (s *Server) ResourceMetadataURL() string {
	return s.issuer + "/.well-known/oauth-protected-resource/mcp"
}

// Rights are what a grant lets its client do: the scopes, and the entity
// types and visibilities it may see and write (empty: all), as on an API
// key.
type Rights struct {
	Scopes       []postgram.Scope      `json:"scopes"`
	Types        []postgram.EntityType `json:"types,omitempty"`
	Visibilities []postgram.Visibility `json:"visibilities,omitempty"`
}

// Within reports whether r asks for nothing beyond p (a person's own
// rights): every scope of r is p's, and r is at least as narrow in types
// and visibilities.
func (r Rights) Within(p postgram.Principal) bool {
	for _, sc := range r.Scopes {
		if !p.Has(sc) {
			return false
		}
	}
	return narrower(r.Types, p.AllowedTypes) && narrower(r.Visibilities, p.AllowedVisibilities)
}

// narrower: want (empty = all) is a subset of have (empty = all).
func narrower[T comparable](want, have []T) bool {
	if len(have) == 0 {
		return true
	}
	if len(want) == 0 {
		return false
	}
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// Client is a registered client.
type Client struct {
	ID           string    `json:"client_id"`
	Name         string    `json:"client_name"`
	RedirectURIs []string  `json:"redirect_uris"`
	CreatedAt    time.Time `json:"created_at"`
	Revoked      bool      `json:"revoked,omitempty"`
}

// Grant is a person's consent to a client: the rights, the API key that
// is the current access token, and when it was last refreshed.
type Grant struct {
	ID          string    `json:"id"`
	ClientID    string    `json:"client_id"`
	ClientName  string    `json:"client_name"`
	UserID      string    `json:"user_id"`
	UserName    string    `json:"user_name"`
	Rights      Rights    `json:"rights"`
	KeyID       string    `json:"key_id"`
	CreatedAt   time.Time `json:"created_at"`
	RefreshedAt time.Time `json:"refreshed_at"`
	Revoked     bool      `json:"revoked,omitempty"`
	version     int64
}

// code is a stored authorization code (keyed by its digest).
type code struct {
	ClientID    string `json:"client_id"`
	RedirectURI string `json:"redirect_uri"`
	Challenge   string `json:"code_challenge"`
	UserID      string `json:"user_id"`
	UserName    string `json:"user_name"`
	Rights      Rights `json:"rights"`
	Used        bool   `json:"used,omitempty"`
	GrantID     string `json:"grant_id,omitempty"`
}

// refresh is a stored refresh token (keyed by its digest).
type refresh struct {
	GrantID string `json:"grant_id"`
	Used    bool   `json:"used,omitempty"`
}

// secret returns a new random token (256 bits, base64url).
func secret() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("oauth: no randomness: %v", err)) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// digest is the record ID of a code or refresh token.
func digest(tok string) string {
	h := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(h[:])
}

func (s *Server) put(ctx context.Context, kind, id string, doc any, exp *time.Time) (*driver.OAuthRecord, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("oauth: encode %s: %w", kind, err)
	}
	r := &driver.OAuthRecord{Kind: kind, ID: id, Data: b, ExpiresAt: exp}
	if err := s.store.PutOAuthRecord(ctx, r); err != nil {
		return nil, err
	}
	return r, nil
}

// get reads a record into doc; expired records are ErrNotFound.
func (s *Server) get(ctx context.Context, kind, id string, doc any) (*driver.OAuthRecord, error) {
	r, err := s.store.OAuthRecord(ctx, kind, id)
	if err != nil {
		return nil, err
	}
	if r.ExpiresAt != nil && !s.now().Before(*r.ExpiresAt) {
		return nil, fmt.Errorf("oauth %s expired: %w", kind, driver.ErrNotFound)
	}
	if err := json.Unmarshal(r.Data, doc); err != nil {
		return nil, fmt.Errorf("oauth: decode %s %s: %w", kind, id, err)
	}
	return r, nil
}

// update writes doc back into r (compare-and-set on r.Version).
func (s *Server) update(ctx context.Context, r *driver.OAuthRecord, doc any) error {
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("oauth: encode %s: %w", r.Kind, err)
	}
	r.Data = b
	return s.store.UpdateOAuthRecord(ctx, r)
}

// client returns a registered, unrevoked client.
func (s *Server) client(ctx context.Context, id string) (*Client, error) {
	var c Client
	if id == "" {
		return nil, driver.ErrNotFound
	}
	if _, err := s.get(ctx, kindClient, id, &c); err != nil {
		return nil, err
	}
	if c.Revoked {
		return nil, fmt.Errorf("client revoked: %w", driver.ErrNotFound)
	}
	return &c, nil
}

func (s *Server) grant(ctx context.Context, id string) (*Grant, error) {
	var g Grant
	r, err := s.get(ctx, kindGrant, id, &g)
	if err != nil {
		return nil, err
	}
	g.version = r.Version
	return &g, nil
}

// Clients lists the registered clients, oldest first.
func (s *Server) Clients(ctx context.Context) ([]Client, error) {
	recs, err := s.store.OAuthRecords(ctx, kindClient)
	if err != nil {
		return nil, err
	}
	out := make([]Client, 0, len(recs))
	for _, r := range recs {
		var c Client
		if err := json.Unmarshal(r.Data, &c); err != nil {
			return nil, fmt.Errorf("oauth: decode client %s: %w", r.ID, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Grants lists the grants, oldest first (revoked ones included).
func (s *Server) Grants(ctx context.Context) ([]Grant, error) {
	recs, err := s.store.OAuthRecords(ctx, kindGrant)
	if err != nil {
		return nil, err
	}
	out := make([]Grant, 0, len(recs))
	for _, r := range recs {
		var g Grant
		if err := json.Unmarshal(r.Data, &g); err != nil {
			return nil, fmt.Errorf("oauth: decode grant %s: %w", r.ID, err)
		}
		g.version = r.Version
		out = append(out, g)
	}
	return out, nil
}

// RevokeGrant ends a grant: its refresh tokens stop working and its
// current access token (API key) is revoked. Revoking a revoked grant is
// not an error.
func (s *Server) RevokeGrant(ctx context.Context, id string) error {
	for range 5 {
		var g Grant
		r, err := s.store.OAuthRecord(ctx, kindGrant, id)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(r.Data, &g); err != nil {
			return fmt.Errorf("oauth: decode grant %s: %w", id, err)
		}
		if !g.Revoked {
			g.Revoked = true
			if err := s.update(ctx, r, &g); errors.Is(err, driver.ErrConflict) {
				continue // refreshed meanwhile: revoke the new key too
			} else if err != nil {
				return err
			}
		}
		return s.revokeKey(ctx, g.KeyID)
	}
	return fmt.Errorf("oauth: grant %s kept changing while being revoked: %w", id, driver.ErrConflict)
}

// revokeKey revokes an access token's key; one already gone or revoked
// is fine.
func (s *Server) revokeKey(ctx context.Context, keyID string) error {
	id, err := postgram.ParseID("key_id", keyID)
	if err != nil {
		return nil
	}
	if err := s.admin.RevokeKey(ctx, id); err != nil && !errors.Is(err, postgram.ErrNotFound) {
		return fmt.Errorf("oauth: revoke access token: %w", err)
	}
	return nil
}

// RevokeClient revokes a client and every grant it holds; it cannot be
// used again (it may register anew).
func (s *Server) RevokeClient(ctx context.Context, id string) error {
	var c Client
	r, err := s.store.OAuthRecord(ctx, kindClient, id)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(r.Data, &c); err != nil {
		return fmt.Errorf("oauth: decode client %s: %w", id, err)
	}
	if !c.Revoked {
		c.Revoked = true
		if err := s.update(ctx, r, &c); err != nil {
			return err
		}
	}
	gs, err := s.Grants(ctx)
	if err != nil {
		return err
	}
	for _, g := range gs {
		if g.ClientID == id && !g.Revoked {
			if err := s.RevokeGrant(ctx, g.ID); err != nil {
				return err
			}
		}
	}
	return nil
}

// Sweep removes expired codes and refresh tokens.
func (s *Server) Sweep(ctx context.Context) (int, error) {
	return s.store.DeleteExpiredOAuthRecords(ctx, s.now())
}
