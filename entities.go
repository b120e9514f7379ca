package postgram

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/chunk"
	"github.com/postgram-go/postgram/internal/validate"
)

// chunksFor splits content into chunk rows with fresh ids.
func (c *core) chunksFor(content string) []driver.ChunkInput {
	parts := chunk.Split(content, c.chunkCfg)
	out := make([]driver.ChunkInput, len(parts))
	for i, p := range parts {
		out[i] = driver.ChunkInput{ID: newID(), Index: p.Index, Content: p.Text, Start: p.Start, End: p.End}
	}
	return out
}

// rechunk is the one place a content change resets an entity's
// enrichment: it returns next's new chunks and marks its embedding pending
// (fresh attempts) and its extraction due again. Every write path that
// changes content (Update, sync) goes through it; the backend replaces the
// chunks and clears leases and retry times in the same transaction.
func (c *core) rechunk(next *Entity) []driver.ChunkInput {
	next.EnrichmentStatus, next.EnrichmentAttempts, next.EnrichmentError = StagePending, 0, ""
	next.ExtractionStatus = c.extractionStatusFor(next, false)
	return c.chunksFor(next.Content)
}

// newID returns a time-ordered UUID (v7), which keeps B-tree inserts local.
func newID() uuid.UUID {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.New()
	}
	return id
}

// Store validates in, writes the entity with its chunks (so keyword search
// finds it as soon as Store returns) and queues it for embedding.
func (c *Client) Store(ctx context.Context, in StoreInput) (*Entity, error) {
	if err := c.principal.need(ScopeWrite, "store"); err != nil {
		return nil, err
	}
	e, err := c.newEntity(in)
	if err != nil {
		return nil, err
	}
	if err := c.principal.canWrite(e.Type, e.Visibility); err != nil {
		return nil, err
	}
	audit := c.auditEntry("entity.store", e.ID.String(), map[string]any{"type": e.Type})
	if err := c.store.CreateEntity(ctx, c.ws, e, c.chunksFor(e.Content), audit); err != nil {
		return nil, fmt.Errorf("store entity: %w", err)
	}
	c.wake()
	return e, nil
}

// newEntity validates a StoreInput and builds the entity to insert.
func (c *Client) newEntity(in StoreInput) (*Entity, error) {
	if err := validateType("type", in.Type); err != nil {
		return nil, err
	}
	if err := validate.Content("content", in.Content, true); err != nil {
		return nil, err
	}
	if in.Visibility == "" {
		in.Visibility = VisibilityShared
	}
	if err := validateVisibility("visibility", in.Visibility); err != nil {
		return nil, err
	}
	if in.Status == "" {
		in.Status = StatusActive
		if in.Type == TypeTask {
			in.Status = StatusInbox
		}
	}
	if err := validateStatus("status", in.Status); err != nil {
		return nil, err
	}
	if err := validate.Short("owner", in.Owner, MaxOwnerLen); err != nil {
		return nil, err
	}
	if err := validate.Short("source", in.Source, MaxSourceLen); err != nil {
		return nil, err
	}
	tags, err := validate.Tags("tags", in.Tags)
	if err != nil {
		return nil, err
	}
	if err := validateMetadata("metadata", in.Metadata); err != nil {
		return nil, err
	}
	meta := driver.CloneMetadata(in.Metadata)
	if meta == nil {
		meta = map[string]any{}
	}
	if in.Type == TypeMemory {
		if _, ok := meta["memory_role"]; !ok {
			meta["memory_role"] = string(RoleDurableMemory)
		}
	}
	now := c.now()
	id := in.ID
	if id == uuid.Nil {
		id = newID()
	}
	e := &Entity{
		ID:               id,
		Type:             in.Type,
		Content:          in.Content,
		Visibility:       in.Visibility,
		Owner:            in.Owner,
		Status:           in.Status,
		Tags:             tags,
		Source:           in.Source,
		Metadata:         meta,
		Version:          1,
		ClientID:         c.principal.clientID(),
		EnrichmentStatus: StagePending,
		CreatedAt:        now,
		UpdatedAt:        now,
	}
	e.ExtractionStatus = c.extractionStatusFor(e, in.SkipExtraction)
	return e, nil
}

// Recall returns one entity. An entity the caller may not see is reported
// as not found.
func (c *Client) Recall(ctx context.Context, id uuid.UUID) (*Entity, error) {
	if err := c.principal.need(ScopeRead, "recall"); err != nil {
		return nil, err
	}
	e, err := c.get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	return e, nil
}

