package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/postgram-go/postgram/driver"
)

// auditArgs flattens an audit entry for an INSERT guarded by "$n IS NOT NULL".
func auditArgs(a *driver.AuditEntry) (id *uuid.UUID, at *time.Time, key, client, op, entity string, details []byte, err error) {
	if a == nil {
		return nil, nil, "", "", "", "", []byte("{}"), nil
	}
	details, err = metadataJSON(a.Details)
	return &a.ID, &a.At, a.KeyID, a.ClientID, a.Operation, a.EntityID, details, err
}

// auditInsert inserts an entry in a transaction (nothing when a is nil).
func auditInsert(ctx context.Context, tx pgx.Tx, ws string, a *driver.AuditEntry) error {
	if a == nil {
		return nil
	}
	details, err := metadataJSON(a.Details)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO audit_log (workspace_id, id, at, key_id, client_id, operation, entity_id, details)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, ws, a.ID, a.At, a.KeyID, a.ClientID, a.Operation, a.EntityID, details)
	return err
}

// AppendAudit implements driver.Storage.
func (s *Store) AppendAudit(ctx context.Context, ws string, a *driver.AuditEntry) error {
	ctx = withWS(ctx, ws)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error { return auditInsert(ctx, tx, ws, a) })
	if err != nil {
		return fmt.Errorf("postgres: append audit: %w", mapErr(err))
	}
	return nil
}

// PruneAudit implements driver.Storage. The prune sets
// postgram.audit_prune for its own transaction only, which migration 012's
// trigger lets delete.
func (s *Store) PruneAudit(ctx context.Context, ws string, before time.Time, dryRun bool, audit *driver.AuditEntry) (int, error) {
	ctx = withWS(ctx, ws)
	if dryRun {
		var n int
		err := s.pool.QueryRow(ctx, "SELECT count(*) FROM audit_log WHERE workspace_id = $1 AND at < $2", ws, before).Scan(&n)
		if err != nil {
			return 0, fmt.Errorf("postgres: prune audit: %w", mapErr(err))
		}
		return n, nil
	}
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT set_config('postgram.audit_prune', 'on', true)"); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, "DELETE FROM audit_log WHERE workspace_id = $1 AND at < $2", ws, before)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		if _, err := tx.Exec(ctx, "SELECT set_config('postgram.audit_prune', 'off', true)"); err != nil {
			return err
		}
		if audit != nil {
			a := *audit
			a.Details = make(map[string]any, len(audit.Details)+1)
			for k, v := range audit.Details {
				a.Details[k] = v
			}
			a.Details["deleted"] = n
			return auditInsert(ctx, tx, ws, &a)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: prune audit: %w", mapErr(err))
	}
	return int(n), nil
}

// ListAudit implements driver.Storage.
func (s *Store) ListAudit(ctx context.Context, ws string, f driver.AuditFilter) ([]driver.AuditEntry, error) {
	ctx = withWS(ctx, ws)
	args := sqlArgs{ws}
	where := "workspace_id = $1"
	if !f.Since.IsZero() {
		where += " AND at >= " + args.add(f.Since)
	}
	if !f.Until.IsZero() {
		where += " AND at < " + args.add(f.Until)
	}
	if f.KeyID != "" {
		where += " AND key_id = " + args.add(f.KeyID)
	}
	if f.Operation != "" {
		where += " AND operation = " + args.add(f.Operation)
	}
	rows, err := s.pool.Query(ctx, `SELECT id, at, key_id, client_id, operation, entity_id, details FROM audit_log
		WHERE `+where+` ORDER BY at DESC, id DESC LIMIT `+args.add(f.Limit), args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: list audit: %w", mapErr(err))
	}
	defer rows.Close()
	out := []driver.AuditEntry{}
	for rows.Next() {
		var a driver.AuditEntry
		var details []byte
		if err := rows.Scan(&a.ID, &a.At, &a.KeyID, &a.ClientID, &a.Operation, &a.EntityID, &details); err != nil {
			return nil, fmt.Errorf("postgres: list audit: %w", err)
		}
		if err := json.Unmarshal(details, &a.Details); err != nil {
			return nil, fmt.Errorf("postgres: list audit: %w", err)
		}
		a.At = a.At.UTC()
		out = append(out, a)
	}
	return out, rows.Err()
}

