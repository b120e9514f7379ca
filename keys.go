package postgram

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/validate"
)

// keySecretBytes is the randomness in a key.
const keySecretBytes = 32

// keyExpired reports whether k has expired at now.
func keyExpired(k *APIKey, now time.Time) bool {
	return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)
}

// KeyPrincipal returns the principal a key authenticates as.
func KeyPrincipal(k *APIKey) Principal {
	return Principal{KeyID: k.ID.String(), ClientID: k.ClientID, Scopes: k.Scopes,
		AllowedTypes: k.AllowedTypes, AllowedVisibilities: k.AllowedVisibilities}
}

// KeySpec is what CreateKey accepts.
type KeySpec struct {
	Name string `json:"name"`
	// Scopes granted; empty means read only.
	Scopes              []Scope      `json:"scopes"`
	AllowedTypes        []EntityType `json:"allowed_types,omitempty"`
	AllowedVisibilities []Visibility `json:"allowed_visibilities,omitempty"`
	// ClientID scopes session context; default: the key's name.
	ClientID string `json:"client_id,omitempty"`
	// ExpiresAt, when non-zero, is when the key stops working; it must
	// lie in the future. Zero: the key never expires.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// keyHash digests a key with the pepper (HMAC-SHA256), or plain SHA-256
// without one: keys are 256 random bits, so a fast hash is right and a
// slow password hash would only add latency to every request.
func (c *core) keyHash(token string) []byte {
	if len(c.cfg.KeyPepper) > 0 {
		m := hmac.New(sha256.New, c.cfg.KeyPepper)
		m.Write([]byte(token))
		return m.Sum(nil)
	}
	s := sha256.Sum256([]byte(token))
	return s[:]
}

// CreateKey makes a key and returns its plaintext, which is shown once and
// never stored. Only a principal-free (admin) client may create keys.
func (a *Admin) CreateKey(ctx context.Context, spec KeySpec) (string, *APIKey, error) {
	c := a.c
	k, err := c.newKey(spec)
	if err != nil {
		return "", nil, err
	}
	token, hash, err := c.newSecret(k)
	if err != nil {
		return "", nil, fmt.Errorf("create key: %w", err)
	}
	audit := c.auditEntry("key.create", "", keyDetails(k))
	if err := c.store.CreateKey(ctx, c.ws, k, hash, audit); err != nil {
		return "", nil, fmt.Errorf("create key: %w", err)
	}
	return token, k, nil
}

// maxKeyLifetime bounds a key's expiry and a rotation's overlap.
const maxKeyLifetime = 10 * 365 * 24 * time.Hour

// newKey validates spec and builds the key it describes (without secret).
func (c *Client) newKey(spec KeySpec) (*APIKey, error) {
	spec.Name = strings.TrimSpace(spec.Name)
	if spec.Name == "" {
		return nil, validate.Invalid("name", "must not be empty")
	}
	if err := validate.Short("name", spec.Name, 100); err != nil {
		return nil, err
	}
	if len(spec.Scopes) == 0 {
		spec.Scopes = []Scope{ScopeRead}
	}
	for i, s := range spec.Scopes {
		if !s.Valid() {
			return nil, validate.Invalid(fmt.Sprintf("scopes[%d]", i), "%q is not one of read, write, delete, sync, backup", validate.Truncate(string(s), 40))
		}
	}
	for i, t := range spec.AllowedTypes {
		if err := validateType(fmt.Sprintf("allowed_types[%d]", i), t); err != nil {
			return nil, err
		}
	}
	for i, v := range spec.AllowedVisibilities {
		if err := validateVisibility(fmt.Sprintf("allowed_visibilities[%d]", i), v); err != nil {
			return nil, err
		}
	}
	if spec.ClientID == "" {
		spec.ClientID = spec.Name
	}
	if err := validate.Short("client_id", spec.ClientID, 100); err != nil {
		return nil, err
	}
	now := c.now()
	k := &APIKey{
		ID: newID(), Name: spec.Name,
		Scopes: slices.Compact(slices.Sorted(slices.Values(spec.Scopes))), AllowedTypes: spec.AllowedTypes,
		AllowedVisibilities: spec.AllowedVisibilities, ClientID: spec.ClientID, CreatedAt: now,
	}
	if !spec.ExpiresAt.IsZero() {
		exp := spec.ExpiresAt.UTC().Truncate(time.Microsecond)
		if !exp.After(now) {
			return nil, validate.Invalid("expires_at", "%s is not in the future", exp.Format(time.RFC3339))
		}
		if exp.Sub(now) > maxKeyLifetime {
			return nil, validate.Invalid("expires_at", "must be at most 10 years from now")
		}
		k.ExpiresAt = &exp
	}
	if k.AllowedTypes == nil {
		k.AllowedTypes = []EntityType{}
	}
	if k.AllowedVisibilities == nil {
		k.AllowedVisibilities = []Visibility{}
	}
	return k, nil
}

// newSecret draws a key's secret, sets k.Prefix and returns the token and
// its digest.
func (c *Client) newSecret(k *APIKey) (token string, hash []byte, err error) {
	var secret [keySecretBytes]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", nil, err
	}
	token = KeyPrefix + base64.RawURLEncoding.EncodeToString(secret[:])
	k.Prefix = token[:len(KeyPrefix)+6]
	return token, c.keyHash(token), nil
}