// get loads an entity the principal may see; others are not found.
func (c *Client) get(ctx context.Context, id uuid.UUID) (*Entity, error) {
	e, err := c.store.GetEntity(ctx, c.ws, id)
	if err != nil {
		return nil, err
	}
	if !c.canSee(e) {
		return nil, fmt.Errorf("entity %s: %w", id, ErrNotFound)
	}
	return e, nil
}

// Update applies a partial update. in.Version must be the version the
// caller read; a stale one returns a *ConflictError carrying the current
// entity. Changing content re-chunks the entity and queues it for
// embedding again.
func (c *Client) Update(ctx context.Context, id uuid.UUID, in UpdateInput) (*Entity, error) {
	if err := c.principal.need(ScopeWrite, "update"); err != nil {
		return nil, err
	}
	if in.Version < 1 {
		return nil, validate.Invalid("version", "must be the entity's current version (a positive integer)")
	}
	cur, err := c.get(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("update: %w", err)
	}
	if cur.Version != in.Version {
		return nil, &ConflictError{ID: id.String(), Expected: in.Version, Current: cur}
	}
	next := cur.Clone()
	rechunk := false
	if in.Content != nil {
		if err := validate.Content("content", *in.Content, true); err != nil {
			return nil, err
		}
		if *in.Content != cur.Content {
			next.Content = *in.Content
			rechunk = true
		}
	}
	if in.Visibility != nil {
		if err := validateVisibility("visibility", *in.Visibility); err != nil {
			return nil, err
		}
		next.Visibility = *in.Visibility
	}
	if in.Status != nil {
		if err := validateStatus("status", *in.Status); err != nil {
			return nil, err
		}
		next.Status = *in.Status
	}
	if in.Owner != nil {
		if err := validate.Short("owner", *in.Owner, MaxOwnerLen); err != nil {
			return nil, err
		}
		next.Owner = *in.Owner
	}
	if in.Source != nil {
		if err := validate.Short("source", *in.Source, MaxSourceLen); err != nil {
			return nil, err
		}
		next.Source = *in.Source
	}
	if in.Tags != nil {
		tags, err := validate.Tags("tags", *in.Tags)
		if err != nil {
			return nil, err
		}
		next.Tags = tags
	}
	if in.Metadata != nil {
		merged := driver.CloneMetadata(cur.Metadata)
		if merged == nil {
			merged = map[string]any{}
		}
		for k, v := range in.Metadata {
			if v == nil {
				delete(merged, k)
			} else {
				merged[k] = v
			}
		}
		if err := validateMetadata("metadata", merged); err != nil {
			return nil, err
		}
		next.Metadata = merged
	}
	if err := c.principal.canWrite(next.Type, next.Visibility); err != nil {
		return nil, err
	}
	if err := c.mayChange(cur, next); err != nil {
		return nil, err
	}
	next.Version = cur.Version + 1
	next.UpdatedAt = c.now()
	var chunks []driver.ChunkInput
	if rechunk {
		chunks = c.rechunk(next)
	}
	audit := c.auditEntry("entity.update", id.String(), map[string]any{"version": next.Version, "content_changed": rechunk,
		"fields": changedFields(cur, next)})
	if err := c.store.UpdateEntity(ctx, c.ws, next, cur.Version, chunks, audit); err != nil {
		return nil, fmt.Errorf("update: %w", c.hideConflict(err))
	}
	if rechunk {
		c.wake()
	}
	return next, nil
}

// mayChange checks the rules an update must pass beyond the write scope
// and the key's types and visibilities: archiving is deletion (the delete
// scope), and only the client that wrote an entity, or an administrator,
// changes its memory_role (turning another client's durable memory into
// session context would hide it from everyone else).
func (c *Client) mayChange(cur, next *Entity) error {
	if next.Status == StatusArchived && cur.Status != StatusArchived {
		if err := c.principal.need(ScopeDelete, "setting status to archived"); err != nil {
			return err
		}
	}
	if next.MemoryRole() != cur.MemoryRole() && c.principal != nil && cur.ClientID != c.principal.ClientID {
		return fmt.Errorf("only the client that wrote entity %s (or an administrator) may change its memory_role: %w", cur.ID, ErrForbidden)
	}
	return nil
}

// hideConflict turns a version conflict whose current entity the caller
// may not see (a concurrent writer made it invisible) into not found, so
// that the conflict's details never show it.
func (c *Client) hideConflict(err error) error {
	var ce *ConflictError
	if errors.As(err, &ce) && ce.Current != nil && !c.canSee(ce.Current) {
		return fmt.Errorf("entity %s: %w", ce.ID, ErrNotFound)
	}
	return err
}

