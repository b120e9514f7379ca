package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
)

const oauthCols = `kind, id, data, version, expires_at, created_at, updated_at`

func scanOAuth(row pgx.Row) (*driver.OAuthRecord, error) {
	var r driver.OAuthRecord
	var data string
	if err := row.Scan(&r.Kind, &r.ID, &data, &r.Version, &r.ExpiresAt, &r.CreatedAt, &r.UpdatedAt); err != nil {
		return nil, err
	}
	r.Data = []byte(data)
	return &r, nil
}

// PutOAuthRecord implements driver.OAuthStorage.
func (s *Store) PutOAuthRecord(ctx context.Context, r *driver.OAuthRecord) error {
	ctx = storeWide(ctx)
	now := time.Now().UTC().Truncate(time.Microsecond)
	_, err := s.pool.Exec(ctx, `INSERT INTO oauth_records (`+oauthCols+`) VALUES ($1, $2, $3::jsonb, 1, $4, $5, $5)`,
		r.Kind, r.ID, string(r.Data), r.ExpiresAt, now)
	if isUniqueViolation(err) {
		return fmt.Errorf("postgres: oauth %s record exists: %w", r.Kind, driver.ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("postgres: put oauth %s record: %w", r.Kind, mapErr(err))
	}
	r.Version, r.CreatedAt, r.UpdatedAt = 1, now, now
	return nil
}

// OAuthRecord implements driver.OAuthStorage.
func (s *Store) OAuthRecord(ctx context.Context, kind, id string) (*driver.OAuthRecord, error) {
	ctx = storeWide(ctx)
	r, err := scanOAuth(s.pool.QueryRow(ctx, `SELECT kind, id, data::text, version, expires_at, created_at, updated_at
		FROM oauth_records WHERE kind = $1 AND id = $2`, kind, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("oauth %s record: %w", kind, driver.ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read oauth %s record: %w", kind, mapErr(err))
	}
	return r, nil
}

// UpdateOAuthRecord implements driver.OAuthStorage.
func (s *Store) UpdateOAuthRecord(ctx context.Context, r *driver.OAuthRecord) error {
	ctx = storeWide(ctx)
	now := time.Now().UTC().Truncate(time.Microsecond)
	tag, err := s.pool.Exec(ctx, `UPDATE oauth_records SET data = $1::jsonb, expires_at = $2, version = version + 1, updated_at = $3
		WHERE kind = $4 AND id = $5 AND version = $6`, string(r.Data), r.ExpiresAt, now, r.Kind, r.ID, r.Version)
	if err != nil {
		return fmt.Errorf("postgres: update oauth %s record: %w", r.Kind, mapErr(err))
	}
	if tag.RowsAffected() == 0 {
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
	ctx = storeWide(ctx)
	rows, err := s.pool.Query(ctx, `SELECT kind, id, data::text, version, expires_at, created_at, updated_at
		FROM oauth_records WHERE kind = $1 ORDER BY created_at, id`, kind)
	if err != nil {
		return nil, fmt.Errorf("postgres: list oauth %s records: %w", kind, mapErr(err))
	}
	defer rows.Close()
	var out []driver.OAuthRecord
	for rows.Next() {
		r, err := scanOAuth(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list oauth %s records: %w", kind, mapErr(err))
		}
		out = append(out, *r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: list oauth %s records: %w", kind, mapErr(err))
	}
	return out, nil
}

// DeleteExpiredOAuthRecords implements driver.OAuthStorage.
func (s *Store) DeleteExpiredOAuthRecords(ctx context.Context, now time.Time) (int, error) {
	ctx = storeWide(ctx)
	tag, err := s.pool.Exec(ctx, `DELETE FROM oauth_records WHERE expires_at IS NOT NULL AND expires_at < $1`, now)
	if err != nil {
		return 0, fmt.Errorf("postgres: sweep oauth records: %w", mapErr(err))
	}
	return int(tag.RowsAffected()), nil
}
