package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/pgvector/pgvector-go"

	"github.com/postgram-go/postgram/driver"
)

var _ driver.BackupStorage = (*Store)(nil)

// backupPage is how many entities (with their chunks) one page of a
// backup reads; backupRowPage how many rows of the other tables.
const (
	backupPage    = 500
	backupRowPage = 2000
)

// ReadBackup implements driver.BackupStorage: one REPEATABLE READ,
// read-only transaction (one snapshot) read page by page along primary
// keys.
func (s *Store) ReadBackup(ctx context.Context, sink driver.BackupSink) error {
	err := pgx.BeginTxFunc(ctx, s.owner, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := backupModels(ctx, tx, sink); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT workspace_id FROM entities UNION SELECT workspace_id FROM api_keys
			UNION SELECT workspace_id FROM audit_log`)
		if err != nil {
			return err
		}
		wss, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		// Byte order, as SQLite sorts: a backup's records come in the same
		// order whichever backend wrote them.
		slices.Sort(wss)
		for _, step := range []func(context.Context, pgx.Tx, string, driver.BackupSink) error{
			backupEntities, backupEdges, backupKeys, backupAudit, backupSyncFiles,
		} {
			for _, ws := range wss {
				if err := step(ctx, tx, ws, sink); err != nil {
					return err
				}
			}
		}
		return nil
	})
	var cb errCallback
	if errors.As(err, &cb) {
		return cb.err
	}
	if err != nil {
		return fmt.Errorf("postgres: read backup: %w", mapErr(err))
	}
	return nil
}

func backupModels(ctx context.Context, tx pgx.Tx, sink driver.BackupSink) error {
	rows, err := tx.Query(ctx, "SELECT id, provider, name, dimensions, is_active, created_at FROM embedding_models ORDER BY id")
	if err != nil {
		return err
	}
	models, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.BackupModel, error) {
		var m driver.BackupModel
		err := r.Scan(&m.ID, &m.Provider, &m.Name, &m.Dimensions, &m.Active, &m.CreatedAt)
		m.CreatedAt = m.CreatedAt.UTC()
		return m, err
	})
	if err != nil {
		return err
	}
	for i := range models {
		if err := sink.Model(&models[i]); err != nil {
			return errCallback{err}
		}
	}
	return nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func backupEntities(ctx context.Context, tx pgx.Tx, ws string, sink driver.BackupSink) error {
	var after *uuid.UUID
	for {
		rows, err := tx.Query(ctx, "SELECT e.workspace_id, "+entityCols+`, e.metadata, e.chunk_generation,
				e.enrichment_queued_at, e.enrichment_retry_at, e.extraction_queued_at, e.extraction_retry_at,
				e.extraction_provider, e.extraction_model
			FROM entities e WHERE e.workspace_id = $1 AND ($2::uuid IS NULL OR e.id > $2)
			ORDER BY e.id LIMIT $3`, ws, after, backupPage)
		if err != nil {
			return err
		}
		var recs []*driver.BackupEntity
		for rows.Next() {
			r := &driver.BackupEntity{}
			var raw []byte
			var qa, ra, xqa, xra *time.Time
			e, err := scanEntityAfter(rows, &r.Workspace, &raw, &r.ChunkGeneration, &qa, &ra, &xqa, &xra, &r.ExtractionProvider, &r.ExtractionModel)
			if err != nil {
				rows.Close()
				return err
			}
			e.Metadata = nil
			r.Entity, r.Metadata = *e, json.RawMessage(raw)
			r.EnrichmentQueuedAt, r.EnrichmentRetryAt, r.ExtractionQueuedAt, r.ExtractionRetryAt = utcPtr(qa), utcPtr(ra), utcPtr(xqa), utcPtr(xra)
			recs = append(recs, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(recs) == 0 {
			return nil
		}
		if err := backupChunks(ctx, tx, recs); err != nil {
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
		after = &recs[len(recs)-1].Entity.ID
	}
}

// scanEntityAfter scans a row of "workspace_id, entityCols, extra...".
func scanEntityAfter(rows pgx.Rows, ws *string, extra ...any) (*driver.Entity, error) {
	var e driver.Entity
	var meta []byte
	dest := []any{ws, &e.ID, &e.Type, &e.Content, &e.Visibility, &e.Owner, &e.Status, &e.Tags, &e.Source, &meta,
		&e.ClientID, &e.Version, &e.EnrichmentStatus, &e.EnrichmentAttempts, &e.EnrichmentError,
		&e.ExtractionStatus, &e.ExtractionAttempts, &e.ExtractionError, &e.CreatedAt, &e.UpdatedAt}
	if err := rows.Scan(append(dest, extra...)...); err != nil {
		return nil, err
	}
	if e.Tags == nil {
		e.Tags = []string{}
	}
	e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	return &e, nil
}

// backupChunks reads the chunks of one page of entities.
func backupChunks(ctx context.Context, tx pgx.Tx, recs []*driver.BackupEntity) error {
	type key struct {
		ws string
		id uuid.UUID
	}
	byID := make(map[key]*driver.BackupEntity, len(recs))
	wss := make([]string, len(recs))
	ids := make([]uuid.UUID, len(recs))
	for i, r := range recs {
		byID[key{r.Workspace, r.Entity.ID}] = r
		wss[i], ids[i] = r.Workspace, r.Entity.ID
	}
	rows, err := tx.Query(ctx, `SELECT c.workspace_id, c.entity_id, c.id, c.chunk_index, c.content, c.start_offset, c.end_offset,
			coalesce(c.model_id, 0), c.embedding
		FROM unnest($1::text[], $2::uuid[]) AS u(ws, id)
		JOIN chunks c ON c.workspace_id = u.ws AND c.entity_id = u.id
		ORDER BY c.workspace_id, c.entity_id, c.chunk_index`, wss, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var k key
		var c driver.BackupChunk
		var vec *pgvector.Vector
		if err := rows.Scan(&k.ws, &k.id, &c.ID, &c.Index, &c.Content, &c.Start, &c.End, &c.ModelID, &vec); err != nil {
			return err
		}
		if vec != nil {
			c.Embedding = vec.Slice()
		} else {
			c.ModelID = 0
		}
		if r := byID[k]; r != nil {
			r.Chunks = append(r.Chunks, c)
		}
	}
	return rows.Err()
}

func backupEdges(ctx context.Context, tx pgx.Tx, ws string, sink driver.BackupSink) error {
	var after *uuid.UUID
	for {
		rows, err := tx.Query(ctx, "SELECT ed.workspace_id, "+edgeCols+` FROM edges ed
			WHERE ed.workspace_id = $1 AND ($2::uuid IS NULL OR ed.id > $2) ORDER BY ed.id LIMIT $3`, ws, after, backupRowPage)
		if err != nil {
			return err
		}
		var edges []driver.BackupEdge
		for rows.Next() {
			var w string
			e, err := scanEdgeAfter(rows, &w)
			if err != nil {
				rows.Close()
				return err
			}
			e.Confidence = float32Value(e.Confidence)
			edges = append(edges, driver.BackupEdge{Workspace: w, Edge: e})
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
		after = &edges[len(edges)-1].ID
	}
}

// scanEdgeAfter scans "workspace_id, edgeCols".
func scanEdgeAfter(rows pgx.Rows, ws *string) (driver.Edge, error) {
	var e driver.Edge
	var meta []byte
	if err := rows.Scan(ws, &e.ID, &e.SourceID, &e.TargetID, &e.Relation, &e.Confidence, &e.Source, &meta,
		&e.OriginID, &e.Provider, &e.Model, &e.PromptVersion, &e.CreatedAt, &e.UpdatedAt); err != nil {
		return e, err
	}
	if len(meta) > 0 {
		if err := json.Unmarshal(meta, &e.Metadata); err != nil {
			return e, fmt.Errorf("decode metadata of edge %s: %w", e.ID, err)
		}
	}
	if e.Metadata == nil {
		e.Metadata = map[string]any{}
	}
	e.CreatedAt, e.UpdatedAt = e.CreatedAt.UTC(), e.UpdatedAt.UTC()
	return e, nil
}

func backupKeys(ctx context.Context, tx pgx.Tx, ws string, sink driver.BackupSink) error {
	rows, err := tx.Query(ctx, "SELECT workspace_id, key_hash, "+keyCols+" FROM api_keys WHERE workspace_id = $1 ORDER BY id", ws)
	if err != nil {
		return err
	}
	var keys []driver.BackupKey
	for rows.Next() {
		var bk driver.BackupKey
		k, err := scanKeyAfter(rows, &bk.Workspace, &bk.Hash)
		if err != nil {
			rows.Close()
			return err
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

// scanKeyAfter scans "workspace_id, key_hash, keyCols".
func scanKeyAfter(rows pgx.Rows, ws *string, hash *[]byte) (*driver.APIKey, error) {
	var k driver.APIKey
	var scopes, types, vis []string
	if err := rows.Scan(ws, hash, &k.ID, &k.Name, &k.Prefix, &scopes, &types, &vis, &k.ClientID, &k.CreatedAt, &k.RevokedAt, &k.LastUsedAt, &k.ExpiresAt); err != nil {
		return nil, err
	}
	k.Scopes = []driver.Scope{}
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
	k.RevokedAt, k.LastUsedAt, k.ExpiresAt = utcPtr(k.RevokedAt), utcPtr(k.LastUsedAt), utcPtr(k.ExpiresAt)
	return &k, nil
}

func backupAudit(ctx context.Context, tx pgx.Tx, ws string, sink driver.BackupSink) error {
	var after *uuid.UUID
	for {
		rows, err := tx.Query(ctx, `SELECT workspace_id, id, at, key_id, client_id, operation, entity_id, details FROM audit_log
			WHERE workspace_id = $1 AND ($2::uuid IS NULL OR id > $2) ORDER BY id LIMIT $3`, ws, after, backupRowPage)
		if err != nil {
			return err
		}
		var out []driver.BackupAudit
		for rows.Next() {
			var a driver.BackupAudit
			var details []byte
			if err := rows.Scan(&a.Workspace, &a.ID, &a.At, &a.KeyID, &a.ClientID, &a.Operation, &a.EntityID, &details); err != nil {
				rows.Close()
				return err
			}
			if err := json.Unmarshal(details, &a.Details); err != nil {
				rows.Close()
				return fmt.Errorf("decode details of audit entry %s: %w", a.ID, err)
			}
			a.At = a.At.UTC()
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
		after = &out[len(out)-1].ID
	}
}

func backupSyncFiles(ctx context.Context, tx pgx.Tx, ws string, sink driver.BackupSink) error {
	rows, err := tx.Query(ctx, `SELECT workspace_id, repo, path, sha, entity_id, sync_status, last_synced FROM sync_files
		WHERE workspace_id = $1 ORDER BY repo COLLATE "C", path COLLATE "C"`, ws)
	if err != nil {
		return err
	}
	files, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (driver.BackupSyncFile, error) {
		var f driver.BackupSyncFile
		err := r.Scan(&f.Workspace, &f.Repo, &f.Path, &f.SHA, &f.EntityID, &f.Status, &f.LastSynced)
		f.LastSynced = f.LastSynced.UTC()
		return f, err
	})
	if err != nil {
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
	err := s.owner.QueryRow(ctx, `SELECT (SELECT count(*) FROM embedding_models), (SELECT count(*) FROM entities),
			(SELECT count(*) FROM chunks), (SELECT count(*) FROM chunks WHERE embedding IS NOT NULL),
			(SELECT count(*) FROM edges), (SELECT count(*) FROM api_keys), (SELECT count(*) FROM audit_log),
			(SELECT count(*) FROM sync_files)`).Scan(&m, &e, &c, &v, &ed, &k, &a, &sf)
	if err != nil {
		return nil, fmt.Errorf("postgres: count rows: %w", mapErr(err))
	}
	return map[string]int64{driver.BackupModels: m, driver.BackupEntities: e, driver.BackupChunks: c,
		driver.BackupVectors: v, driver.BackupEdges: ed, driver.BackupKeys: k, driver.BackupAuditLog: a,
		driver.BackupSyncFiles: sf}, nil
}

// RestoreModels implements driver.BackupStorage. The models keep their
// ids (the sequence moves past them); the HNSW index of each is built by
// FinishRestore, after the chunks are in.
func (s *Store) RestoreModels(ctx context.Context, models []driver.BackupModel) error {
	err := s.inOwnerTx(ctx, func(tx pgx.Tx) error {
		for _, m := range models {
			if _, err := tx.Exec(ctx, `INSERT INTO embedding_models (id, provider, name, dimensions, is_active, created_at)
				VALUES ($1, $2, $3, $4, $5, $6)`, m.ID, m.Provider, m.Name, m.Dimensions, m.Active, m.CreatedAt); err != nil {
				return fmt.Errorf("model %d: %w", m.ID, err)
			}
		}
		_, err := tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence('embedding_models', 'id'),
			greatest((SELECT max(id) FROM embedding_models), 1))`)
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: restore models: %w", mapErr(err))
	}
	s.mu.Lock()
	s.models = map[int64]driver.ModelInfo{}
	s.mu.Unlock()
	return nil
}

