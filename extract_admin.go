package postgram

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/validate"
)

// ReextractRequest selects entities to queue for extraction again
// (pgm-admin reextract and improve-graph).
type ReextractRequest struct {
	// Scope: All, or a Type, or IDs (at least one of them).
	All  bool
	Type EntityType
	IDs  []uuid.UUID
	// OnlyFailed keeps entities whose extraction failed.
	OnlyFailed bool
	// NoEdgesOnly keeps entities that produced no llm-extraction edge.
	NoEdgesOnly bool
	// CleanEdges deletes the selected entities' llm-extraction edges when
	// they are queued (a clean slate); otherwise they stay until the new
	// extraction replaces them.
	CleanEdges bool
	// Limit caps how many entities are queued, oldest first (0: all).
	Limit int
	// Override is the provider/model the worker uses for these entities
	// instead of the configured default (improve-graph); cleared on
	// success.
	Override ExtractOverride
	// DryRun lists what would be queued and writes nothing.
	DryRun bool
}

// ReextractResult reports a Reextract.
type ReextractResult struct {
	DryRun       bool        `json:"dry_run"`
	Selected     int         `json:"selected"`
	Queued       int         `json:"queued"`
	EdgesDeleted int         `json:"edges_deleted"`
	IDs          []uuid.UUID `json:"ids"`
}

