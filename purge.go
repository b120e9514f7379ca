package postgram

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/validate"
)

// PurgeRequest selects the entities a purge hard-deletes. The selectors
// combine (an entity must match each one given); at least one is needed.
type PurgeRequest struct {
	// IDs names entities, whatever their status.
	IDs []uuid.UUID
	// ArchivedBefore selects archived entities last changed before it.
	ArchivedBefore time.Time
	// Type selects entities of this type (any status, unless
	// ArchivedBefore is set too).
	Type EntityType
	// DryRun only lists what would be purged.
	DryRun bool
	// NoScrub skips the scrub of the store's files after the purge
	// (PurgeStorage.ScrubDeleted), which on SQLite rewrites the file.
	NoScrub bool
}

// PurgeResult reports a purge.
type PurgeResult struct {
	DryRun bool        `json:"dry_run"`
	IDs    []uuid.UUID `json:"ids"`
	driver.PurgeCounts
	Scrubbed bool `json:"scrubbed"`
}

// purgeBatch is how many entities one purge transaction deletes (and one
// audit entry names).
const purgeBatch = 500

// Purge hard-deletes the entities req selects: content, chunks and
// embeddings, their edges (derived ones retracted as on Delete), sync
// state and the persisted query-embedding cache. Each batch of up to 500
// entities is one transaction with one admin.purge audit entry naming its
// ids and counts, never content; the audit log itself is kept. Then the
// store's files are scrubbed (PurgeStorage.ScrubDeleted) unless
// req.NoScrub. Soft delete (Delete) stays the default
// everywhere else.
func (a *Admin) Purge(ctx context.Context, req PurgeRequest) (*PurgeResult, error) {
	c := a.c
	ps := c.store
	if len(req.IDs) == 0 && req.ArchivedBefore.IsZero() && req.Type == "" {
		return nil, validate.Invalid("ids", "name entities to purge (ids), or select them by archived_before or type")
	}
	if req.Type != "" && !req.Type.Valid() {
		return nil, validate.Invalid("type", "unknown entity type %q", req.Type)
	}
	// A cut-off in the future is a mistake (a minute's leeway for clocks).
	if !req.ArchivedBefore.IsZero() && req.ArchivedBefore.After(c.now().Add(time.Minute)) {
		return nil, validate.Invalid("archived_before", "%s is in the future", req.ArchivedBefore.Format(time.RFC3339))
	}
	ids, err := c.purgeSelect(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("purge: %w", err)
	}
	res := &PurgeResult{DryRun: req.DryRun, IDs: ids}
	if req.DryRun || len(ids) == 0 {
		res.Entities = len(ids)
		return res, nil
	}
	for start := 0; start < len(ids); start += purgeBatch {
		batch := ids[start:min(start+purgeBatch, len(ids))]
		names := make([]string, len(batch))
		for i, id := range batch {
			names[i] = id.String()
		}
		audit := c.auditEntry("admin.purge", "", map[string]any{"ids": names})
		n, err := ps.PurgeEntities(ctx, c.ws, batch, audit)
		if err != nil {
			return res, fmt.Errorf("purge: %w (%d entities purged before)", err, res.Entities)
		}
		res.Add(n)
	}
	if !req.NoScrub {
		if err := ps.ScrubDeleted(ctx); err != nil {
			return res, fmt.Errorf("purge: %d entities purged, but scrubbing the store's files failed (run the purge again to retry): %w", res.Entities, err)
		}
		res.Scrubbed = true
	}
	return res, nil
}

// purgeSelect lists the ids req selects.
func (c *Client) purgeSelect(ctx context.Context, req PurgeRequest) ([]uuid.UUID, error) {
	match := func(e *Entity) bool {
		if req.Type != "" && e.Type != req.Type {
			return false
		}
		if !req.ArchivedBefore.IsZero() && (e.Status != StatusArchived || !e.UpdatedAt.Before(req.ArchivedBefore)) {
			return false
		}
		return true
	}
	var out []uuid.UUID
	if len(req.IDs) > 0 {
		seen := map[uuid.UUID]bool{}
		for start := 0; start < len(req.IDs); start += purgeBatch {
			es, err := c.store.GetEntities(ctx, c.ws, req.IDs[start:min(start+purgeBatch, len(req.IDs))])
			if err != nil {
				return nil, err
			}
			for _, e := range es {
				if match(e) && !seen[e.ID] {
					seen[e.ID] = true
					out = append(out, e.ID)
				}
			}
		}
		return out, nil
	}
	f := driver.EntityFilter{IncludeArchived: true}
	if req.Type != "" {
		f.Types = []EntityType{req.Type}
	}
	if !req.ArchivedBefore.IsZero() {
		f.Statuses = []Status{StatusArchived}
		f.UpdatedBefore = req.ArchivedBefore
	}
	for offset := 0; ; offset += purgeBatch {
		es, total, err := c.store.ListEntities(ctx, c.ws, f, purgeBatch, offset, 0)
		if err != nil {
			return nil, err
		}
		for _, e := range es {
			if match(e) {
				out = append(out, e.ID)
			}
		}
		if len(es) < purgeBatch || offset+len(es) >= total {
			return out, nil
		}
	}
}
