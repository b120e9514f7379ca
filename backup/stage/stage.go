// Package stage restores a backup the safe way (pgm-admin restore): into
// a staging store next to the target (a new SQLite file in the target's
// directory, or a new PostgreSQL schema in the target's database), then
// verifies it (the manifest's counts and checksums, read back from the
// staging store, and a smoke search), and only then switches it in
// atomically (SQLite: a rename over the target file; PostgreSQL: schema
// renames in one transaction). The old data is kept (a file or schema
// named *_pre_restore_*) until the operator removes it; a restore that
// fails anywhere before the switch leaves the target untouched and drops
// the staging store.
package stage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/driver"
)

// Store is what a staging store offers: the backup seam and the storage
// the smoke search runs against.
type Store interface {
	driver.Storage
	driver.BackupStorage
}

// Target is a store that a backup can be restored into.
type Target interface {
	// Describe names the target for messages (a path or a schema).
	Describe() string
	// Counts counts the target's rows (an absent target holds none).
	Counts(ctx context.Context) (map[string]int64, error)
	// Stage creates a new, empty, migrated staging store.
	Stage(ctx context.Context) (Staging, error)
}

// Staging is a staging store being filled.
type Staging interface {
	Store() Store
	// Describe names the staging store.
	Describe() string
	// Switch makes the staging store the target, atomically, and returns
	// where the old data now is ("" when there was none). The staging
	// store is closed.
	Switch(ctx context.Context) (old string, err error)
	// Discard drops the staging store.
	Discard(ctx context.Context) error
}

// Options configures a restore.
type Options struct {
	// Yes allows restoring over a target that holds data.
	Yes bool
	// DryRun reads and checks the whole backup and the target, and writes
	// nothing.
	DryRun bool
	// Model is the embedding model the installation is configured with
	// (nil: unknown); a backup made with another one restores with a
	// warning naming embeddings migrate.
	Model *postgram.ModelInfo
	// Log receives progress lines. Default: none.
	Log func(format string, args ...any)
}

// Result reports a restore.
type Result struct {
	Manifest *backup.Manifest `json:"manifest"`
	DryRun   bool             `json:"dry_run"`
	Target   string           `json:"target"`
	// Old is where the target's previous data was kept ("" when none).
	Old string `json:"old,omitempty"`
	// Warnings are things the operator must act on (a model mismatch).
	Warnings []string `json:"warnings,omitempty"`
	Seconds  float64  `json:"seconds"`
}

// ErrNotEmpty is returned when the target holds data and Yes is not set.
var ErrNotEmpty = errors.New("the restore target is not empty")

// Restore restores the backup r into target: staged, verified, switched.
func Restore(ctx context.Context, r *backup.Reader, target Target, opts Options) (*Result, error) {
	start := time.Now()
	logf := opts.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	res := &Result{DryRun: opts.DryRun, Target: target.Describe()}
	counts, err := target.Counts(ctx)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if n := nonEmpty(counts); n != "" && !opts.Yes {
		return nil, fmt.Errorf("restore: %w: %s holds %s (pass --yes to replace it; its data is kept aside until the switch succeeds)", ErrNotEmpty, target.Describe(), n)
	}
	if opts.DryRun {
		m, err := backup.Scan(r)
		if err != nil {
			return nil, fmt.Errorf("restore: %w", err)
		}
		res.Manifest = m
		res.Warnings = modelWarnings(m, opts.Model)
		res.Seconds = time.Since(start).Seconds()
		return res, nil
	}
	stg, err := target.Stage(ctx)
	if err != nil {
		return nil, fmt.Errorf("restore: staging store: %w", err)
	}
	switched := false
	defer func() {
		if !switched {
			if err := stg.Discard(context.Background()); err != nil {
				logf("could not drop the staging store %s: %v", stg.Describe(), err)
			}
		}
	}()
	logf("restoring into the staging store %s", stg.Describe())
	var smoke *sample
	recs := stg.Store()
	m, err := backup.Restore(ctx, r, sampling{Store: recs, s: &smoke})
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	res.Manifest = m
	logf("verifying the staging store against the manifest")
	if err := backup.Verify(ctx, recs, m); err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if smoke != nil {
		if err := smoke.check(ctx, recs); err != nil {
			return nil, fmt.Errorf("restore: smoke search: %w", err)
		}
	}
	old, err := stg.Switch(ctx)
	if err != nil {
		return nil, fmt.Errorf("restore: switch: %w", err)
	}
	switched = true
	res.Old = old
	res.Warnings = modelWarnings(m, opts.Model)
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

func nonEmpty(c map[string]int64) string {
	var parts []string
	for _, t := range []string{driver.BackupEntities, driver.BackupEdges, driver.BackupKeys, driver.BackupAuditLog, driver.BackupSyncFiles} {
		if c[t] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[t], t))
		}
	}
	return strings.Join(parts, ", ")
}