const keyCols = `id, name, prefix, scopes, allowed_types, allowed_visibilities, client_id, created_at, revoked_at, last_used_at, expires_at`

func scanKey(row pgx.Row, extra ...any) (*driver.APIKey, error) {
	var k driver.APIKey
	var scopes, types, vis []string
	if err := row.Scan(append([]any{&k.ID, &k.Name, &k.Prefix, &scopes, &types, &vis, &k.ClientID, &k.CreatedAt, &k.RevokedAt, &k.LastUsedAt, &k.ExpiresAt}, extra...)...); err != nil {
		return nil, err
	}
	for _, s := range scopes {
		k.Scopes = append(k.Scopes, driver.Scope(s))
	}
	k.AllowedTypes = []driver.EntityType{}
	for _, t := range types {
		k.AllowedTypes = append(k.AllowedTypes, driver.EntityType(t))
	}
	k.AllowedVisibilities = []driver.Visibility{}
	for _, v := range vis {
		k.AllowedVisibilities = append(k.AllowedVisibilities, driver.Visibility(v))
	}
	k.CreatedAt = k.CreatedAt.UTC()
	for _, t := range []*time.Time{k.RevokedAt, k.LastUsedAt, k.ExpiresAt} {
		if t != nil {
			*t = t.UTC()
		}
	}
	return &k, nil
}

// CreateKey implements driver.Storage.
func (s *Store) CreateKey(ctx context.Context, ws string, k *driver.APIKey, hash []byte, audit *driver.AuditEntry) error {
	ctx = withWS(ctx, ws)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := insertKey(ctx, tx, ws, k, hash); err != nil {
			return err
		}
		return auditInsert(ctx, tx, ws, audit)
	})
	if err != nil {
		return fmt.Errorf("postgres: create key: %w", mapErr(err))
	}
	return nil
}

func insertKey(ctx context.Context, tx pgx.Tx, ws string, k *driver.APIKey, hash []byte) error {
	if err := registerWorkspace(ctx, tx, ws, k.CreatedAt); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO api_keys (workspace_id, id, name, prefix, key_hash, scopes, allowed_types,
			allowed_visibilities, client_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		ws, k.ID, k.Name, k.Prefix, hash, toStrings(k.Scopes), toStrings(k.AllowedTypes), toStrings(k.AllowedVisibilities),
		k.ClientID, k.CreatedAt, k.ExpiresAt)
	return err
}

// RotateKey implements driver.Storage. The trigger of migration 010
// tells every server that the old key changed.
func (s *Store) RotateKey(ctx context.Context, ws string, old uuid.UUID, oldExpires time.Time, k *driver.APIKey, hash []byte, audit *driver.AuditEntry) error {
	ctx = withWS(ctx, ws)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE api_keys SET expires_at = LEAST(COALESCE(expires_at, $3), $3)
			WHERE workspace_id = $1 AND id = $2 AND revoked_at IS NULL`, ws, old, oldExpires)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("api key %s (unrevoked): %w", old, driver.ErrNotFound)
		}
		if err := insertKey(ctx, tx, ws, k, hash); err != nil {
			return err
		}
		return auditInsert(ctx, tx, ws, audit)
	})
	if err != nil {
		if errors.Is(err, driver.ErrNotFound) {
			return err
		}
		return fmt.Errorf("postgres: rotate key: %w", mapErr(err))
	}
	return nil
}

// KeyByHash implements driver.Storage.
func (s *Store) KeyByHash(ctx context.Context, ws string, hash []byte) (*driver.APIKey, []byte, error) {
	ctx = withWS(ctx, ws)
	var stored []byte
	k, err := scanKey(s.pool.QueryRow(ctx, "SELECT "+keyCols+", key_hash FROM api_keys WHERE workspace_id = $1 AND key_hash = $2", ws, hash), &stored)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, fmt.Errorf("api key: %w", driver.ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: look up key: %w", mapErr(err))
	}
	return k, stored, nil
}

// ListKeys implements driver.Storage.
func (s *Store) ListKeys(ctx context.Context, ws string) ([]driver.APIKey, error) {
	ctx = withWS(ctx, ws)
	rows, err := s.pool.Query(ctx, "SELECT "+keyCols+" FROM api_keys WHERE workspace_id = $1 ORDER BY created_at DESC, id", ws)
	if err != nil {
		return nil, fmt.Errorf("postgres: list keys: %w", mapErr(err))
	}
	defer rows.Close()
	out := []driver.APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("postgres: list keys: %w", err)
		}
		out = append(out, *k)
	}
	return out, rows.Err()
}

// RevokeKey implements driver.Storage. The trigger of migration 010
// notifies every process listening (see Listen) at commit.
func (s *Store) RevokeKey(ctx context.Context, ws string, id uuid.UUID, at time.Time, audit *driver.AuditEntry) error {
	ctx = withWS(ctx, ws)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3) WHERE workspace_id = $1 AND id = $2`, ws, id, at)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("api key %s: %w", id, driver.ErrNotFound)
		}
		return auditInsert(ctx, tx, ws, audit)
	})
	if err != nil {
		if errors.Is(err, driver.ErrNotFound) {
			return err
		}
		return fmt.Errorf("postgres: revoke key: %w", mapErr(err))
	}
	return nil
}

