package driver

import (
	"context"
	"time"
)

// OAuthRecord is one piece of the OAuth authorization server's state
// (package oauth): a registered client, an authorization code, a grant or
// a refresh token. Data is the record's JSON document; the store keeps it
// opaque. Records are store-wide, like web-app users. Secrets (codes,
// refresh tokens) are never stored: their IDs are digests.
type OAuthRecord struct {
	Kind string
	ID   string
	Data []byte
	// Version starts at 1 and grows by one with each update: updates are
	// compare-and-set on it, which makes a code or refresh token single-use
	// even with several servers on one database.
	Version int64
	// ExpiresAt, when set, is when the record stops counting; expired
	// records are still returned (the caller checks) until swept.
	ExpiresAt *time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// OAuthStorage keeps OAuth records.
type OAuthStorage interface {
	// PutOAuthRecord inserts r at version 1 (setting r.Version); an
	// existing (kind, id) is an error wrapping ErrConflict.
	PutOAuthRecord(ctx context.Context, r *OAuthRecord) error
	// OAuthRecord returns a record or an error wrapping ErrNotFound.
	OAuthRecord(ctx context.Context, kind, id string) (*OAuthRecord, error)
	// UpdateOAuthRecord replaces r's data and expiry if the stored version
	// is still r.Version, and sets r.Version to the new version; a changed
	// record is an error wrapping ErrConflict, a missing one ErrNotFound.
	UpdateOAuthRecord(ctx context.Context, r *OAuthRecord) error
	// OAuthRecords lists a kind's records, oldest first.
	OAuthRecords(ctx context.Context, kind string) ([]OAuthRecord, error)
	// DeleteExpiredOAuthRecords removes the records that expired before
	// now, returning how many.
	DeleteExpiredOAuthRecords(ctx context.Context, now time.Time) (int, error)
}