func modelWarnings(m *backup.Manifest, want *postgram.ModelInfo) []string {
	if m.Model == nil || want == nil || *m.Model == *want {
		return nil
	}
	return []string{fmt.Sprintf("the backup's embeddings were made by %s/%s (%d dimensions) but this installation is configured for %s/%s (%d): "+
		"keyword search works now; run `pgm-admin embeddings migrate` to re-embed with the configured model",
		m.Model.Provider, m.Model.Name, m.Model.Dimensions, want.Provider, want.Name, want.Dimensions)}
}

// sample is what the smoke search looks for: one restored chunk.
type sample struct {
	ws       string
	entity   uuid.UUID
	chunk    uuid.UUID
	term     string
	modelID  int64
	vector   []float32
	archived bool
}

// sampling remembers the first entity with a searchable chunk.
type sampling struct {
	Store
	s **sample
}

func (w sampling) RestoreEntities(ctx context.Context, recs []*driver.BackupEntity) error {
	if *w.s == nil {
		for _, r := range recs {
			if r.Entity.Status == postgram.StatusArchived {
				continue
			}
			for _, c := range r.Chunks {
				term := firstWord(c.Content)
				if term == "" {
					continue
				}
				*w.s = &sample{ws: r.Workspace, entity: r.Entity.ID, chunk: c.ID, term: term, modelID: c.ModelID, vector: c.Embedding}
				break
			}
			if *w.s != nil {
				break
			}
		}
	}
	return w.Store.RestoreEntities(ctx, recs)
}

// firstWord returns a plain lower-case word of content (letters only, 3
// to 20 of them), the kind every keyword index keeps as written.
func firstWord(content string) string {
	for _, f := range strings.Fields(content) {
		if len(f) < 3 || len(f) > 20 {
			continue
		}
		ok := true
		for _, r := range f {
			if r < 'a' || r > 'z' {
				ok = false
				break
			}
		}
		if ok {
			return f
		}
	}
	return ""
}

// check finds the sampled chunk by keyword and, when it has an
// embedding, by vector.
func (s *sample) check(ctx context.Context, st Store) error {
	f := driver.EntityFilter{IncludeArchived: true}
	hits, err := st.KeywordProbe(ctx, s.ws, driver.KeywordQuery{Filter: f, Terms: []string{s.term}, Mode: driver.ProbeAll, Limit: 100000, Bare: true})
	if err != nil {
		return fmt.Errorf("keyword search for %q: %w", s.term, err)
	}
	found := false
	for _, h := range hits {
		found = found || h.ChunkID == s.chunk
	}
	if !found {
		return fmt.Errorf("keyword search for %q did not find chunk %s of entity %s", s.term, s.chunk, s.entity)
	}
	if s.vector == nil {
		return nil
	}
	vr, err := st.VectorSearch(ctx, s.ws, driver.VectorQuery{Filter: f, ModelID: s.modelID, Vector: s.vector, Limit: 5, Strategy: postgram.StrategyExact})
	if err != nil {
		return fmt.Errorf("vector search: %w", err)
	}
	for _, h := range vr.Hits {
		if h.ChunkID == s.chunk || h.Similarity > 0.9999 {
			return nil
		}
	}
	return fmt.Errorf("vector search by chunk %s's own embedding did not find it", s.chunk)
}
