package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/postgram-go/postgram/driver"
)

const oauthCols = `kind, id, data, version, expires_at, created_at, updated_at`

func scanOAuth(row interface{ Scan(...any) error }) (*driver.OAuthRecord, error) {
	var r driver.OAuthRecord
	var data string
	var exp sql.NullInt64
	var created, updated int64
	if err := row.Scan(&r.Kind, &r.ID, &data, &r.Version, &exp, &created, &updated); err != nil {
		return nil, err
	}
	r.Data, r.ExpiresAt = []byte(data), timeOrNil(exp)
	r.CreatedAt, r.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &r, nil
}

// PutOAuthRecord implements driver.OAuthStorage.
func (s *Store) PutOAuthRecord(ctx context.Context, r *driver.OAuthRecord) error {
	now := time.Now().UTC()
	err := s.write(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO oauth_records (`+oauthCols+`) VALUES (?, ?, ?, 1, ?, ?, ?)`,
			r.Kind, r.ID, string(r.Data), microsOrNil(r.ExpiresAt), micros(now), micros(now))
		return err
	})
	if isUniqueViolation(err) {
		return fmt.Errorf("sqlite: oauth %s record exists: %w", r.Kind, driver.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("sqlite: put oauth %s record: %w", r.Kind, mapErr(err))
	}
	r.Version, r.CreatedAt, r.UpdatedAt = 1, now, now
	return nil
}

// OAuthRecord implements driver.OAuthStorage.
func (s *Store) OAuthRecord(ctx context.Context, kind, id string) (*driver.OAuthRecord, error) {
	r, err := scanOAuth(s.queryRow(ctx, `SELECT `+oauthCols+` FROM oauth_records WHERE kind = ? AND id = ?`, kind, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("oauth %s record: %w", kind, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read oauth %s record: %w", kind, mapErr(err))
	}
	return r, nil
}

// UpdateOAuthRecord implements driver.OAuthStorage.
func (s *Store) UpdateOAuthRecord(ctx context.Context, r *driver.OAuthRecord) error {
	now := time.Now().UTC()
	var n int64
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE oauth_records SET data = ?, expires_at = ?, version = version + 1, updated_at = ?
			WHERE kind = ? AND id = ? AND version = ?`, string(r.Data), microsOrNil(r.ExpiresAt), micros(now), r.Kind, r.ID, r.Version)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return fmt.Errorf("sqlite: update oauth %s record: %w", r.Kind, mapErr(err))
	}
	if n == 0 {
		if _, err := s.OAuthRecord(ctx, r.Kind, r.ID); err != nil {
			return err
		}
		return fmt.Errorf("oauth %s record changed since version %d: %w", r.Kind, r.Version, driver.ErrConflict)
	}
	r.Version++
	r.UpdatedAt = now
	return nil
}

// OAuthRecords implements driver.OAuthStorage.
func (s *Store) OAuthRecords(ctx context.Context, kind string) ([]driver.OAuthRecord, error) {
	rows, err := s.query(ctx, `SELECT `+oauthCols+` FROM oauth_records WHERE kind = ? ORDER BY created_at, id`, kind)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list oauth %s records: %w", kind, mapErr(err))
	}
	defer rows.Close()
	var out []driver.OAuthRecord
	for rows.Next() {
		r, err := scanOAuth(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list oauth %s records: %w", kind, err)
		}
		out = append(out, *r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list oauth %s records: %w", kind, mapErr(err))
	}
	return out, nil
}

// DeleteExpiredOAuthRecords implements driver.OAuthStorage.
func (s *Store) DeleteExpiredOAuthRecords(ctx context.Context, now time.Time) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM oauth_records WHERE expires_at IS NOT NULL AND expires_at < ?`, micros(now))
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: sweep oauth records: %w", mapErr(err))
	}
	return int(n), nil
}
