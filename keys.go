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
)

// KeyPrefix starts every API key.
const KeyPrefix = "pgm-"

// keySecretBytes is the randomness in a key.
const keySecretBytes = 32

// APIKey describes a key. The secret itself is never stored: only its
// (peppered) SHA-256 digest.
type APIKey struct {
	ID                  uuid.UUID    `json:"id"`
	Name                string       `json:"name"`
	Prefix              string       `json:"prefix"` // the first characters of the key, to recognise it
	Scopes              []Scope      `json:"scopes"`
	AllowedTypes        []EntityType `json:"allowed_types"`
	AllowedVisibilities []Visibility `json:"allowed_visibilities"`
	ClientID            string       `json:"client_id"`
	CreatedAt           time.Time    `json:"created_at"`
	RevokedAt           *time.Time   `json:"revoked_at,omitempty"`
	LastUsedAt          *time.Time   `json:"last_used_at,omitempty"`
}

// Principal returns the principal a key authenticates as.
func (k *APIKey) Principal() Principal {
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
func (c *Client) CreateKey(ctx context.Context, spec KeySpec) (string, *APIKey, error) {
	if c.principal != nil {
		return "", nil, fmt.Errorf("creating keys is an admin operation: %w", ErrForbidden)
	}
	spec.Name = strings.TrimSpace(spec.Name)
	if spec.Name == "" {
		return "", nil, invalid("name", "must not be empty")
	}
	if err := validateShort("name", spec.Name, 100); err != nil {
		return "", nil, err
	}
	if len(spec.Scopes) == 0 {
		spec.Scopes = []Scope{ScopeRead}
	}
	for i, s := range spec.Scopes {
		if !s.Valid() {
			return "", nil, invalid(fmt.Sprintf("scopes[%d]", i), "%q is not one of read, write, delete, sync", truncate(string(s), 40))
		}
	}
	for i, t := range spec.AllowedTypes {
		if err := validateType(fmt.Sprintf("allowed_types[%d]", i), t); err != nil {
			return "", nil, err
		}
	}
	for i, v := range spec.AllowedVisibilities {
		if err := validateVisibility(fmt.Sprintf("allowed_visibilities[%d]", i), v); err != nil {
			return "", nil, err
		}
	}
	if spec.ClientID == "" {
		spec.ClientID = spec.Name
	}
	if err := validateShort("client_id", spec.ClientID, 100); err != nil {
		return "", nil, err
	}
	var secret [keySecretBytes]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", nil, fmt.Errorf("create key: %w", err)
	}
	token := KeyPrefix + base64.RawURLEncoding.EncodeToString(secret[:])
	k := &APIKey{
		ID: newID(), Name: spec.Name, Prefix: token[:len(KeyPrefix)+6],
		Scopes: slices.Compact(slices.Sorted(slices.Values(spec.Scopes))), AllowedTypes: spec.AllowedTypes,
		AllowedVisibilities: spec.AllowedVisibilities, ClientID: spec.ClientID, CreatedAt: c.now(),
	}
	if k.AllowedTypes == nil {
		k.AllowedTypes = []EntityType{}
	}
	if k.AllowedVisibilities == nil {
		k.AllowedVisibilities = []Visibility{}
	}
	audit := c.auditEntry("key.create", "", map[string]any{"key_id": k.ID.String(), "name": k.Name, "scopes": k.Scopes})
	if err := c.store.CreateKey(ctx, c.ws, k, c.keyHash(token), audit); err != nil {
		return "", nil, fmt.Errorf("create key: %w", err)
	}
	return token, k, nil
}

// ListKeys lists the workspace's keys (without secrets).
func (c *Client) ListKeys(ctx context.Context) ([]APIKey, error) {
	if c.principal != nil {
		return nil, fmt.Errorf("listing keys is an admin operation: %w", ErrForbidden)
	}
	return c.store.ListKeys(ctx, c.ws)
}

// RevokeKey revokes a key. Every server sharing the store refuses it on
// its next request: the revocation is broadcast to their key caches.
func (c *Client) RevokeKey(ctx context.Context, id uuid.UUID) error {
	if c.principal != nil {
		return fmt.Errorf("revoking keys is an admin operation: %w", ErrForbidden)
	}
	audit := c.auditEntry("key.revoke", "", map[string]any{"key_id": id.String()})
	if err := c.store.RevokeKey(ctx, c.ws, id, c.now(), audit); err != nil {
		return fmt.Errorf("revoke key: %w", err)
	}
	c.keys.forget(id)
	return nil
}

// Authenticate verifies an API key and returns a view of c acting for its
// principal. Unknown, malformed and revoked keys return ErrUnauthorized.
// Verified keys are cached in memory while the store's change feed is
// connected (so a revocation anywhere evicts them at once), or, with a
// KeyVersioner store, while its keys version stays the same (checked on
// every call); otherwise every call asks the store.
func (c *Client) Authenticate(ctx context.Context, token string) (*Client, error) {
	if !strings.HasPrefix(token, KeyPrefix) || len(token) < len(KeyPrefix)+40 || len(token) > 200 {
		return nil, fmt.Errorf("malformed API key: %w", ErrUnauthorized)
	}
	h := c.keyHash(token)
	if kv, ok := c.store.(KeyVersioner); ok {
		v, err := kv.KeysVersion(ctx, c.ws)
		if err != nil {
			return nil, fmt.Errorf("authenticate: %w", err)
		}
		c.keys.at(v)
	}
	if p, ok := c.keys.get(h); ok {
		c.keys.touch(p.KeyID, c.now())
		return c.As(p), nil
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
	p := k.Principal()
	c.keys.put(h, p, gen)
	c.keys.touch(p.KeyID, c.now())
	return c.As(p), nil
}

// keyCache holds verified keys. It is only used while the store's change
// feed is connected, or with a KeyVersioner store; a revocation (from any
// process), a disconnect or a new keys version clears it. The generation
// guards against caching a key read before a concurrent invalidation.
type keyCache struct {
	mu      sync.Mutex
	enabled bool
	gen     uint64
	// With a KeyVersioner store, the version the cached keys were read
	// at (versioned: at has been called).
	version   uint64
	versioned bool
	byHash    map[string]Principal
	used      map[string]time.Time // key id -> last use, flushed periodically
}

func newKeyCache() *keyCache {
	return &keyCache{byHash: map[string]Principal{}, used: map[string]time.Time{}}
}

func (k *keyCache) get(h []byte) (Principal, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if !k.enabled {
		return Principal{}, false
	}
	p, ok := k.byHash[string(h)]
	return p, ok
}

func (k *keyCache) generation() uint64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.gen
}

func (k *keyCache) put(h []byte, p Principal, gen uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.enabled && gen == k.gen {
		k.byHash[string(h)] = p
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
	for h, p := range k.byHash {
		if p.KeyID == s {
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