// keyDetails is what the audit log records about a key: its rights and
// expiry, never its secret.
func keyDetails(k *APIKey) map[string]any {
	d := map[string]any{
		"key_id": k.ID.String(), "name": k.Name, "prefix": k.Prefix, "scopes": k.Scopes,
		"allowed_types": k.AllowedTypes, "allowed_visibilities": k.AllowedVisibilities, "client_id": k.ClientID,
		"expires_at": nil,
	}
	if k.ExpiresAt != nil {
		d["expires_at"] = k.ExpiresAt.Format(time.RFC3339Nano)
	}
	return d
}

// RotateOptions configures RotateKey.
type RotateOptions struct {
	// Overlap is how long the old key keeps working beside its successor,
	// so that clients can switch without an outage. Zero ends the old key
	// at once; at most 10 years. (pgm-admin key rotate defaults to 24h.)
	// An old key that already expires sooner keeps its earlier expiry.
	Overlap time.Duration
	// ExpiresAt is the successor's expiry. Zero gives it the old key's
	// lifetime (its expires_at minus its created_at) counted from now when
	// the old key had an expiry, and no expiry otherwise.
	ExpiresAt time.Time
}

// RotatedKey is the result of RotateKey.
type RotatedKey struct {
	// Token is the successor's secret, shown once and never stored.
	Token string `json:"key"`
	// Key is the successor: the old key's name, scopes, allowed types and
	// visibilities and client id, with a new id and secret.
	Key *APIKey `json:"api_key"`
	// Previous is the old key with its new expiry (the end of the overlap).
	Previous *APIKey `json:"previous"`
}

// RotateKey issues a successor of key id with the same rights and makes
// the old key expire at the end of the overlap window, in one transaction
// (audited as key.rotate). A revoked key cannot be rotated (ErrConflict);
// an unknown one is ErrNotFound.
func (a *Admin) RotateKey(ctx context.Context, id uuid.UUID, opts RotateOptions) (*RotatedKey, error) {
	c := a.c
	if opts.Overlap < 0 || opts.Overlap > maxKeyLifetime {
		return nil, validate.Invalid("overlap", "must be between 0 and 10 years")
	}
	old, err := c.key(ctx, id)
	if err != nil {
		return nil, err
	}
	if old.RevokedAt != nil {
		return nil, fmt.Errorf("api key %s was revoked at %s and cannot be rotated: %w", id, old.RevokedAt.Format(time.RFC3339), ErrConflict)
	}
	now := c.now()
	spec := KeySpec{Name: old.Name, Scopes: old.Scopes, AllowedTypes: old.AllowedTypes,
		AllowedVisibilities: old.AllowedVisibilities, ClientID: old.ClientID, ExpiresAt: opts.ExpiresAt}
	if spec.ExpiresAt.IsZero() && old.ExpiresAt != nil {
		spec.ExpiresAt = now.Add(old.ExpiresAt.Sub(old.CreatedAt))
	}
	k, err := c.newKey(spec)
	if err != nil {
		return nil, err
	}
	token, hash, err := c.newSecret(k)
	if err != nil {
		return nil, fmt.Errorf("rotate key: %w", err)
	}
	end := now.Add(opts.Overlap)
	if old.ExpiresAt != nil && old.ExpiresAt.Before(end) {
		end = *old.ExpiresAt
	}
	details := keyDetails(k)
	details["previous_key_id"] = id.String()
	details["previous_expires_at"] = end.Format(time.RFC3339Nano)
	details["overlap_seconds"] = int64(opts.Overlap / time.Second)
	audit := c.auditEntry("key.rotate", "", details)
	if err := c.store.RotateKey(ctx, c.ws, id, end, k, hash, audit); err != nil {
		return nil, fmt.Errorf("rotate key: %w", err)
	}
	c.keys.forget(id)
	prev := *old
	prev.ExpiresAt = &end
	return &RotatedKey{Token: token, Key: k, Previous: &prev}, nil
}