// FinishRestore builds what a restore deferred: the HNSW index of every
// model that has embeddings, and fresh planner statistics.
func (s *Store) FinishRestore(ctx context.Context) error {
	rows, err := s.owner.Query(ctx, "SELECT id, dimensions FROM embedding_models ORDER BY id")
	if err != nil {
		return fmt.Errorf("postgres: finish restore: %w", mapErr(err))
	}
	type md struct {
		id   int64
		dims int
	}
	ms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (md, error) {
		var m md
		return m, r.Scan(&m.id, &m.dims)
	})
	if err != nil {
		return fmt.Errorf("postgres: finish restore: %w", mapErr(err))
	}
	for _, m := range ms {
		err := pgx.BeginFunc(ctx, s.owner, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL maintenance_work_mem = '1GB'"); err != nil {
				return err
			}
			return s.createVectorIndex(ctx, tx, m.id, m.dims)
		})
		if err != nil {
			return fmt.Errorf("postgres: finish restore: vector index of model %d: %w", m.id, mapErr(err))
		}
	}
	if _, err := s.owner.Exec(ctx, "ANALYZE entities, chunks, edges"); err != nil {
		return fmt.Errorf("postgres: finish restore: analyze: %w", mapErr(err))
	}
	return nil
}

// RestoreEntities implements driver.BackupStorage: entities through one
// pipelined batch, chunks with COPY.
func (s *Store) RestoreEntities(ctx context.Context, recs []*driver.BackupEntity) error {
	if len(recs) == 0 {
		return nil
	}
	err := s.inOwnerTx(ctx, func(tx pgx.Tx) error {
		if err := registerWorkspaces(ctx, tx, recs, func(r *driver.BackupEntity) (string, time.Time) { return r.Workspace, r.Entity.CreatedAt }); err != nil {
			return err
		}
		b := &pgx.Batch{}
		var chunkRows [][]any
		for _, r := range recs {
			e := &r.Entity
			meta := []byte(r.Metadata)
			if len(meta) == 0 {
				meta = []byte("{}")
			}
			b.Queue(`INSERT INTO entities (workspace_id, id, type, content, visibility, owner, status, tags, source, metadata,
					client_id, version, chunk_generation, enrichment_status, enrichment_attempts, enrichment_error,
					enrichment_queued_at, enrichment_retry_at, extraction_status, extraction_attempts, extraction_error,
					extraction_queued_at, extraction_retry_at, extraction_provider, extraction_model, created_at, updated_at, head)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21,
					$22, $23, $24, $25, $26, $27, to_tsvector('simple', $28))`,
				r.Workspace, e.ID, e.Type, e.Content, e.Visibility, e.Owner, e.Status, tagsOrEmpty(e.Tags), e.Source, meta,
				e.ClientID, e.Version, r.ChunkGeneration, e.EnrichmentStatus, e.EnrichmentAttempts, e.EnrichmentError,
				r.EnrichmentQueuedAt, r.EnrichmentRetryAt, e.ExtractionStatus, e.ExtractionAttempts, e.ExtractionError,
				r.ExtractionQueuedAt, r.ExtractionRetryAt, r.ExtractionProvider, r.ExtractionModel, e.CreatedAt, e.UpdatedAt,
				entityHead(e.Content, nil, meta))
			for _, c := range r.Chunks {
				var vec any
				var model any
				if c.Embedding != nil {
					vec, model = pgvector.NewVector(c.Embedding), c.ModelID
				}
				chunkRows = append(chunkRows, []any{r.Workspace, c.ID, e.ID, c.Index, c.Content, c.Start, c.End, vec, model})
			}
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"chunks"},
			[]string{"workspace_id", "id", "entity_id", "chunk_index", "content", "start_offset", "end_offset", "embedding", "model_id"},
			pgx.CopyFromRows(chunkRows))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: restore entities: %w", mapErr(err))
	}
	return nil
}

