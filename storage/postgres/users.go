package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
)

const userCols = `id, name, password_hash, role, key_id, totp_secret, recovery, failed_logins, locked_until, last_login_at, created_at`

// CreateUser implements driver.UserStorage.
func (s *Store) CreateUser(ctx context.Context, u *driver.User) error {
	ctx = storeWide(ctx)
	_, err := s.pool.Exec(ctx, `INSERT INTO web_users (`+userCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		u.ID, u.Name, u.PasswordHash, u.Role, u.KeyID, u.TOTPSecret, nonNil(u.Recovery), u.FailedLogins, u.LockedUntil, u.LastLoginAt, u.CreatedAt)
	if isUniqueViolation(err) {
		return fmt.Errorf("postgres: create user %q: %w: the name is taken", u.Name, driver.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("postgres: create user: %w", mapErr(err))
	}
	return nil
}

func nonNil(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

func scanUser(row pgx.Row) (*driver.User, error) {
	var u driver.User
	err := row.Scan(&u.ID, &u.Name, &u.PasswordHash, &u.Role, &u.KeyID, &u.TOTPSecret, &u.Recovery, &u.FailedLogins,
		&u.LockedUntil, &u.LastLoginAt, &u.CreatedAt)
	if len(u.Recovery) == 0 {
		u.Recovery = nil
	}
	return &u, err
}

func (s *Store) userWhere(ctx context.Context, what, where string, arg any) (*driver.User, error) {
	ctx = storeWide(ctx)
	u, err := scanUser(s.pool.QueryRow(ctx, "SELECT "+userCols+" FROM web_users WHERE "+where, arg))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("user %s: %w", what, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read user: %w", mapErr(err))
	}
	return u, nil
}

// UserByName implements driver.UserStorage.
func (s *Store) UserByName(ctx context.Context, name string) (*driver.User, error) {
	ctx = storeWide(ctx)
	return s.userWhere(ctx, fmt.Sprintf("%q", name), "name = $1", name)
}

// UserByID implements driver.UserStorage.
func (s *Store) UserByID(ctx context.Context, id uuid.UUID) (*driver.User, error) {
	ctx = storeWide(ctx)
	return s.userWhere(ctx, id.String(), "id = $1", id)
}

// CountUsers implements driver.UserStorage.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	ctx = storeWide(ctx)
	var n int
	if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM web_users").Scan(&n); err != nil {
		return 0, fmt.Errorf("postgres: count users: %w", mapErr(err))
	}
	return n, nil
}

// ListUsers implements driver.UserStorage.
func (s *Store) ListUsers(ctx context.Context) ([]*driver.User, error) {
	ctx = storeWide(ctx)
	rows, err := s.pool.Query(ctx, "SELECT "+userCols+" FROM web_users ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("postgres: list users: %w", mapErr(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*driver.User, error) { return scanUser(r) })
	if err != nil {
		return nil, fmt.Errorf("postgres: list users: %w", mapErr(err))
	}
	return out, nil
}

// UpdateUser implements driver.UserStorage.
func (s *Store) UpdateUser(ctx context.Context, u *driver.User) error {
	ctx = storeWide(ctx)
	return s.userExec(ctx, "update user", u.ID, `UPDATE web_users SET password_hash = $2, role = $3, key_id = $4,
		totp_secret = $5, recovery = $6 WHERE id = $1`, u.ID, u.PasswordHash, u.Role, u.KeyID, u.TOTPSecret, nonNil(u.Recovery))
}

// DeleteUser implements driver.UserStorage.
func (s *Store) DeleteUser(ctx context.Context, id uuid.UUID) error {
	ctx = storeWide(ctx)
	return s.userExec(ctx, "delete user", id, "DELETE FROM web_users WHERE id = $1", id)
}

// userExec runs one statement on user id's row; no row is ErrNotFound.
func (s *Store) userExec(ctx context.Context, what string, id uuid.UUID, q string, args ...any) error {
	ctx = storeWide(ctx)
	tag, err := s.pool.Exec(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("postgres: %s: %w", what, mapErr(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("user %s: %w", id, driver.ErrNotFound)
	}
	return nil
}

// SetLoginState implements driver.UserStorage.
func (s *Store) SetLoginState(ctx context.Context, id uuid.UUID, failed int, lockedUntil, lastLogin *time.Time) error {
	ctx = storeWide(ctx)
	return s.userExec(ctx, "record sign-in", id, `UPDATE web_users SET failed_logins = $2, locked_until = $3,
		last_login_at = coalesce($4, last_login_at) WHERE id = $1`, id, failed, lockedUntil, lastLogin)
}

// CreateSession implements driver.UserStorage.
func (s *Store) CreateSession(ctx context.Context, ws *driver.WebSession) error {
	ctx = storeWide(ctx)
	_, err := s.pool.Exec(ctx, `INSERT INTO web_sessions (token_hash, user_id, csrf, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5)`, ws.TokenHash, ws.UserID, ws.CSRF, ws.CreatedAt, ws.ExpiresAt)
	if err != nil {
		return fmt.Errorf("postgres: create session: %w", mapErr(err))
	}
	return nil
}

// SessionByHash implements driver.UserStorage.
func (s *Store) SessionByHash(ctx context.Context, tokenHash string) (*driver.WebSession, error) {
	ctx = storeWide(ctx)
	var ws driver.WebSession
	err := s.pool.QueryRow(ctx, `SELECT token_hash, user_id, csrf, created_at, expires_at FROM web_sessions
		WHERE token_hash = $1`, tokenHash).Scan(&ws.TokenHash, &ws.UserID, &ws.CSRF, &ws.CreatedAt, &ws.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("session: %w", driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read session: %w", mapErr(err))
	}
	return &ws, nil
}

// DeleteSession implements driver.UserStorage.
func (s *Store) DeleteSession(ctx context.Context, tokenHash string) error {
	ctx = storeWide(ctx)
	if _, err := s.pool.Exec(ctx, "DELETE FROM web_sessions WHERE token_hash = $1", tokenHash); err != nil {
		return fmt.Errorf("postgres: delete session: %w", mapErr(err))
	}
	return nil
}

// DeleteUserSessions implements driver.UserStorage.
func (s *Store) DeleteUserSessions(ctx context.Context, userID uuid.UUID) (int, error) {
	ctx = storeWide(ctx)
	tag, err := s.pool.Exec(ctx, "DELETE FROM web_sessions WHERE user_id = $1", userID)
	if err != nil {
		return 0, fmt.Errorf("postgres: delete sessions: %w", mapErr(err))
	}
	return int(tag.RowsAffected()), nil
}

// DeleteExpiredSessions implements driver.UserStorage.
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	ctx = storeWide(ctx)
	tag, err := s.pool.Exec(ctx, "DELETE FROM web_sessions WHERE expires_at < $1", now)
	if err != nil {
		return 0, fmt.Errorf("postgres: delete expired sessions: %w", mapErr(err))
	}
	return int(tag.RowsAffected()), nil
}
