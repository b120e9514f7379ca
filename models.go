package postgram

import (
	"context"
	"fmt"

	"github.com/postgram-go/postgram/internal/validate"
)

// Models lists the store's embedding models.
func (a *Admin) Models(ctx context.Context) ([]ModelRecord, error) {
	c := a.c
	ms, err := c.store.ListModels(ctx)
	if err != nil {
		return nil, fmt.Errorf("list models: %w", err)
	}
	return ms, nil
}

// ModelSwitch reports SwitchModel.
type ModelSwitch struct {
	DryRun   bool        `json:"dry_run"`
	Previous *ModelInfo  `json:"previous,omitempty"`
	Active   ModelRecord `json:"active"`
	// Queued is how many entities (of every workspace) were queued for
	// re-embedding with the new model.
	Queued int `json:"queued"`
}

// SwitchModel makes m the store's active embedding model and queues every
// entity of every workspace for re-embedding with it. Until the worker has
// re-embedded an entity, vector search does not see it (keyword search
// does). Servers must be restarted with the matching EMBEDDING_* settings:
// a client built with another embedder fails with ErrModelMismatch. A dry
// run changes nothing and reports the entities that would be queued as 0.
func (a *Admin) SwitchModel(ctx context.Context, m ModelInfo, dryRun bool) (*ModelSwitch, error) {
	c := a.c
	if err := validate.Short("provider", m.Provider, 40); err != nil {
		return nil, err
	}
	if m.Provider == "" {
		return nil, validate.Invalid("provider", "is required")
	}
	if m.Name == "" {
		return nil, validate.Invalid("model", "is required")
	}
	if err := validate.Short("model", m.Name, 200); err != nil {
		return nil, err
	}
	if m.Dimensions < 1 || m.Dimensions > 16000 {
		return nil, validate.Invalid("dimensions", "must be between 1 and 16000")
	}
	res := &ModelSwitch{DryRun: dryRun, Active: ModelRecord{ModelInfo: m, Active: true}}
	_, cur, ok, err := c.store.ActiveModel(ctx)
	if err != nil {
		return nil, fmt.Errorf("switch model: %w", err)
	}
	if ok {
		res.Previous = &cur
	}
	if dryRun {
		return res, nil
	}
	id, err := c.store.ActivateModel(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("switch model: %w", err)
	}
	res.Active.ID = id
	if res.Queued, err = c.store.QueueReembed(ctx, "", nil); err != nil {
		return res, fmt.Errorf("switch model: queue re-embedding: %w", err)
	}
	details := map[string]any{"provider": m.Provider, "model": m.Name, "dimensions": m.Dimensions, "queued": res.Queued}
	if res.Previous != nil {
		details["previous"] = *res.Previous
	}
	if err := c.store.AppendAudit(ctx, c.ws, c.auditEntry("model.switch", "", details)); err != nil {
		return res, fmt.Errorf("switch model: %w", err)
	}
	return res, nil
}

// Reembed queues the workspace's entities (of types, when given) for
// embedding again with the active model, e.g. after a provider fixed a
// bug.
func (a *Admin) Reembed(ctx context.Context, types []EntityType) (int, error) {
	c := a.c
	for i, t := range types {
		if err := validateType(fmt.Sprintf("type[%d]", i), t); err != nil {
			return 0, err
		}
	}
	n, err := c.store.QueueReembed(ctx, c.ws, types)
	if err != nil {
		return 0, fmt.Errorf("reembed: %w", err)
	}
	if err := c.store.AppendAudit(ctx, c.ws, c.auditEntry("model.reembed", "", map[string]any{"queued": n, "types": types})); err != nil {
		return n, fmt.Errorf("reembed: %w", err)
	}
	c.wake()
	return n, nil
}