// key returns one key of the workspace by id.
func (c *Client) key(ctx context.Context, id uuid.UUID) (*APIKey, error) {
	keys, err := c.store.ListKeys(ctx, c.ws)
	if err != nil {
		return nil, fmt.Errorf("look up key: %w", err)
	}
	for i := range keys {
		if keys[i].ID == id {
			return &keys[i], nil
		}
	}
	return nil, fmt.Errorf("api key %s: %w", id, ErrNotFound)
}

// ListKeys lists the workspace's keys (without secrets).
func (a *Admin) ListKeys(ctx context.Context) ([]APIKey, error) {
	c := a.c
	return c.store.ListKeys(ctx, c.ws)
}

// RevokeKey revokes a key. Every server sharing the store refuses it on
// its next request: the revocation is broadcast to their key caches.
func (a *Admin) RevokeKey(ctx context.Context, id uuid.UUID) error {
	c := a.c
	audit := c.auditEntry("key.revoke", "", map[string]any{"key_id": id.String()})
	if err := c.store.RevokeKey(ctx, c.ws, id, c.now(), audit); err != nil {
		return fmt.Errorf("revoke key: %w", err)
	}
	c.keys.forget(id)
	return nil
}

// Authenticate verifies an API key and returns a view of c acting for its
// principal. Unknown, malformed, revoked and expired keys return
// ErrUnauthorized (an expired key's message says it expired). Verified
// keys are cached in memory for at most Config.KeyCacheTTL while the
// store's change feed is connected (so a change to a key anywhere, by the
// library or by SQL, evicts them at once), or, with a KeyVersioner store,
// while its keys version stays the same (checked on every call);
// otherwise every call asks the store.
func (a *Admin) Authenticate(ctx context.Context, token string) (*Client, error) {
	c := a.c
	if !strings.HasPrefix(token, KeyPrefix) || len(token) < len(KeyPrefix)+40 || len(token) > 200 {
		return nil, fmt.Errorf("malformed API key: %w", ErrUnauthorized)
	}
	h := c.keyHash(token)
	if kv, ok := c.store.(driver.KeyVersioner); ok {
		v, err := kv.KeysVersion(ctx, c.ws)
		if err != nil {
			return nil, fmt.Errorf("authenticate: %w", err)
		}
		c.keys.at(v)
	}
	now := c.now()
	if ck, ok := c.keys.get(h, now, c.cfg.KeyCacheTTL); ok {
		if ck.expires != nil && !now.Before(*ck.expires) {
			return nil, expiredErr(ck.prefix, *ck.expires)
		}
		c.keys.touch(ck.p.KeyID, now)
		return c.as(ck.p), nil
	}
	gen := c.keys.generation()
	k, stored, err := c.store.KeyByHash(ctx, c.ws, h)
	if err != nil {
		if errIs(err, ErrNotFound) {
			return nil, fmt.Errorf("unknown API key: %w", ErrUnauthorized)
		}
		return nil, fmt.Errorf("authenticate: %w", err)
	}
	if !hmac.Equal(stored, h) {
		return nil, fmt.Errorf("unknown API key: %w", ErrUnauthorized)
	}
	if k.RevokedAt != nil {
		return nil, fmt.Errorf("API key %s was revoked: %w", k.Prefix, ErrUnauthorized)
	}
	if keyExpired(k, now) {
		return nil, expiredErr(k.Prefix, *k.ExpiresAt)
	}
	p := KeyPrincipal(k)
	c.keys.put(h, cachedKey{p: p, prefix: k.Prefix, expires: k.ExpiresAt, at: now}, gen)
	c.keys.touch(p.KeyID, now)
	return c.as(p), nil
}

func expiredErr(prefix string, at time.Time) error {
	return fmt.Errorf("API key %s expired at %s; ask an administrator for a new key (pgm-admin key rotate): %w",
		prefix, at.UTC().Format(time.RFC3339), ErrUnauthorized)
}

