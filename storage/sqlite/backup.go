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
	"github.com/postgram-go/postgram/internal/vecscan"
)

var _ driver.BackupStorage = (*Store)(nil)

// backupPage is how many entities (with their chunks) one page of a
// backup reads; backupRowPage how many rows of the other tables.
const (
	backupPage    = 500
	backupRowPage = 2000
)

// errCallback carries a sink's error out unchanged.
type errCallback struct{ err error }

func (e errCallback) Error() string { return e.err.Error() }

// ReadBackup implements driver.BackupStorage: one read transaction of a
// read connection (a WAL snapshot: writers go on meanwhile), read page by
// page along primary keys.
func (s *Store) ReadBackup(ctx context.Context, sink driver.BackupSink) error {
	if s.closed.Load() {
		return fmt.Errorf("sqlite: read backup: store is closed: %w", driver.ErrUnavailable)
	}
	conn, err := s.r.Conn(ctx)
	if err != nil {
		return fmt.Errorf("sqlite: read backup: %w", mapErr(err))
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return fmt.Errorf("sqlite: read backup: %w", mapErr(err))
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	// A deferred transaction takes its snapshot at its first read.
	err = backupModels(ctx, conn, sink)
	var wss []string
	if err == nil {
		wss, err = backupWorkspaces(ctx, conn)
	}
	for _, step := range []func(context.Context, *sql.Conn, string, driver.BackupSink) error{
		backupEntities, backupEdges, backupKeys, backupAudit, backupSyncFiles,
	} {
		for _, ws := range wss {
			if err == nil {
				err = step(ctx, conn, ws, sink)
			}
		}
	}
	var cb errCallback
	if errors.As(err, &cb) {
		return cb.err
	}
	if err != nil {
		return fmt.Errorf("sqlite: read backup: %w", mapErr(err))
	}
	return nil
}

func backupModels(ctx context.Context, conn *sql.Conn, sink driver.BackupSink) error {
	rows, err := conn.QueryContext(ctx, "SELECT id, provider, name, dimensions, is_active, created_at FROM embedding_models ORDER BY id")
	if err != nil {
		return err
	}
	var models []driver.BackupModel
	for rows.Next() {
		var m driver.BackupModel
		var created int64
		if err := rows.Scan(&m.ID, &m.Provider, &m.Name, &m.Dimensions, &m.Active, &created); err != nil {
			rows.Close()
			return err
		}
		m.CreatedAt = fromMicros(created)
		models = append(models, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range models {
		if err := sink.Model(&models[i]); err != nil {
			return errCallback{err}
		}
	}
	return nil
}

// backupWorkspaces lists the workspaces with rows, in byte order.
func backupWorkspaces(ctx context.Context, conn *sql.Conn) ([]string, error) {
	rows, err := conn.QueryContext(ctx, `SELECT workspace_id FROM entities UNION SELECT workspace_id FROM api_keys
		UNION SELECT workspace_id FROM audit_log ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var ws string
		if err := rows.Scan(&ws); err != nil {
			return nil, err
		}
		out = append(out, ws)
	}
	return out, rows.Err()
}

func backupEntities(ctx context.Context, conn *sql.Conn, ws string, sink driver.BackupSink) error {
	afterID := ""
	for {
		rows, err := conn.QueryContext(ctx, "SELECT e.workspace_id, "+entityCols+`, e.chunk_generation,
				e.enrichment_queued_at, e.enrichment_retry_at, e.extraction_queued_at, e.extraction_retry_at,
				e.extraction_provider, e.extraction_model
			FROM entities e WHERE e.workspace_id = ? AND e.id > ?
			ORDER BY e.id LIMIT ?`, ws, afterID, backupPage)
		if err != nil {
			return err
		}
		var recs []*driver.BackupEntity
		for rows.Next() {
			r := &driver.BackupEntity{}
			var qa, ra, xqa, xra sql.NullInt64
			e, raw, err := scanEntityAfter(rows, &r.Workspace, &r.ChunkGeneration, &qa, &ra, &xqa, &xra, &r.ExtractionProvider, &r.ExtractionModel)
			if err != nil {
				rows.Close()
				return err
			}
			r.Entity, r.Metadata = *e, json.RawMessage(raw)
			r.EnrichmentQueuedAt, r.EnrichmentRetryAt, r.ExtractionQueuedAt, r.ExtractionRetryAt = timePtr(qa), timePtr(ra), timePtr(xqa), timePtr(xra)
			recs = append(recs, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(recs) == 0 {
			return nil
		}
		if err := backupChunks(ctx, conn, ws, afterID, recs); err != nil {
			return err
		}
		for _, r := range recs {
			if err := sink.Entity(r); err != nil {
				return errCallback{err}
			}
		}
		if len(recs) < backupPage {
			return nil
		}
		afterID = recs[len(recs)-1].Entity.ID.String()
	}
}

// scanEntityAfter scans "workspace_id, entityCols, extra..." and returns
// the metadata as stored.
func scanEntityAfter(rows *sql.Rows, ws *string, extra ...any) (*driver.Entity, string, error) {
	var e driver.Entity
	var id, tags, meta string
	var created, updated int64
	dest := []any{ws, &id, &e.Type, &e.Content, &e.Visibility, &e.Owner, &e.Status, &tags, &e.Source, &meta,
		&e.ClientID, &e.Version, &e.EnrichmentStatus, &e.EnrichmentAttempts, &e.EnrichmentError,
		&e.ExtractionStatus, &e.ExtractionAttempts, &e.ExtractionError, &created, &updated}
	if err := rows.Scan(append(dest, extra...)...); err != nil {
		return nil, "", err
	}
	var err error
	if e.ID, err = uuid.Parse(id); err != nil {
		return nil, "", fmt.Errorf("entity id %q: %w", id, err)
	}
	if err := json.Unmarshal([]byte(tags), &e.Tags); err != nil {
		return nil, "", fmt.Errorf("decode tags of %s: %w", e.ID, err)
	}
	if e.Tags == nil {
		e.Tags = []string{}
	}
	e.CreatedAt, e.UpdatedAt = fromMicros(created), fromMicros(updated)
	return &e, meta, nil
}

// backupChunks reads the chunks of one page of entities: those of the
// entities of ws after afterID up to the page's last, a range of the
// chunks_entity index.
func backupChunks(ctx context.Context, conn *sql.Conn, ws, afterID string, recs []*driver.BackupEntity) error {
	type key struct{ ws, id string }
	byID := make(map[key]*driver.BackupEntity, len(recs))
	for _, r := range recs {
		byID[key{r.Workspace, r.Entity.ID.String()}] = r
	}
	last := recs[len(recs)-1]
	rows, err := conn.QueryContext(ctx, `SELECT c.workspace_id, c.entity_id, c.id, c.chunk_index, c.content, c.start_offset, c.end_offset,
			v.model_id, v.embedding
		FROM chunks c LEFT JOIN chunk_embeddings v ON v.chunk_rid = c.rid
		WHERE c.workspace_id = ? AND c.entity_id > ? AND c.entity_id <= ?
		ORDER BY c.entity_id, c.chunk_index`, ws, afterID, last.Entity.ID.String())
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k key
		var cid string
		var c driver.BackupChunk
		var model sql.NullInt64
		var blob []byte
		if err := rows.Scan(&k.ws, &k.id, &cid, &c.Index, &c.Content, &c.Start, &c.End, &model, &blob); err != nil {
			return err
		}
		if c.ID, err = uuid.Parse(cid); err != nil {
			return fmt.Errorf("chunk id %q: %w", cid, err)
		}
		if blob != nil {
			c.Embedding = vecscan.DecodeVector(blob, nil)
			c.ModelID = model.Int64
		}
		if r := byID[k]; r != nil {
			r.Chunks = append(r.Chunks, c)
		}
	}
	return rows.Err()
}

func backupEdges(ctx context.Context, conn *sql.Conn, ws string, sink driver.BackupSink) error {
	afterID := ""
	for {
		rows, err := conn.QueryContext(ctx, "SELECT ed.workspace_id, "+edgeCols+` FROM edges ed
			WHERE ed.workspace_id = ? AND ed.id > ? ORDER BY ed.id LIMIT ?`, ws, afterID, backupRowPage)
		if err != nil {
			return err
		}
		var edges []driver.BackupEdge
		for rows.Next() {
			var be driver.BackupEdge
			var sc wsScanner
			sc.row, sc.ws = rows, &be.Workspace
			e, err := scanEdge(&sc)
			if err != nil {
				rows.Close()
				return err
			}
			be.Edge = e
			edges = append(edges, be)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range edges {
			if err := sink.Edge(&edges[i]); err != nil {
				return errCallback{err}
			}
		}
		if len(edges) < backupRowPage {
			return nil
		}
		afterID = edges[len(edges)-1].ID.String()
	}
}

// wsScanner scans a leading workspace_id column before the rest.
type wsScanner struct {
	row scanner
	ws  *string
}

func (w *wsScanner) Scan(dest ...any) error { return w.row.Scan(append([]any{w.ws}, dest...)...) }

func backupKeys(ctx context.Context, conn *sql.Conn, ws string, sink driver.BackupSink) error {
	rows, err := conn.QueryContext(ctx, "SELECT workspace_id, "+keyCols+", key_hash FROM api_keys WHERE workspace_id = ? ORDER BY id", ws)
	if err != nil {
		return err
	}
	var keys []driver.BackupKey
	for rows.Next() {
		var bk driver.BackupKey
		k, err := scanKey(&wsScanner{row: rows, ws: &bk.Workspace}, &bk.Hash)
		if err != nil {
			rows.Close()
			return err
		}
		if k.Scopes == nil {
			k.Scopes = []driver.Scope{}
		}
		bk.APIKey = *k
		keys = append(keys, bk)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range keys {
		if err := sink.Key(&keys[i]); err != nil {
			return errCallback{err}
		}
	}
	return nil
}

func backupAudit(ctx context.Context, conn *sql.Conn, ws string, sink driver.BackupSink) error {
	afterID := ""
	for {
		rows, err := conn.QueryContext(ctx, `SELECT workspace_id, id, at, key_id, client_id, operation, entity_id, details FROM audit_log
			WHERE workspace_id = ? AND id > ? ORDER BY id LIMIT ?`, ws, afterID, backupRowPage)
		if err != nil {
			return err
		}
		var out []driver.BackupAudit
		for rows.Next() {
			var a driver.BackupAudit
			var id, details string
			var at int64
			if err := rows.Scan(&a.Workspace, &id, &at, &a.KeyID, &a.ClientID, &a.Operation, &a.EntityID, &details); err != nil {
				rows.Close()
				return err
			}
			if a.ID, err = uuid.Parse(id); err != nil {
				rows.Close()
				return fmt.Errorf("audit id %q: %w", id, err)
			}
			if err := json.Unmarshal([]byte(details), &a.Details); err != nil {
				rows.Close()
				return fmt.Errorf("decode details of audit entry %s: %w", id, err)
			}
			a.At = fromMicros(at)
			out = append(out, a)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range out {
			if err := sink.Audit(&out[i]); err != nil {
				return errCallback{err}
			}
		}
		if len(out) < backupRowPage {
			return nil
		}
		afterID = out[len(out)-1].ID.String()
	}
}

func backupSyncFiles(ctx context.Context, conn *sql.Conn, ws string, sink driver.BackupSink) error {
	rows, err := conn.QueryContext(ctx, `SELECT workspace_id, repo, path, sha, entity_id, sync_status, last_synced FROM sync_files
		WHERE workspace_id = ? ORDER BY repo, path`, ws)
	if err != nil {
		return err
	}
	var files []driver.BackupSyncFile
	for rows.Next() {
		var f driver.BackupSyncFile
		var eid string
		var last int64
		if err := rows.Scan(&f.Workspace, &f.Repo, &f.Path, &f.SHA, &eid, &f.Status, &last); err != nil {
			rows.Close()
			return err
		}
		if f.EntityID, err = uuid.Parse(eid); err != nil {
			rows.Close()
			return fmt.Errorf("sync file entity id %q: %w", eid, err)
		}
		f.LastSynced = fromMicros(last)
		files = append(files, f)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range files {
		if err := sink.SyncFile(&files[i]); err != nil {
			return errCallback{err}
		}
	}
	return nil
}

// BackupRowCounts implements driver.BackupStorage.
func (s *Store) BackupRowCounts(ctx context.Context) (map[string]int64, error) {
	var m, e, c, v, ed, k, a, sf int64
	err := s.r.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM embedding_models), (SELECT count(*) FROM entities),
			(SELECT count(*) FROM chunks), (SELECT count(*) FROM chunk_embeddings),
			(SELECT count(*) FROM edges), (SELECT count(*) FROM api_keys), (SELECT count(*) FROM audit_log),
			(SELECT count(*) FROM sync_files)`).Scan(&m, &e, &c, &v, &ed, &k, &a, &sf)
	if err != nil {
		return nil, fmt.Errorf("sqlite: count rows: %w", mapErr(err))
	}
	return map[string]int64{driver.BackupModels: m, driver.BackupEntities: e, driver.BackupChunks: c,
		driver.BackupVectors: v, driver.BackupEdges: ed, driver.BackupKeys: k, driver.BackupAuditLog: a,
		driver.BackupSyncFiles: sf}, nil
}

// RestoreModels implements driver.BackupStorage (ids kept).
func (s *Store) RestoreModels(ctx context.Context, models []driver.BackupModel) error {
	err := s.write(ctx, func(tx *wtx) error {
		for _, m := range models {
			if _, err := tx.ExecContext(ctx, `INSERT INTO embedding_models (id, provider, name, dimensions, is_active, created_at)
				VALUES (?, ?, ?, ?, ?, ?)`, m.ID, m.Provider, m.Name, m.Dimensions, m.Active, micros(m.CreatedAt)); err != nil {
				return fmt.Errorf("model %d: %w", m.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: restore models: %w", mapErr(err))
	}
	s.mu.Lock()
	s.models = map[int64]driver.ModelInfo{}
	s.mu.Unlock()
	return nil
}

// FinishRestore implements driver.BackupStorage: SQLite's planner
// statistics (the in-process indexes follow the change log).
func (s *Store) FinishRestore(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, "PRAGMA optimize"); err != nil {
		return fmt.Errorf("sqlite: finish restore: %w", mapErr(err))
	}
	return nil
}

// RestoreEntities implements driver.BackupStorage.
func (s *Store) RestoreEntities(ctx context.Context, recs []*driver.BackupEntity) error {
	if len(recs) == 0 {
		return nil
	}
	prepared := make([][]preparedChunk, len(recs))
	heads := make([][]byte, len(recs))
	for i, r := range recs {
		in := make([]driver.ChunkInput, len(r.Chunks))
		for j, c := range r.Chunks {
			in[j] = driver.ChunkInput{ID: c.ID, Index: c.Index, Content: c.Content, Start: c.Start, End: c.End}
		}
		prepared[i] = prepareChunks(r.Workspace, in)
		heads[i] = headTSV(withMetadata(&r.Entity, r.Metadata))
	}
	err := s.write(ctx, func(tx *wtx) error {
		if err := registerWorkspaces(ctx, tx, recs, func(r *driver.BackupEntity) (string, time.Time) { return r.Workspace, r.Entity.CreatedAt }); err != nil {
			return err
		}
		ent, err := tx.PrepareContext(ctx, `INSERT INTO entities (workspace_id, id, type, content, visibility, owner, status, tags, source,
				metadata, client_id, version, chunk_generation, enrichment_status, enrichment_attempts, enrichment_error,
				enrichment_queued_at, enrichment_retry_at, extraction_status, extraction_attempts, extraction_error,
				extraction_queued_at, extraction_retry_at, extraction_provider, extraction_model, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING rid`)
		if err != nil {
			return err
		}
		defer ent.Close()
		head, err := tx.PrepareContext(ctx, `INSERT INTO entity_heads (rid, tsv) VALUES (?, ?)`)
		if err != nil {
			return err
		}
		defer head.Close()
		vec, err := tx.PrepareContext(ctx, `INSERT INTO chunk_embeddings (chunk_rid, workspace_id, chunk_id, entity_rid, model_id, embedding)
			SELECT rid, workspace_id, id, entity_rid, ?3, ?4 FROM chunks WHERE workspace_id = ?1 AND id = ?2`)
		if err != nil {
			return err
		}
		defer vec.Close()
		for i, r := range recs {
			e := &r.Entity
			meta := string(r.Metadata)
			if len(meta) == 0 {
				meta = "{}"
			}
			var rid int64
			if err := ent.QueryRowContext(ctx, r.Workspace, e.ID.String(), e.Type, e.Content, e.Visibility, e.Owner, e.Status, stringsJSON(e.Tags),
				e.Source, meta, e.ClientID, e.Version, r.ChunkGeneration, e.EnrichmentStatus, e.EnrichmentAttempts, e.EnrichmentError,
				microsOrNil(r.EnrichmentQueuedAt), microsOrNil(r.EnrichmentRetryAt), e.ExtractionStatus, e.ExtractionAttempts, e.ExtractionError,
				microsOrNil(r.ExtractionQueuedAt), microsOrNil(r.ExtractionRetryAt), r.ExtractionProvider, r.ExtractionModel,
				micros(e.CreatedAt), micros(e.UpdatedAt)).Scan(&rid); err != nil {
				return fmt.Errorf("entity %s: %w", e.ID, err)
			}
			if _, err := head.ExecContext(ctx, rid, heads[i]); err != nil {
				return fmt.Errorf("head of entity %s: %w", e.ID, err)
			}
			if err := insertChunks(ctx, tx, r.Workspace, e.ID, rid, prepared[i]); err != nil {
				return fmt.Errorf("chunks of entity %s: %w", e.ID, err)
			}
			for _, c := range r.Chunks {
				if c.Embedding == nil {
					continue
				}
				if _, err := vec.ExecContext(ctx, r.Workspace, c.ID.String(), c.ModelID, vecscan.EncodeVector(c.Embedding)); err != nil {
					return fmt.Errorf("embedding of chunk %s: %w", c.ID, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: restore entities: %w", mapErr(err))
	}
	return nil
}

func microsOrNil[T interface{ UnixMicro() int64 }](t *T) any {
	if t == nil {
		return nil
	}
	return (*t).UnixMicro()
}

// RestoreEdges implements driver.BackupStorage.
func (s *Store) RestoreEdges(ctx context.Context, edges []driver.BackupEdge) error {
	if len(edges) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *wtx) error {
		st, err := tx.PrepareContext(ctx, `INSERT INTO edges (workspace_id, id, source_id, target_id, relation, confidence, source, metadata,
				origin_id, provider, model, prompt_version, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, e := range edges {
			meta, err := metadataJSON(e.Metadata)
			if err != nil {
				return fmt.Errorf("metadata of edge %s: %w", e.ID, err)
			}
			if _, err := st.ExecContext(ctx, e.Workspace, e.ID.String(), e.SourceID.String(), e.TargetID.String(), e.Relation, e.Confidence,
				e.Source, meta, originArg(e.OriginID), e.Provider, e.Model, e.PromptVersion, micros(e.CreatedAt), micros(e.UpdatedAt)); err != nil {
				return fmt.Errorf("edge %s: %w", e.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: restore edges: %w", mapErr(err))
	}
	return nil
}

// RestoreKeys implements driver.BackupStorage.
func (s *Store) RestoreKeys(ctx context.Context, keys []driver.BackupKey) error {
	if len(keys) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *wtx) error {
		if err := registerWorkspaces(ctx, tx, keys, func(k driver.BackupKey) (string, time.Time) { return k.Workspace, k.CreatedAt }); err != nil {
			return err
		}
		for _, k := range keys {
			scopes := stringsJSON(k.Scopes)
			if _, err := tx.ExecContext(ctx, `INSERT INTO api_keys (workspace_id, id, name, prefix, key_hash, scopes, allowed_types,
					allowed_visibilities, client_id, created_at, revoked_at, last_used_at, expires_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				k.Workspace, k.ID.String(), k.Name, k.Prefix, k.Hash, scopes, stringsJSON(k.AllowedTypes), stringsJSON(k.AllowedVisibilities),
				k.ClientID, micros(k.CreatedAt), microsOrNil(k.RevokedAt), microsOrNil(k.LastUsedAt), microsOrNil(k.ExpiresAt)); err != nil {
				return fmt.Errorf("key %s: %w", k.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: restore keys: %w", mapErr(err))
	}
	return nil
}

// RestoreAudit implements driver.BackupStorage.
func (s *Store) RestoreAudit(ctx context.Context, entries []driver.BackupAudit) error {
	if len(entries) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *wtx) error {
		for i := range entries {
			if err := auditInsert(ctx, tx, entries[i].Workspace, &entries[i].AuditEntry); err != nil {
				return fmt.Errorf("audit entry %s: %w", entries[i].ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: restore audit: %w", mapErr(err))
	}
	return nil
}

// RestoreSyncFiles implements driver.BackupStorage.
func (s *Store) RestoreSyncFiles(ctx context.Context, files []driver.BackupSyncFile) error {
	if len(files) == 0 {
		return nil
	}
	err := s.write(ctx, func(tx *wtx) error {
		for _, f := range files {
			if _, err := tx.ExecContext(ctx, `INSERT INTO sync_files (workspace_id, repo, path, sha, entity_id, sync_status, last_synced)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, f.Workspace, f.Repo, f.Path, f.SHA, f.EntityID.String(), f.Status, micros(f.LastSynced)); err != nil {
				return fmt.Errorf("sync file %s: %w", f.Path, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: restore sync files: %w", mapErr(err))
	}
	return nil
}

// registerWorkspaces enters the workspaces of restored records in the
// workspace directory (a restore writes keys and entities directly, not
// through CreateKey).
func registerWorkspaces[T any](ctx context.Context, tx *wtx, recs []T, of func(T) (string, time.Time)) error {
	seen := map[string]bool{}
	for _, r := range recs {
		ws, at := of(r)
		if seen[ws] {
			continue
		}
		seen[ws] = true
		if err := registerWorkspace(ctx, tx, ws, at); err != nil {
			return fmt.Errorf("workspace %s: %w", ws, err)
		}
	}
	return nil
}