// changedFields names the fields an update changes (never their values),
// for the audit log.
func changedFields(cur, next *Entity) []string {
	out := []string{}
	add := func(name string, changed bool) {
		if changed {
			out = append(out, name)
		}
	}
	add("content", cur.Content != next.Content)
	add("visibility", cur.Visibility != next.Visibility)
	add("status", cur.Status != next.Status)
	add("owner", cur.Owner != next.Owner)
	add("source", cur.Source != next.Source)
	add("tags", !slices.Equal(cur.Tags, next.Tags))
	add("metadata", !sameJSON(cur.Metadata, next.Metadata))
	return out
}

// sameJSON reports whether two metadata objects encode alike (so 3 and
// 3.0 are the same value, as they are once stored).
func sameJSON(a, b map[string]any) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// Delete archives an entity (a soft delete; purging is an admin act). It is
// idempotent: deleting an archived entity succeeds.
func (c *Client) Delete(ctx context.Context, id uuid.UUID) (*Entity, error) {
	if err := c.principal.need(ScopeDelete, "delete"); err != nil {
		return nil, err
	}
	// Delete names no version: retry a few times if a concurrent writer
	// wins the race.
	for attempt := 0; ; attempt++ {
		cur, err := c.get(ctx, id)
		if err != nil {
			return nil, fmt.Errorf("delete: %w", err)
		}
		if cur.Status == StatusArchived {
			return cur, nil
		}
		next := cur.Clone()
		next.Status = StatusArchived
		next.Version = cur.Version + 1
		next.UpdatedAt = c.now()
		audit := c.auditEntry("entity.delete", id.String(), map[string]any{"version": next.Version})
		// The edges the entity's content and embeddings produced go with
		// it; manual edges stay (hidden while an end is archived).
		err = c.store.WriteBatch(ctx, c.ws, []driver.BatchOp{
			{Update: next, Expected: cur.Version, Audit: audit},
			{Retract: &driver.RetractEdges{Origin: id, Sources: []string{EdgeSourceLLM, EdgeSourceNeighbor}}},
		})
		if err == nil {
			return next, nil
		}
		if !errors.Is(err, ErrConflict) || attempt >= 4 {
			return nil, fmt.Errorf("delete: %w", c.hideConflict(err))
		}
	}
}

// BulkResult is the outcome of one id in a bulk operation.
type BulkResult struct {
	ID    string `json:"id"`
	Error error  `json:"-"`
}

// BulkArchive archives up to MaxBulkIDs entities, reporting each id's
// outcome; one failure does not stop the others.
func (c *Client) BulkArchive(ctx context.Context, ids []string) ([]BulkResult, error) {
	if err := c.principal.need(ScopeDelete, "bulk archive"); err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, validate.Invalid("ids", "must list at least one id")
	}
	if len(ids) > MaxBulkIDs {
		return nil, validate.Invalid("ids", "has %d ids; the maximum is %d", len(ids), MaxBulkIDs)
	}
	out := make([]BulkResult, len(ids))
	for i, s := range ids {
		out[i].ID = s
		id, err := ParseID(fmt.Sprintf("ids[%d]", i), s)
		if err != nil {
			out[i].Error = err
			continue
		}
		if _, err := c.Delete(ctx, id); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			out[i].Error = err
		}
	}
	return out, nil
}

// ListOptions filters and pages List.
type ListOptions struct {
	Types           []EntityType
	Statuses        []Status
	Visibilities    []Visibility
	Owner           string
	Tags            []string // every tag must be present
	MemoryRole      MemoryRole
	IncludeArchived bool
	// Limit defaults to DefaultListLimit and may not exceed MaxListLimit.
	Limit  int
	Offset int
}

// ListPage is one page of entities.
type ListPage struct {
	Items  []*Entity `json:"items"`
	Total  int       `json:"total"`
	Limit  int       `json:"limit"`
	Offset int       `json:"offset"`
}

