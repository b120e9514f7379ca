package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
)

// auditInsert inserts an entry in a transaction (nothing when a is nil).
func auditInsert(ctx context.Context, tx *wtx, ws string, a *driver.AuditEntry) error {
	if a == nil {
		return nil
	}
	details, err := metadataJSON(a.Details)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO audit_log (workspace_id, id, at, key_id, client_id, operation, entity_id, details)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`, ws, a.ID.String(), micros(a.At), a.KeyID, a.ClientID, a.Operation, a.EntityID, details)
	return err
}

// AppendAudit implements driver.Storage.
func (s *Store) AppendAudit(ctx context.Context, ws string, a *driver.AuditEntry) error {
	if err := s.write(ctx, func(tx *wtx) error { return auditInsert(ctx, tx, ws, a) }); err != nil {
		return fmt.Errorf("sqlite: append audit: %w", mapErr(err))
	}
	return nil
}

// PruneAudit implements driver.Storage. The prune opens the gate of
// migration 010's trigger inside its own transaction only.
func (s *Store) PruneAudit(ctx context.Context, ws string, before time.Time, dryRun bool, audit *driver.AuditEntry) (int, error) {
	if dryRun {
		var n int
		err := s.r.QueryRowContext(ctx, "SELECT count(*) FROM audit_log WHERE workspace_id = ? AND at < ?", ws, micros(before)).Scan(&n)
		if err != nil {
			return 0, fmt.Errorf("sqlite: prune audit: %w", mapErr(err))
		}
		return n, nil
	}
	var n int64
	err := s.write(ctx, func(tx *wtx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO audit_prune_gate (open) VALUES (1)"); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, "DELETE FROM audit_log WHERE workspace_id = ? AND at < ?", ws, micros(before))
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM audit_prune_gate"); err != nil {
			return err
		}
		if audit != nil {
			a := *audit
			a.Details = withDeleted(audit.Details, n)
			return auditInsert(ctx, tx, ws, &a)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("sqlite: prune audit: %w", mapErr(err))
	}
	return int(n), nil
}

// withDeleted returns a copy of details with "deleted" set to n.
func withDeleted(details map[string]any, n int64) map[string]any {
	out := make(map[string]any, len(details)+1)
	for k, v := range details {
		out[k] = v
	}
	out["deleted"] = n
	return out
}

// ListAudit implements driver.Storage.
func (s *Store) ListAudit(ctx context.Context, ws string, f driver.AuditFilter) ([]driver.AuditEntry, error) {
	args := []any{ws}
	where := "workspace_id = ?"
	if !f.Since.IsZero() {
		where += " AND at >= ?"
		args = append(args, micros(f.Since))
	}
	if !f.Until.IsZero() {
		where += " AND at < ?"
		args = append(args, micros(f.Until))
	}
	if f.KeyID != "" {
		where += " AND key_id = ?"
		args = append(args, f.KeyID)
	}
	if f.Operation != "" {
		where += " AND operation = ?"
		args = append(args, f.Operation)
	}
	args = append(args, f.Limit)
	rows, err := s.r.QueryContext(ctx, `SELECT id, at, key_id, client_id, operation, entity_id, details FROM audit_log
		WHERE `+where+` ORDER BY at DESC, id DESC LIMIT ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list audit: %w", mapErr(err))
	}
	defer rows.Close()
	out := []driver.AuditEntry{}
	for rows.Next() {
		var a driver.AuditEntry
		var id, details string
		var at int64
		if err := rows.Scan(&id, &at, &a.KeyID, &a.ClientID, &a.Operation, &a.EntityID, &details); err != nil {
			return nil, fmt.Errorf("sqlite: list audit: %w", err)
		}
		if a.ID, err = uuid.Parse(id); err != nil {
			return nil, fmt.Errorf("sqlite: list audit: %w", err)
		}
		if err := json.Unmarshal([]byte(details), &a.Details); err != nil {
			return nil, fmt.Errorf("sqlite: list audit: %w", err)
		}
		a.At = fromMicros(at)
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list audit: %w", mapErr(err))
	}
	return out, nil
}

const keyCols = `id, name, prefix, scopes, allowed_types, allowed_visibilities, client_id, created_at, revoked_at, last_used_at, expires_at`

