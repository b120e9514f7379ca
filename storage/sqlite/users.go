package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
)

const userCols = `id, name, password_hash, role, key_id, totp_secret, recovery, failed_logins, locked_until, last_login_at, created_at`

func scanUser(row interface{ Scan(...any) error }) (*driver.User, error) {
	var u driver.User
	var id string
	var locked, last sql.NullInt64
	var created int64
	var recovery string
	if err := row.Scan(&id, &u.Name, &u.PasswordHash, &u.Role, &u.KeyID, &u.TOTPSecret, &recovery, &u.FailedLogins, &locked, &last, &created); err != nil {
		return nil, err
	}
	if recovery != "[]" {
		if err := json.Unmarshal([]byte(recovery), &u.Recovery); err != nil {
			return nil, fmt.Errorf("recovery codes of user %s: %w", id, err)
		}
	}
	var err error
	if u.ID, err = uuid.Parse(id); err != nil {
		return nil, err
	}
	u.LockedUntil, u.LastLoginAt = timeOrNil(locked), timeOrNil(last)
	u.CreatedAt = fromMicros(created)
	return &u, nil
}

func timeOrNil(v sql.NullInt64) *time.Time {
	if !v.Valid {
		return nil
	}
	t := fromMicros(v.Int64)
	return &t
}

// CreateUser implements driver.UserStorage.
func (s *Store) CreateUser(ctx context.Context, u *driver.User) error {
	err := s.write(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO web_users (`+userCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			u.ID.String(), u.Name, u.PasswordHash, u.Role, u.KeyID, u.TOTPSecret, stringsJSON(u.Recovery), u.FailedLogins,
			microsOrNil(u.LockedUntil), microsOrNil(u.LastLoginAt), micros(u.CreatedAt))
		return err
	})
	if isUniqueViolation(err) {
		return fmt.Errorf("sqlite: create user %q: %w: the name is taken", u.Name, driver.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("sqlite: create user: %w", mapErr(err))
	}
	return nil
}

func (s *Store) userWhere(ctx context.Context, what, where string, arg any) (*driver.User, error) {
	u, err := scanUser(s.queryRow(ctx, "SELECT "+userCols+" FROM web_users WHERE "+where, arg))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("user %s: %w", what, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read user: %w", mapErr(err))
	}
	return u, nil
}

// UserByName implements driver.UserStorage.
func (s *Store) UserByName(ctx context.Context, name string) (*driver.User, error) {
	return s.userWhere(ctx, fmt.Sprintf("%q", name), "name = ?", name)
}

// UserByID implements driver.UserStorage.
func (s *Store) UserByID(ctx context.Context, id uuid.UUID) (*driver.User, error) {
	return s.userWhere(ctx, id.String(), "id = ?", id.String())
}

// CountUsers implements driver.UserStorage.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := s.queryRow(ctx, "SELECT count(*) FROM web_users").Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: count users: %w", mapErr(err))
	}
	return n, nil
}

// ListUsers implements driver.UserStorage.
func (s *Store) ListUsers(ctx context.Context) ([]*driver.User, error) {
	rows, err := s.query(ctx, "SELECT "+userCols+" FROM web_users ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("sqlite: list users: %w", mapErr(err))
	}
	defer rows.Close()
	var out []*driver.User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list users: %w", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list users: %w", mapErr(err))
	}
	return out, nil
}

// UpdateUser implements driver.UserStorage.
func (s *Store) UpdateUser(ctx context.Context, u *driver.User) error {
	return s.userExec(ctx, "update user", u.ID, `UPDATE web_users SET password_hash = ?, role = ?, key_id = ?, totp_secret = ?,
		recovery = ? WHERE id = ?`, u.PasswordHash, u.Role, u.KeyID, u.TOTPSecret, stringsJSON(u.Recovery), u.ID.String())
}

// DeleteUser implements driver.UserStorage.
func (s *Store) DeleteUser(ctx context.Context, id uuid.UUID) error {
	return s.userExec(ctx, "delete user", id, "DELETE FROM web_users WHERE id = ?", id.String())
}

// userExec runs one statement on user id's row; no row is ErrNotFound.
func (s *Store) userExec(ctx context.Context, what string, id uuid.UUID, q string, args ...any) error {
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("user %s: %w", id, driver.ErrNotFound)
		}
		return nil
	})
	if err != nil && !errors.Is(err, driver.ErrNotFound) {
		return fmt.Errorf("sqlite: %s: %w", what, mapErr(err))
	}
	return err
}

// SetLoginState implements driver.UserStorage.
func (s *Store) SetLoginState(ctx context.Context, id uuid.UUID, failed int, lockedUntil, lastLogin *time.Time) error {
	return s.userExec(ctx, "record sign-in", id, `UPDATE web_users SET failed_logins = ?, locked_until = ?,
		last_login_at = coalesce(?, last_login_at) WHERE id = ?`, failed, microsOrNil(lockedUntil), microsOrNil(lastLogin), id.String())
}

// CreateSession implements driver.UserStorage.
func (s *Store) CreateSession(ctx context.Context, ws *driver.WebSession) error {
	err := s.write(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO web_sessions (token_hash, user_id, csrf, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?)`, ws.TokenHash, ws.UserID.String(), ws.CSRF, micros(ws.CreatedAt), micros(ws.ExpiresAt))
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: create session: %w", mapErr(err))
	}
	return nil
}

// SessionByHash implements driver.UserStorage.
func (s *Store) SessionByHash(ctx context.Context, tokenHash string) (*driver.WebSession, error) {
	var ws driver.WebSession
	var uid string
	var created, expires int64
	err := s.queryRow(ctx, `SELECT token_hash, user_id, csrf, created_at, expires_at FROM web_sessions WHERE token_hash = ?`,
		tokenHash).Scan(&ws.TokenHash, &uid, &ws.CSRF, &created, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("session: %w", driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read session: %w", mapErr(err))
	}
	if ws.UserID, err = uuid.Parse(uid); err != nil {
		return nil, fmt.Errorf("sqlite: read session: %w", err)
	}
	ws.CreatedAt, ws.ExpiresAt = fromMicros(created), fromMicros(expires)
	return &ws, nil
}

// DeleteSession implements driver.UserStorage.
func (s *Store) DeleteSession(ctx context.Context, tokenHash string) error {
	err := s.write(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM web_sessions WHERE token_hash = ?", tokenHash)
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: delete session: %w", mapErr(err))
	}
	return nil
}

// DeleteUserSessions implements driver.UserStorage.
func (s *Store) DeleteUserSessions(ctx context.Context, userID uuid.UUID) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM web_sessions WHERE user_id = ?", userID.String())
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete sessions: %w", mapErr(err))
	}
	return int(n), nil
}

// DeleteExpiredSessions implements driver.UserStorage.
func (s *Store) DeleteExpiredSessions(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, "DELETE FROM web_sessions WHERE expires_at < ?", micros(now))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: delete expired sessions: %w", mapErr(err))
	}
	return int(n), nil
}