// filter validates the filter fields shared by List and Search.
func buildFilter(types []EntityType, statuses []Status, vis []Visibility, owner string, tags []string, role MemoryRole, archived bool) (driver.EntityFilter, error) {
	f := driver.EntityFilter{Owner: owner, MemoryRole: role, IncludeArchived: archived}
	for i, t := range types {
		if err := validateType(fmt.Sprintf("type[%d]", i), t); err != nil {
			if len(types) == 1 {
				return f, validateType("type", t)
			}
			return f, err
		}
	}
	for i, s := range statuses {
		if err := validateStatus(fmt.Sprintf("status[%d]", i), s); err != nil {
			if len(statuses) == 1 {
				return f, validateStatus("status", s)
			}
			return f, err
		}
	}
	for i, v := range vis {
		if err := validateVisibility(fmt.Sprintf("visibility[%d]", i), v); err != nil {
			if len(vis) == 1 {
				return f, validateVisibility("visibility", v)
			}
			return f, err
		}
	}
	if err := validate.Short("owner", owner, MaxOwnerLen); err != nil {
		return f, err
	}
	if role != "" && !role.Valid() {
		return f, validate.Invalid("memory_role", "%q is not one of durable_memory, session_context", validate.Truncate(string(role), 40))
	}
	nt, err := validate.Tags("tags", tags)
	if err != nil {
		return f, err
	}
	f.Types, f.Statuses, f.Visibilities, f.Tags = types, statuses, vis, nt
	if len(f.Tags) == 0 {
		f.Tags = nil
	}
	return f, nil
}

// List returns entities matching opts, newest first, with the total count.
func (c *Client) List(ctx context.Context, opts ListOptions) (*ListPage, error) {
	if err := c.principal.need(ScopeRead, "list"); err != nil {
		return nil, err
	}
	if opts.Limit < 0 || opts.Limit > MaxListLimit {
		return nil, validate.Invalid("limit", "must be between 1 and %d", MaxListLimit)
	}
	if opts.Limit == 0 {
		opts.Limit = DefaultListLimit
	}
	if opts.Offset < 0 || opts.Offset > 1_000_000 {
		return nil, validate.Invalid("offset", "must be between 0 and 1000000")
	}
	f, err := buildFilter(opts.Types, opts.Statuses, opts.Visibilities, opts.Owner, opts.Tags, opts.MemoryRole, opts.IncludeArchived)
	if err != nil {
		return nil, err
	}
	page := &ListPage{Items: []*Entity{}, Limit: opts.Limit, Offset: opts.Offset}
	f, ok := c.principal.restrict(f)
	if !ok {
		return page, nil
	}
	items, total, err := c.store.ListEntities(ctx, c.ws, f, opts.Limit, opts.Offset, c.resultBudget())
	var big *driver.PageTooLargeError
	if errors.As(err, &big) {
		return nil, c.tooLarge("limit", big.Fit)
	}
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	if items != nil {
		page.Items = items
	}
	page.Total = total
	return page, nil
}

// QueueStatus reports the enrichment queue of the entities the caller may
// see (Extraction is nil when extraction is off); failureLimit (0..100)
// also returns that many recent failures with
// their messages.
func (c *Client) QueueStatus(ctx context.Context, failureLimit int) (QueueStatus, error) {
	if err := c.principal.need(ScopeRead, "queue"); err != nil {
		return QueueStatus{}, err
	}
	if failureLimit < 0 || failureLimit > 100 {
		return QueueStatus{}, validate.Invalid("failure_limit", "must be between 0 and 100")
	}
	// Counts and failures cover what the caller may see (archived entities
	// included, as Recall shows them); an administrator sees everything.
	f, ok := c.principal.restrict(driver.EntityFilter{IncludeArchived: true})
	st := QueueStatus{Extraction: &driver.ExtractionQueue{}}
	if ok {
		var err error
		if st, err = c.store.QueueStats(ctx, c.ws, f, c.cfg.Worker.MaxAttempts, failureLimit); err != nil {
			return st, fmt.Errorf("queue status: %w", err)
		}
	}
	if c.cfg.Extraction.Extractor == nil {
		st.Extraction = nil // no extraction queue when extraction is off (the reference server's null)
	}
	return st, nil
}

// RetryFailed makes every entity whose embedding (queue "embedding") or
// extraction (queue "extraction") failed for good due again now, with
// fresh attempts, once the cause is fixed; it returns how many.
func (a *Admin) RetryFailed(ctx context.Context, queue string) (int, error) {
	c := a.c
	q := map[string]driver.Queue{"embedding": driver.QueueEmbedding, "extraction": driver.QueueExtraction}[queue]
	if q == "" {
		return 0, validate.Invalid("queue", "%q is not one of embedding, extraction", validate.Truncate(queue, 40))
	}
	n, err := c.store.RetryFailed(ctx, c.ws, q)
	if err != nil {
		return 0, fmt.Errorf("retry failed: %w", err)
	}
	if n > 0 {
		if err := c.store.AppendAudit(ctx, c.ws, c.auditEntry("queue.retry", "", map[string]any{"queue": queue, "entities": n})); err != nil {
			return n, fmt.Errorf("retry failed: audit: %w", err)
		}
		c.wake()
	}
	return n, nil
}