// TouchKeys implements driver.Storage.
func (s *Store) TouchKeys(ctx context.Context, ws string, used map[string]time.Time) error {
	ctx = withWS(ctx, ws)
	if len(used) == 0 {
		return nil
	}
	var ids []uuid.UUID
	var ats []time.Time
	for k, at := range used {
		id, err := uuid.Parse(k)
		if err != nil {
			continue
		}
		ids = append(ids, id)
		ats = append(ats, at)
	}
	_, err := s.pool.Exec(ctx, `UPDATE api_keys k SET last_used_at = GREATEST(k.last_used_at, u.at)
		FROM unnest($2::uuid[], $3::timestamptz[]) AS u(id, at)
		WHERE k.workspace_id = $1 AND k.id = u.id`, ws, ids, ats)
	if err != nil {
		return fmt.Errorf("postgres: touch keys: %w", mapErr(err))
	}
	return nil
}

// Stats implements driver.Storage.
func (s *Store) Stats(ctx context.Context, ws string) (driver.StoreStats, error) {
	ctx = withWS(ctx, ws)
	st := driver.StoreStats{EntitiesByType: map[string]int{}, EntitiesByStatus: map[string]int{}}
	rows, err := s.pool.Query(ctx, `SELECT type, status, count(*) FROM entities WHERE workspace_id = $1 GROUP BY type, status`, ws)
	if err != nil {
		return st, fmt.Errorf("postgres: stats: %w", mapErr(err))
	}
	for rows.Next() {
		var t, status string
		var n int
		if err := rows.Scan(&t, &status, &n); err != nil {
			rows.Close()
			return st, fmt.Errorf("postgres: stats: %w", err)
		}
		st.EntitiesByType[t] += n
		st.EntitiesByStatus[status] += n
		st.Entities += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("postgres: stats: %w", mapErr(err))
	}
	err = s.pool.QueryRow(ctx, `SELECT
			(SELECT count(*) FROM chunks WHERE workspace_id = $1),
			(SELECT count(*) FROM chunks WHERE workspace_id = $1 AND embedding IS NOT NULL),
			(SELECT count(*) FROM edges WHERE workspace_id = $1),
			(SELECT count(*) FROM api_keys WHERE workspace_id = $1),
			(SELECT count(*) FROM audit_log WHERE workspace_id = $1),
			pg_database_size(current_database())`, ws).
		Scan(&st.Chunks, &st.EmbeddedChunks, &st.Edges, &st.Keys, &st.AuditEntries, &st.DatabaseBytes)
	if err != nil {
		return st, fmt.Errorf("postgres: stats: %w", mapErr(err))
	}
	return st, nil
}
