package driver

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// UserRole is what a web-app user may do.
type UserRole string

// User roles.
const (
	// UserAdmin has the operator's rights (every workspace operation and
	// the admin console).
	UserAdmin UserRole = "admin"
	// UserMember acts with the rights of the API key it is bound to
	// (KeyID): its scopes, types, visibilities and client id.
	UserMember UserRole = "member"
)

// User is a person who signs in to the web app. Users are store-wide, like
// embedding models: they are not rows of a workspace.
type User struct {
	ID   uuid.UUID
	Name string // the login name, unique
	// PasswordHash is the encoded argon2id hash ($argon2id$v=19$…); the
	// password itself is never stored.
	PasswordHash string
	Role         UserRole
	// KeyID binds a member to the API key whose principal it acts as.
	KeyID string
	// TOTPSecret is the base32 secret of the second factor ("" when off);
	// Recovery holds the hex SHA-256 of each unused recovery code.
	TOTPSecret string
	Recovery   []string
	// FailedLogins counts failed sign-ins since the last success;
	// LockedUntil, when in the future, refuses every sign-in.
	FailedLogins int
	LockedUntil  *time.Time
	LastLoginAt  *time.Time
	CreatedAt    time.Time
}

// WebSession is a signed-in browser session. Only the SHA-256 of its
// token is stored, so a read of the table yields no usable session.
type WebSession struct {
	TokenHash string // hex SHA-256 of the cookie's token
	UserID    uuid.UUID
	// CSRF is the session's anti-forgery token, sent back with every form.
	CSRF      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// UserStorage keeps web-app users and their sessions.
type UserStorage interface {
	// CreateUser inserts u; a taken name is an error wrapping ErrConflict.
	CreateUser(ctx context.Context, u *User) error
	// UserByName and UserByID return a user or an error wrapping
	// ErrNotFound.
	UserByName(ctx context.Context, name string) (*User, error)
	UserByID(ctx context.Context, id uuid.UUID) (*User, error)
	// CountUsers counts the users (0 before onboarding); ListUsers lists
	// them by name.
	CountUsers(ctx context.Context) (int, error)
	ListUsers(ctx context.Context) ([]*User, error)
	// UpdateUser replaces u's password hash, role, key, second factor and
	// recovery codes (not its sign-in state). DeleteUser removes a user
	// and its sessions. Both return an error wrapping ErrNotFound for an
	// unknown user.
	UpdateUser(ctx context.Context, u *User) error
	DeleteUser(ctx context.Context, id uuid.UUID) error
	// SetLoginState records a sign-in attempt's outcome on user id.
	SetLoginState(ctx context.Context, id uuid.UUID, failed int, lockedUntil, lastLogin *time.Time) error
	// CreateSession stores s.
	CreateSession(ctx context.Context, s *WebSession) error
	// SessionByHash returns the session or an error wrapping ErrNotFound
	// (expired sessions included: the caller checks ExpiresAt).
	SessionByHash(ctx context.Context, tokenHash string) (*WebSession, error)
	// DeleteSession removes one session (sign-out); DeleteUserSessions
	// every session of a user (sign-out everywhere), returning how many.
	DeleteSession(ctx context.Context, tokenHash string) error
	DeleteUserSessions(ctx context.Context, userID uuid.UUID) (int, error)
	// DeleteExpiredSessions removes every session that expired before
	// now, returning how many.
	DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error)
}