func scanKey(row scanner, extra ...any) (*driver.APIKey, error) {
	var k driver.APIKey
	var id, scopes, types, vis string
	var created int64
	var revoked, used, expires sql.NullInt64
	if err := row.Scan(append([]any{&id, &k.Name, &k.Prefix, &scopes, &types, &vis, &k.ClientID, &created, &revoked, &used, &expires}, extra...)...); err != nil {
		return nil, err
	}
	var err error
	if k.ID, err = uuid.Parse(id); err != nil {
		return nil, err
	}
	if err := json.Unmarshal([]byte(scopes), &k.Scopes); err != nil {
		return nil, err
	}
	k.AllowedTypes = []driver.EntityType{}
	if err := json.Unmarshal([]byte(types), &k.AllowedTypes); err != nil {
		return nil, err
	}
	k.AllowedVisibilities = []driver.Visibility{}
	if err := json.Unmarshal([]byte(vis), &k.AllowedVisibilities); err != nil {
		return nil, err
	}
	if len(k.Scopes) == 0 {
		k.Scopes = nil // PostgreSQL's scan of an empty text[] appends nothing
	}
	k.CreatedAt = fromMicros(created)
	k.RevokedAt = timePtr(revoked)
	k.LastUsedAt = timePtr(used)
	k.ExpiresAt = timePtr(expires)
	return &k, nil
}

// CreateKey implements driver.Storage.
func (s *Store) CreateKey(ctx context.Context, ws string, k *driver.APIKey, hash []byte, audit *driver.AuditEntry) error {
	err := s.write(ctx, func(tx *wtx) error {
		if err := insertKey(ctx, tx, ws, k, hash); err != nil {
			return err
		}
		return auditInsert(ctx, tx, ws, audit)
	})
	if err != nil {
		return fmt.Errorf("sqlite: create key: %w", mapErr(err))
	}
	return nil
}

func insertKey(ctx context.Context, tx *wtx, ws string, k *driver.APIKey, hash []byte) error {
	if err := registerWorkspace(ctx, tx, ws, k.CreatedAt); err != nil {
		return err
	}
	var expires sql.NullInt64
	if k.ExpiresAt != nil {
		expires = sql.NullInt64{Int64: micros(*k.ExpiresAt), Valid: true}
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO api_keys (workspace_id, id, name, prefix, key_hash, scopes, allowed_types,
			allowed_visibilities, client_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		ws, k.ID.String(), k.Name, k.Prefix, hash, stringsJSON(k.Scopes), stringsJSON(k.AllowedTypes), stringsJSON(k.AllowedVisibilities),
		k.ClientID, micros(k.CreatedAt), expires)
	return err
}

// RotateKey implements driver.Storage. The change-log trigger tells
// every process sharing the file that the old key changed.
func (s *Store) RotateKey(ctx context.Context, ws string, old uuid.UUID, oldExpires time.Time, k *driver.APIKey, hash []byte, audit *driver.AuditEntry) error {
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE api_keys SET expires_at = min(coalesce(expires_at, ?1), ?1)
			WHERE workspace_id = ?2 AND id = ?3 AND revoked_at IS NULL`, micros(oldExpires), ws, old.String())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
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
		return fmt.Errorf("sqlite: rotate key: %w", mapErr(err))
	}
	return nil
}

// KeyByHash implements driver.Storage.
func (s *Store) KeyByHash(ctx context.Context, ws string, hash []byte) (*driver.APIKey, []byte, error) {
	var stored []byte
	k, err := scanKey(s.queryRow(ctx, "SELECT "+keyCols+", key_hash FROM api_keys WHERE workspace_id = ? AND key_hash = ?", ws, hash), &stored)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil, fmt.Errorf("api key: %w", driver.ErrNotFound)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("sqlite: look up key: %w", mapErr(err))
	}
	return k, stored, nil
}

// ListKeys implements driver.Storage.
func (s *Store) ListKeys(ctx context.Context, ws string) ([]driver.APIKey, error) {
	rows, err := s.r.QueryContext(ctx, "SELECT "+keyCols+" FROM api_keys WHERE workspace_id = ? ORDER BY created_at DESC, id", ws)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list keys: %w", mapErr(err))
	}
	defer rows.Close()
	out := []driver.APIKey{}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("sqlite: list keys: %w", err)
		}
		out = append(out, *k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list keys: %w", mapErr(err))
	}
	return out, nil
}

// RevokeKey implements driver.Storage. This store has no change feed,
// so the library caches no verified key and every replica (every process
// on the file) sees the revocation at its next authentication.
func (s *Store) RevokeKey(ctx context.Context, ws string, id uuid.UUID, at time.Time, audit *driver.AuditEntry) error {
	err := s.write(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE workspace_id = ? AND id = ?`,
			micros(at), ws, id.String())
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("api key %s: %w", id, driver.ErrNotFound)
		}
		return auditInsert(ctx, tx, ws, audit)
	})
	if err != nil {
		if errors.Is(err, driver.ErrNotFound) {
			return err
		}
		return fmt.Errorf("sqlite: revoke key: %w", mapErr(err))
	}
	return nil
}