// RestoreEdges implements driver.BackupStorage.
func (s *Store) RestoreEdges(ctx context.Context, edges []driver.BackupEdge) error {
	if len(edges) == 0 {
		return nil
	}
	rows := make([][]any, len(edges))
	for i, e := range edges {
		meta, err := metadataJSON(e.Metadata)
		if err != nil {
			return fmt.Errorf("postgres: restore edges: metadata of edge %s: %w", e.ID, err)
		}
		rows[i] = []any{e.Workspace, e.ID, e.SourceID, e.TargetID, e.Relation, float32(e.Confidence), e.Source, meta,
			e.OriginID, e.Provider, e.Model, e.PromptVersion, e.CreatedAt, e.UpdatedAt}
	}
	err := s.inOwnerTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"edges"}, []string{"workspace_id", "id", "source_id", "target_id", "relation",
			"confidence", "source", "metadata", "origin_id", "provider", "model", "prompt_version", "created_at", "updated_at"},
			pgx.CopyFromRows(rows))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: restore edges: %w", mapErr(err))
	}
	return nil
}

// RestoreKeys implements driver.BackupStorage.
func (s *Store) RestoreKeys(ctx context.Context, keys []driver.BackupKey) error {
	if len(keys) == 0 {
		return nil
	}
	err := s.inOwnerTx(ctx, func(tx pgx.Tx) error {
		if err := registerWorkspaces(ctx, tx, keys, func(k driver.BackupKey) (string, time.Time) { return k.Workspace, k.CreatedAt }); err != nil {
			return err
		}
		for _, k := range keys {
			scopes := make([]string, len(k.Scopes))
			for i, sc := range k.Scopes {
				scopes[i] = string(sc)
			}
			types := make([]string, len(k.AllowedTypes))
			for i, t := range k.AllowedTypes {
				types[i] = string(t)
			}
			vis := make([]string, len(k.AllowedVisibilities))
			for i, v := range k.AllowedVisibilities {
				vis[i] = string(v)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO api_keys (workspace_id, id, name, prefix, key_hash, scopes, allowed_types,
					allowed_visibilities, client_id, created_at, revoked_at, last_used_at, expires_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
				k.Workspace, k.ID, k.Name, k.Prefix, k.Hash, scopes, types, vis, k.ClientID, k.CreatedAt, k.RevokedAt, k.LastUsedAt, k.ExpiresAt); err != nil {
				return fmt.Errorf("key %s: %w", k.ID, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("postgres: restore keys: %w", mapErr(err))
	}
	return nil
}

// RestoreAudit implements driver.BackupStorage.
func (s *Store) RestoreAudit(ctx context.Context, entries []driver.BackupAudit) error {
	if len(entries) == 0 {
		return nil
	}
	rows := make([][]any, len(entries))
	for i, a := range entries {
		details, err := metadataJSON(a.Details)
		if err != nil {
			return fmt.Errorf("postgres: restore audit: details of %s: %w", a.ID, err)
		}
		rows[i] = []any{a.Workspace, a.ID, a.At, a.KeyID, a.ClientID, a.Operation, a.EntityID, details}
	}
	err := s.inOwnerTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"audit_log"},
			[]string{"workspace_id", "id", "at", "key_id", "client_id", "operation", "entity_id", "details"}, pgx.CopyFromRows(rows))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: restore audit: %w", mapErr(err))
	}
	return nil
}

// RestoreSyncFiles implements driver.BackupStorage.
func (s *Store) RestoreSyncFiles(ctx context.Context, files []driver.BackupSyncFile) error {
	if len(files) == 0 {
		return nil
	}
	rows := make([][]any, len(files))
	for i, f := range files {
		rows[i] = []any{f.Workspace, f.Repo, f.Path, f.SHA, f.EntityID, f.Status, f.LastSynced}
	}
	err := s.inOwnerTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"sync_files"},
			[]string{"workspace_id", "repo", "path", "sha", "entity_id", "sync_status", "last_synced"}, pgx.CopyFromRows(rows))
		return err
	})
	if err != nil {
		return fmt.Errorf("postgres: restore sync files: %w", mapErr(err))
	}
	return nil
}

// registerWorkspaces enters the workspaces of restored records in the
// workspace directory (a restore writes keys and entities directly, not
// through CreateKey).
func registerWorkspaces[T any](ctx context.Context, tx pgx.Tx, recs []T, of func(T) (string, time.Time)) error {
	seen := map[string]bool{}
	for _, r := range recs {
		ws, at := of(r)
		if seen[ws] {
			continue
		}
		seen[ws] = true
		if err := registerWorkspace(withWS(ctx, ws), tx, ws, at); err != nil {
			return fmt.Errorf("workspace %s: %w", ws, err)
		}
	}
	return nil
}
