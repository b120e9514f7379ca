package postgram

import (
	"fmt"

	"github.com/postgram-go/postgram/driver"
)

// Admin is the operator API of a workspace: API keys, the audit log,
// embedding models and re-embedding, re-extraction, graph maintenance,
// durable grooming, purge, statistics and health, and the scoped clients
// handed to callers (As, Authenticate). It exists only for an unscoped
// Client (one built with New, not narrowed by As or Authenticate), so its
// methods need no access check of their own: holding an *Admin is the
// right to use it.
type Admin struct {
	c *Client
}

// Admin returns the operator API of an unscoped client. A client that acts
// for a principal (an API key) gets ErrForbidden: operator acts are for
// pgm-admin and code that embeds the library.
func (c *Client) Admin() (*Admin, error) {
	if c.principal != nil {
		return nil, fmt.Errorf("the operator API needs an unscoped client (this one acts for key %s): %w", c.principal.KeyID, ErrForbidden)
	}
	return &Admin{c: c}, nil
}

// Client returns the unscoped client the Admin was made from.
func (a *Admin) Client() *Client { return a.c }

// As returns a client that acts for p: every call checks p's scopes and
// limits. The view shares the client's worker and caches.
func (a *Admin) As(p Principal) *Client { return a.c.as(p) }

// Workspace returns the workspace the Admin manages.
func (a *Admin) Workspace() string { return a.c.ws }

// Storage returns the backend (for operator tools that work on the store
// directly: backups, migrations, raw SQL).
func (a *Admin) Storage() driver.Storage { return a.c.store }

// Embedder returns the configured embedder, or nil.
func (a *Admin) Embedder() Embedder { return a.c.embedder }

// Sync is the Markdown-sync API of a client (pgm sync): diff a folder's
// manifest with the server, upload changed files in batches, finalize, or
// push a whole folder at once. The wire types are package syncproto's.
type Sync struct {
	c *Client
}

// Sync returns the client's Markdown-sync API; every call checks the
// client's principal (the sync scope, and the types and visibilities it
// may see).
func (c *Client) Sync() *Sync { return &Sync{c: c} }