// TouchKeys implements driver.Storage.
func (s *Store) TouchKeys(ctx context.Context, ws string, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *wtx) error {
		st, err := tx.PrepareContext(ctx, `UPDATE api_keys SET last_used_at = max(coalesce(last_used_at, ?1), ?1)
			WHERE workspace_id = ?2 AND id = ?3`)
		if err != nil {
			return err
		}
		defer st.Close()
		for k, at := range used {
			id, err := uuid.Parse(k)
			if err != nil {
				continue
			}
			if _, err := st.ExecContext(ctx, micros(at), ws, id.String()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: touch keys: %w", mapErr(err))
	}
	return nil
}

// Stats implements driver.Storage. DatabaseBytes is the size of the
// database file and its WAL.
func (s *Store) Stats(ctx context.Context, ws string) (driver.StoreStats, error) {
	st := driver.StoreStats{EntitiesByType: map[string]int{}, EntitiesByStatus: map[string]int{}}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, fmt.Errorf("sqlite: stats: %w", mapErr(err))
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT type, status, count(*) FROM entities WHERE workspace_id = ? GROUP BY type, status`, ws)
	if err != nil {
		return st, fmt.Errorf("sqlite: stats: %w", mapErr(err))
	}
	for rows.Next() {
		var t, status string
		var n int
		if err := rows.Scan(&t, &status, &n); err != nil {
			rows.Close()
			return st, fmt.Errorf("sqlite: stats: %w", err)
		}
		st.EntitiesByType[t] += n
		st.EntitiesByStatus[status] += n
		st.Entities += n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("sqlite: stats: %w", mapErr(err))
	}
	err = tx.QueryRowContext(ctx, `SELECT
			(SELECT count(*) FROM chunks WHERE workspace_id = ?1),
			(SELECT count(*) FROM chunk_embeddings WHERE workspace_id = ?1),
			(SELECT count(*) FROM edges WHERE workspace_id = ?1),
			(SELECT count(*) FROM api_keys WHERE workspace_id = ?1),
			(SELECT count(*) FROM audit_log WHERE workspace_id = ?1)`, ws).
		Scan(&st.Chunks, &st.EmbeddedChunks, &st.Edges, &st.Keys, &st.AuditEntries)
	if err != nil {
		return st, fmt.Errorf("sqlite: stats: %w", mapErr(err))
	}
	for _, p := range []string{s.path, s.path + "-wal"} {
		if fi, err := os.Stat(p); err == nil {
			st.DatabaseBytes += fi.Size()
		}
	}
	return st, nil
}

var _ driver.KeyVersioner = (*Store)(nil)

// KeysVersion implements driver.KeyVersioner: the number of API-key
// changes (other than last use) this process has applied from change_log,
// after applying every change committed before the call. The library
// caches verified keys while it stays the same, so a key revoked by any
// process is refused on the next request here.
func (s *Store) KeysVersion(ctx context.Context, ws string) (uint64, error) {
	if err := s.idx.ensureFresh(ctx); err != nil {
		return 0, fmt.Errorf("sqlite: keys version: %w", err)
	}
	return s.idx.keysGen.Load(), nil
}