// Reextract queues entities for extraction again. Session context,
// auto-created placeholders and memories the memory mode excludes are
// never selected; user-made edges are never touched.
func (a *Admin) Reextract(ctx context.Context, req ReextractRequest) (*ReextractResult, error) {
	c := a.c
	if !req.All && req.Type == "" && len(req.IDs) == 0 {
		return nil, validate.Invalid("scope", "name --all, --type or --id")
	}
	if req.Type != "" {
		if err := validateType("type", req.Type); err != nil {
			return nil, err
		}
	}
	if req.Limit < 0 {
		return nil, validate.Invalid("limit", "must not be negative")
	}
	if err := validate.Short("provider", req.Override.Provider, 40); err != nil {
		return nil, err
	}
	if err := validate.Short("model", req.Override.Model, 200); err != nil {
		return nil, err
	}
	if req.Override != (ExtractOverride{}) && !req.DryRun && c.cfg.Extraction.ForOverride == nil && c.cfg.Extraction.Extractor != nil {
		return nil, validate.Invalid("provider", "this client cannot build an extractor for another provider or model")
	}
	keep := func(e *Entity) bool {
		if e.Status == StatusArchived || isPlaceholder(e) || !c.extractable(e) {
			return false
		}
		if req.Type != "" && e.Type != req.Type {
			return false
		}
		return !req.OnlyFailed || e.ExtractionStatus == StageFailed
	}
	var picked []*Entity
	if len(req.IDs) > 0 {
		es, err := c.store.GetEntities(ctx, c.ws, req.IDs)
		if err != nil {
			return nil, fmt.Errorf("reextract: %w", err)
		}
		found := map[uuid.UUID]*Entity{}
		for _, e := range es {
			found[e.ID] = e
		}
		for i, id := range req.IDs {
			e, ok := found[id]
			if !ok {
				return nil, validate.Invalid(fmt.Sprintf("id[%d]", i), "entity %s does not exist", id)
			}
			if keep(e) {
				picked = append(picked, e)
			}
		}
	} else {
		f := driver.EntityFilter{}
		if req.Type != "" {
			f.Types = []EntityType{req.Type}
		}
		err := c.eachCandidate(ctx, f, driver.FindQuery{Order: driver.OrderOldest}, 0, true, func(e *Entity) bool {
			if keep(e) {
				picked = append(picked, e)
			}
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("reextract: %w", err)
		}
	}
	if req.NoEdgesOnly && len(picked) > 0 {
		ids := make([]uuid.UUID, len(picked))
		for i, e := range picked {
			ids[i] = e.ID
		}
		has := map[uuid.UUID]bool{}
		for start := 0; start < len(ids); start += 1000 {
			edges, err := c.graph().FindEdges(ctx, c.ws, driver.EdgeQuery{OriginIDs: ids[start:min(start+1000, len(ids))], Sources: []string{EdgeSourceLLM}})
			if err != nil {
				return nil, fmt.Errorf("reextract: %w", err)
			}
			for _, ed := range edges {
				if ed.OriginID != nil {
					has[*ed.OriginID] = true
				}
			}
		}
		kept := picked[:0]
		for _, e := range picked {
			if !has[e.ID] {
				kept = append(kept, e)
			}
		}
		picked = kept
	}
	if req.Limit > 0 && len(picked) > req.Limit {
		picked = picked[:req.Limit]
	}
	res := &ReextractResult{DryRun: req.DryRun, Selected: len(picked), IDs: make([]uuid.UUID, len(picked))}
	for i, e := range picked {
		res.IDs[i] = e.ID
	}
	if req.DryRun || len(picked) == 0 {
		return res, nil
	}
	var clean []string
	if req.CleanEdges {
		clean = []string{EdgeSourceLLM}
	}
	for start := 0; start < len(res.IDs); start += 1000 {
		chunk := res.IDs[start:min(start+1000, len(res.IDs))]
		q, d, err := c.extraction().QueueExtraction(ctx, c.ws, chunk, req.Override, clean)
		if err != nil {
			return res, fmt.Errorf("reextract: %w", err)
		}
		res.Queued += q
		res.EdgesDeleted += d
	}
	if err := c.store.AppendAudit(ctx, c.ws, c.auditEntry("graph.reextract", "", map[string]any{
		"queued": res.Queued, "edges_deleted": res.EdgesDeleted, "provider": req.Override.Provider, "model": req.Override.Model,
		"clean_edges": req.CleanEdges})); err != nil {
		return res, fmt.Errorf("reextract: %w", err)
	}
	c.wakeExtraction()
	return res, nil
}

// ValidateEdgesRequest configures ValidateEdges.
type ValidateEdgesRequest struct {
	Judge llm.EdgeJudge
	// Sources are the edge sources judged; default llm-extraction. Manual
	// edges are never judged.
	Sources []string
	// MinConfidence: an edge judged valid with less confidence is removed
	// too. Default 0.4.
	MinConfidence float64
	// SkipValidatedWithin skips edges validated more recently (metadata
	// last_validated_at). Default 7 days; Force judges them anyway.
	SkipValidatedWithin time.Duration
	Force               bool
	// Limit caps how many edges are judged. Default 100, at most 10,000.
	Limit  int
	DryRun bool
}

// ValidatedEdge is one judged edge.
type ValidatedEdge struct {
	Edge    Edge            `json:"edge"`
	Verdict llm.EdgeVerdict `json:"verdict"`
	Action  string          `json:"action"` // kept, removed, failed
	Error   string          `json:"error,omitempty"`
}

// ValidateEdgesResult reports ValidateEdges.
type ValidateEdgesResult struct {
	DryRun  bool            `json:"dry_run"`
	Judged  int             `json:"judged"`
	Kept    int             `json:"kept"`
	Removed int             `json:"removed"`
	Failed  int             `json:"failed"`
	Skipped int             `json:"skipped_recent"`
	Items   []ValidatedEdge `json:"items"`
}

const metaLastValidated = "last_validated_at"

// ValidateEdges asks the judge about derived edges and removes the ones it
// finds unsupported or below MinConfidence; kept edges record
// last_validated_at, validation_confidence and validation_reason in their
// metadata. A dry run calls the judge but changes nothing.
func (a *Admin) ValidateEdges(ctx context.Context, req ValidateEdgesRequest) (*ValidateEdgesResult, error) {
	c := a.c
	if req.Judge == nil {
		return nil, validate.Invalid("judge", "validate-edges needs an extraction LLM (EXTRACTION_ENABLED and EXTRACTION_PROVIDER)")
	}
	if len(req.Sources) == 0 {
		req.Sources = []string{EdgeSourceLLM}
	}
	for i, s := range req.Sources {
		if s == EdgeSourceManual {
			return nil, validate.Invalid(fmt.Sprintf("source[%d]", i), "manual edges are never judged by an LLM")
		}
	}
	if req.MinConfidence == 0 {
		req.MinConfidence = 0.4
	}
	if req.MinConfidence < 0 || req.MinConfidence > 1 {
		return nil, validate.Invalid("min_confidence", "must be between 0 and 1")
	}
	if req.SkipValidatedWithin == 0 {
		req.SkipValidatedWithin = 7 * 24 * time.Hour
	}
	if req.SkipValidatedWithin < 0 {
		return nil, validate.Invalid("skip_validated_days", "must not be negative")
	}
	if req.Limit == 0 {
		req.Limit = 100
	}
	if req.Limit < 1 || req.Limit > 10_000 {
		return nil, validate.Invalid("limit", "must be between 1 and 10000")
	}
	edges, err := c.graph().FindEdges(ctx, c.ws, driver.EdgeQuery{Sources: req.Sources})
	if err != nil {
		return nil, fmt.Errorf("validate edges: %w", err)
	}
	res := &ValidateEdgesResult{DryRun: req.DryRun, Items: []ValidatedEdge{}}
	cutoff := c.now().Add(-req.SkipValidatedWithin)
	var todo []Edge
	for _, e := range edges {
		if !req.Force {
			if s, ok := e.Metadata[metaLastValidated].(string); ok {
				if t, err := time.Parse(time.RFC3339Nano, s); err == nil && t.After(cutoff) {
					res.Skipped++
					continue
				}
			}
		}
		if len(todo) < req.Limit {
			todo = append(todo, e)
		}
	}
	need := map[uuid.UUID]bool{}
	for _, e := range todo {
		need[e.SourceID], need[e.TargetID] = true, true
		if e.OriginID != nil {
			need[*e.OriginID] = true
		}
	}
	ents := map[uuid.UUID]*Entity{}
	ids := make([]uuid.UUID, 0, len(need))
	for id := range need {
		ids = append(ids, id)
	}
	for start := 0; start < len(ids); start += 1000 {
		es, err := c.store.GetEntities(ctx, c.ws, ids[start:min(start+1000, len(ids))])
		if err != nil {
			return nil, fmt.Errorf("validate edges: %w", err)
		}
		for _, e := range es {
			ents[e.ID] = e
		}
	}
	for _, e := range todo {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		src, dst := ents[e.SourceID], ents[e.TargetID]
		if src == nil || dst == nil {
			continue
		}
		content := src.Content
		if e.OriginID != nil && ents[*e.OriginID] != nil {
			content = ents[*e.OriginID].Content
		}
		item := ValidatedEdge{Edge: e}
		v, err := req.Judge.JudgeEdge(ctx, llm.EdgeClaim{Relation: e.Relation, SourceName: DisplayName(src), SourceType: src.Type,
			TargetName: DisplayName(dst), TargetType: dst.Type, Content: content})
		res.Judged++
		switch {
		case err != nil:
			item.Action, item.Error = "failed", validate.Truncate(err.Error(), 500)
			res.Failed++
		case !v.Valid || v.Confidence < req.MinConfidence:
			item.Verdict, item.Action = v, "removed"
			res.Removed++
			if !req.DryRun {
				audit := c.auditEntry("edge.validate.remove", e.ID.String(), map[string]any{
					"relation": e.Relation, "confidence": v.Confidence, "reason": validate.Truncate(v.Reason, 500)})
				if _, err := c.graph().DeleteEdges(ctx, c.ws, []uuid.UUID{e.ID}, audit); err != nil {
					return res, fmt.Errorf("validate edges: %w", err)
				}
			}
		default:
			item.Verdict, item.Action = v, "kept"
			res.Kept++
			if !req.DryRun {
				ne := e
				ne.Metadata = driver.CloneMetadata(e.Metadata)
				if ne.Metadata == nil {
					ne.Metadata = map[string]any{}
				}
				ne.Metadata[metaLastValidated] = c.now().Format(time.RFC3339Nano)
				ne.Metadata["validation_confidence"] = v.Confidence
				ne.Metadata["validation_reason"] = validate.Truncate(v.Reason, 500)
				ne.UpdatedAt = c.now()
				if _, err := c.graph().UpsertEdges(ctx, c.ws, []Edge{ne}, nil); err != nil {
					return res, fmt.Errorf("validate edges: %w", err)
				}
			}
		}
		res.Items = append(res.Items, item)
	}
	return res, nil
}