// keyCache holds verified keys. It is only used while the store's change
// feed is connected, or with a KeyVersioner store; a change to a key (from
// any process), a disconnect or a new keys version clears it, and an entry
// older than the TTL is verified again. The generation guards against
// caching a key read before a concurrent invalidation.
type keyCache struct {
	mu      sync.Mutex
	enabled bool
	gen     uint64
	// With a KeyVersioner store, the version the cached keys were read
	// at (versioned: at has been called).
	version   uint64
	versioned bool
	byHash    map[string]cachedKey
	used      map[string]time.Time // key id -> last use, flushed periodically
}

// cachedKey is a verified key: its principal, prefix (for messages),
// expiry and when it was read from the store.
type cachedKey struct {
	p       Principal
	prefix  string
	expires *time.Time
	at      time.Time
}

func newKeyCache() *keyCache {
	return &keyCache{byHash: map[string]cachedKey{}, used: map[string]time.Time{}}
}

// get returns the cached key with digest h unless it was read more than
// ttl before now.
func (k *keyCache) get(h []byte, now time.Time, ttl time.Duration) (cachedKey, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.enabled {
		return cachedKey{}, false
	}
	ck, ok := k.byHash[string(h)]
	if ok && now.Sub(ck.at) >= ttl {
		delete(k.byHash, string(h))
		return cachedKey{}, false
	}
	return ck, ok
}

func (k *keyCache) generation() uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gen
}

func (k *keyCache) put(h []byte, ck cachedKey, gen uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.enabled && gen == k.gen {
		k.byHash[string(h)] = ck
	}
}

// at records the store's keys version (see KeyVersioner): a new one clears
// the cache, and caching is on.
func (k *keyCache) at(v uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.versioned || v != k.version {
		k.gen++
		clear(k.byHash)
		k.version, k.versioned = v, true
	}
	k.enabled = true
}

// invalidate clears the cache; enabled says whether caching may resume.
func (k *keyCache) invalidate(enabled bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gen++
	k.enabled = enabled
	clear(k.byHash)
}

func (k *keyCache) forget(id uuid.UUID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.gen++
	s := id.String()
	for h, ck := range k.byHash {
		if ck.p.KeyID == s {
			delete(k.byHash, h)
		}
	}
}

func (k *keyCache) touch(id string, at time.Time) {
	k.mu.Lock()
	k.used[id] = at
	k.mu.Unlock()
}

func (k *keyCache) takeUsed() map[string]time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.used) == 0 {
		return nil
	}
	u := k.used
	k.used = map[string]time.Time{}
	return u
}

// flushKeyUse writes buffered last_used_at times (the worker does it every
// minute and at Stop), so requests never write to record key use.
func (c *core) flushKeyUse(ctx context.Context) {
	used := c.keys.takeUsed()
	if len(used) == 0 {
		return
	}
	if err := c.store.TouchKeys(ctx, c.ws, used); err != nil {
		c.log.Warn("recording API key use failed", "err", err)
	}
}

// KeyWorkspace returns the workspace that holds an API key, for a server
// of many workspaces (package workspaces) that must find a request's
// workspace before it can authenticate the key there. It reveals only the
// workspace: the key's own checks (revoked, expired) are that workspace's
// Authenticate's. A malformed or unknown key returns ErrUnauthorized; a
// store that does not implement driver.WorkspaceStorage, ErrUnavailable.
func (a *Admin) KeyWorkspace(ctx context.Context, token string) (string, error) {
	c := a.c
	ws, ok := c.store.(driver.WorkspaceStorage)
	if !ok {
		return "", fmt.Errorf("the %s store cannot serve many workspaces: %w", c.store.Name(), ErrUnavailable)
	}
	if !strings.HasPrefix(token, KeyPrefix) || len(token) < len(KeyPrefix)+40 || len(token) > 200 {
		return "", fmt.Errorf("malformed API key: %w", ErrUnauthorized)
	}
	name, err := ws.KeyWorkspace(ctx, c.keyHash(token))
	if err != nil {
		if errIs(err, ErrNotFound) {
			return "", fmt.Errorf("unknown API key: %w", ErrUnauthorized)
		}
		return "", fmt.Errorf("find the key's workspace: %w", err)
	}
	return name, nil
}
