package postgram

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/postgram-go/postgram/internal/validate"
)

func (c *Client) auditEntry(op, entityID string, details map[string]any) *AuditEntry {
	e := &AuditEntry{ID: newID(), At: c.now(), Operation: op, EntityID: entityID, Details: details}
	if c.principal != nil {
		e.KeyID, e.ClientID = c.principal.KeyID, c.principal.ClientID
	}
	return e
}

// RecordAudit appends an entry for an operation the library does not
// perform itself (for example pgm-admin's sql command, or a backup a
// transport streamed). by names the principal that acted (its key and
// client id are recorded); nil means the operator.
func (a *Admin) RecordAudit(ctx context.Context, by *Principal, op string, details map[string]any) error {
	c := a.c
	if by != nil {
		c = c.as(*by)
	}
	if op == "" {
		return validate.Invalid("operation", "must not be empty")
	}
	if err := validate.Short("operation", op, 200); err != nil {
		return err
	}
	if err := c.store.AppendAudit(ctx, c.ws, c.auditEntry(op, "", details)); err != nil {
		return fmt.Errorf("record audit: %w", err)
	}
	return nil
}

// Audit lists audit entries, newest first.
func (a *Admin) Audit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	c := a.c
	if f.Limit < 0 || f.Limit > 10000 {
		return nil, validate.Invalid("limit", "must be between 1 and 10000")
	}
	if f.Limit == 0 {
		f.Limit = 100
	}
	if err := validate.Short("operation", f.Operation, 200); err != nil {
		return nil, err
	}
	if err := validate.Short("key_id", f.KeyID, 200); err != nil {
		return nil, err
	}
	return c.store.ListAudit(ctx, c.ws, f)
}

// PruneAudit is the audit log's retention: it deletes the workspace's
// entries from before the cut-off and records the prune (audit.prune, with
// the cut-off and how many entries it deleted) in the same transaction;
// the store refuses every other change to the log. The cut-off must not lie
// in the future. With dryRun it only counts the entries.
func (a *Admin) PruneAudit(ctx context.Context, before time.Time, dryRun bool) (int, error) {
	c := a.c
	if before.IsZero() {
		return 0, validate.Invalid("before", "is required: entries older than this time are deleted")
	}
	before = before.UTC().Truncate(time.Microsecond)
	if before.After(c.now()) {
		return 0, validate.Invalid("before", "%s is in the future; the cut-off must not be later than now", before.Format(time.RFC3339))
	}
	audit := c.auditEntry("audit.prune", "", map[string]any{"before": before.Format(time.RFC3339Nano)})
	n, err := c.store.PruneAudit(ctx, c.ws, before, dryRun, audit)
	if err != nil {
		return 0, fmt.Errorf("prune audit: %w", err)
	}
	return n, nil
}

func errIs(err, target error) bool { return errors.Is(err, target) }

// Stats summarises the workspace.
func (a *Admin) Stats(ctx context.Context) (StoreStats, error) {
	c := a.c
	return c.store.Stats(ctx, c.ws)
}
