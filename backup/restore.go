package backup

import (
	"context"
	"fmt"

	"github.com/postgram-go/postgram/driver"
)

// Batch sizes of a restore: entities (with chunks) and other rows per
// transaction.
const (
	restoreEntityBatch = 500
	restoreRowBatch    = 5000
	// restoreBatchBytes caps the embeddings held for one entity batch.
	restoreBatchBytes = 64 << 20
)

// Restore writes every record of r into st (a new, empty staging store),
// then builds its deferred indexes. It returns the manifest once the
// stream matched it; st then holds the backup, but the caller must still
// Verify it. On error st holds part of the backup and must be discarded.
func Restore(ctx context.Context, r *Reader, st driver.BackupStorage) (*Manifest, error) {
	var (
		models   []driver.BackupModel
		entities []*driver.BackupEntity
		entBytes int
		edges    []driver.BackupEdge
		keys     []driver.BackupKey
		audit    []driver.BackupAudit
		files    []driver.BackupSyncFile
	)
	flushModels := func() error {
		if len(models) == 0 {
			return nil
		}
		err := st.RestoreModels(ctx, models)
		models = nil
		return err
	}
	flushEntities := func() error {
		if len(entities) == 0 {
			return nil
		}
		err := st.RestoreEntities(ctx, entities)
		entities, entBytes = nil, 0
		return err
	}
	flushEdges := func() error {
		if len(edges) == 0 {
			return nil
		}
		err := st.RestoreEdges(ctx, edges)
		edges = nil
		return err
	}
	flushKeys := func() error {
		if len(keys) == 0 {
			return nil
		}
		err := st.RestoreKeys(ctx, keys)
		keys = nil
		return err
	}
	flushAudit := func() error {
		if len(audit) == 0 {
			return nil
		}
		err := st.RestoreAudit(ctx, audit)
		audit = nil
		return err
	}
	flushFiles := func() error {
		if len(files) == 0 {
			return nil
		}
		err := st.RestoreSyncFiles(ctx, files)
		files = nil
		return err
	}
	// Tables arrive in order; a table's first record flushes the ones
	// before it (models before entities, entities before edges, ...).
	order := []func() error{flushModels, flushEntities, flushEdges, flushKeys, flushAudit, flushFiles}
	before := func(i int) error {
		for _, f := range order[:i] {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	}
	flushAll := func() error { return before(len(order)) }
	m, err := r.Each(Records{
		Model: func(m *driver.BackupModel) error {
			models = append(models, *m)
			return nil
		},
		Entity: func(e *driver.BackupEntity) error {
			if err := before(1); err != nil {
				return err
			}
			entities = append(entities, e)
			for _, c := range e.Chunks {
				entBytes += 4*len(c.Embedding) + len(c.Content)
			}
			if len(entities) >= restoreEntityBatch || entBytes >= restoreBatchBytes {
				return flushEntities()
			}
			return ctx.Err()
		},
		Edge: func(e *driver.BackupEdge) error {
			if err := before(2); err != nil {
				return err
			}
			edges = append(edges, *e)
			if len(edges) >= restoreRowBatch {
				return flushEdges()
			}
			return nil
		},
		Key: func(k *driver.BackupKey) error {
			if err := before(3); err != nil {
				return err
			}
			keys = append(keys, *k)
			return nil
		},
		Audit: func(a *driver.BackupAudit) error {
			if err := before(4); err != nil {
				return err
			}
			audit = append(audit, *a)
			if len(audit) >= restoreRowBatch {
				return flushAudit()
			}
			return nil
		},
		SyncFile: func(f *driver.BackupSyncFile) error {
			if err := before(5); err != nil {
				return err
			}
			files = append(files, *f)
			if len(files) >= restoreRowBatch {
				return flushFiles()
			}
			return nil
		},
	})
	if err != nil {
		return nil, fmt.Errorf("backup: restore: %w", err)
	}
	if err := flushAll(); err != nil {
		return nil, fmt.Errorf("backup: restore: %w", err)
	}
	if err := st.FinishRestore(ctx); err != nil {
		return nil, fmt.Errorf("backup: restore: %w", err)
	}
	return m, nil
}

// Scan reads the whole backup without restoring it (a dry run, or backup
// list --verify) and returns its manifest once every byte matched it.
func Scan(r *Reader) (*Manifest, error) {
	m, err := r.Each(Records{})
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	return m, nil
}
