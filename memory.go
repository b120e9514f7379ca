package postgram

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/validate"
)

// Memory lifecycle: agents keep working context (session_context, visible
// only to the client that wrote it) apart from durable memory, and groom
// it: stale session context is archived, or promoted through the
// extraction LLM (a Groomer) into new durable memories with provenance.
// Durable memories are reviewed (marked) and the marks applied.

// Metadata keys of the memory lifecycle.
const (
	metaSessionID       = "session_id"
	metaAgentID         = "agent_id"
	metaTopic           = "topic"
	metaPromotable      = "promotable"
	metaGroomAfter      = "groom_after"
	metaExpiresAt       = "expires_at"
	metaPromotedTo      = "promoted_to"
	metaPromotedFrom    = "promoted_from"
	metaGroomedAt       = "groomed_at"
	metaGroomAction     = "groom_action"
	metaDurableGrooming = "durable_grooming"
)

// SessionContextInput is working context to keep for resuming a
// conversation. It is stored as a memory with metadata.memory_role
// session_context and is visible only to the calling client.
type SessionContextInput struct {
	Content    string     `json:"content"`
	Visibility Visibility `json:"visibility,omitempty"`
	Owner      string     `json:"owner,omitempty"`
	SessionID  string     `json:"session_id,omitempty"`
	AgentID    string     `json:"agent_id,omitempty"`
	Topic      string     `json:"topic,omitempty"`
	Tags       []string   `json:"tags,omitempty"`
	// Promotable false keeps grooming from promoting it (it is only
	// archived). Default true.
	Promotable *bool `json:"promotable,omitempty"`
	// GroomAfter keeps grooming away until then: an age such as 4h or 7d
	// (from now) or an RFC 3339 time.
	GroomAfter string `json:"groom_after,omitempty"`
	// ExpiresAt is when the context stops being useful: an age or an RFC
	// 3339 time. Expired context is eligible for grooming whatever its age.
	ExpiresAt string         `json:"expires_at,omitempty"`
	Metadata  map[string]any `json:"metadata,omitempty"`
}

var ageRE = regexp.MustCompile(`^([0-9]{1,6})([smhdw])$`)

// ParseAge parses an age such as 30m, 4h, 7d, 2w or 0d, naming field in the
// error.
func ParseAge(field, s string) (time.Duration, error) {
	m := ageRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, validate.Invalid(field, "%q is not an age: use a number and a unit s, m, h, d or w (30m, 4h, 7d, 0d)", validate.Truncate(s, 40))
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"s": time.Second, "m": time.Minute, "h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour}[m[2]]
	return time.Duration(n) * unit, nil
}

// parseWhen accepts an age (from now) or an RFC 3339 time.
func (c *Client) parseWhen(field, s string) (string, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return formatMetaTime(t), nil
	}
	d, err := ParseAge(field, s)
	if err != nil {
		return "", validate.Invalid(field, "%q is neither an age (4h, 7d) nor an RFC 3339 time", validate.Truncate(s, 40))
	}
	return formatMetaTime(c.now().Add(d)), nil
}

// StoreSessionContext stores working context scoped to the calling client.
// It is embedded for recall but never graph-extracted.
func (c *Client) StoreSessionContext(ctx context.Context, in SessionContextInput) (*Entity, error) {
	meta := driver.CloneMetadata(in.Metadata)
	if meta == nil {
		meta = map[string]any{}
	}
	meta["memory_role"] = string(RoleSessionContext)
	for _, f := range []struct{ key, val string }{{metaSessionID, in.SessionID}, {metaAgentID, in.AgentID}, {metaTopic, in.Topic}} {
		if f.val == "" {
			continue
		}
		if err := validate.Short(f.key, f.val, MaxOwnerLen); err != nil {
			return nil, err
		}
		meta[f.key] = f.val
	}
	if in.Promotable != nil {
		meta[metaPromotable] = *in.Promotable
	}
	if in.GroomAfter != "" {
		v, err := c.parseWhen("groom_after", in.GroomAfter)
		if err != nil {
			return nil, err
		}
		meta[metaGroomAfter] = v
	}
	if in.ExpiresAt != "" {
		v, err := c.parseWhen("expires_at", in.ExpiresAt)
		if err != nil {
			return nil, err
		}
		meta[metaExpiresAt] = v
	}
	e, err := c.Store(ctx, StoreInput{Type: TypeMemory, Content: in.Content, Visibility: in.Visibility, Owner: in.Owner,
		Tags: in.Tags, Metadata: meta, Source: "session-context", SkipExtraction: true})
	if err != nil {
		return nil, fmt.Errorf("store session context: %w", err)
	}
	return e, nil
}

// GroomMode selects what grooming does.
type GroomMode string

// Grooming modes.
const (
	GroomDryRun  GroomMode = "dry_run" // list what is eligible; write nothing, call no LLM
	GroomArchive GroomMode = "archive" // archive eligible session context
	GroomPromote GroomMode = "promote" // let the Groomer promote or not; archive every source (admin only)
	GroomMark    GroomMode = "mark"    // durable grooming: record the Groomer's review
)

// GroomRequest selects and grooms session context.
type GroomRequest struct {
	Mode GroomMode `json:"mode"`
	// OlderThan: only context not updated for this long (30m, 4h, 7d, 0d).
	// Default 7d.
	OlderThan string   `json:"older_than,omitempty"`
	Topic     string   `json:"topic,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
	Tags      []string `json:"tags,omitempty"` // every tag must be present
	// Limit caps the candidates (0: no cap).
	Limit int `json:"limit,omitempty"`
	// ClientID and AllClients choose the scope; only a client without a
	// principal (an operator) may set them. Otherwise the scope is the
	// caller's own client.
	ClientID   *string `json:"client_id,omitempty"`
	AllClients bool    `json:"all_clients,omitempty"`
	// Groomer decides promotions (required for GroomPromote).
	Groomer llm.Groomer `json:"-"`
}

// GroomItem is what grooming did with one memory.
type GroomItem struct {
	ID         uuid.UUID  `json:"id"`
	ClientID   string     `json:"client_id"`
	Topic      string     `json:"topic,omitempty"`
	SessionID  string     `json:"session_id,omitempty"`
	UpdatedAt  time.Time  `json:"updated_at"`
	Preview    string     `json:"preview"`
	Action     string     `json:"action"` // eligible, archived, promoted, kept, marked, rewritten, failed
	Outcome    string     `json:"outcome,omitempty"`
	PromotedTo *uuid.UUID `json:"promoted_to,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	Error      string     `json:"error,omitempty"`
	// Entity is the session context as it was selected (before grooming
	// changed it), for callers that show the whole candidate.
	Entity *Entity `json:"-"`
}

// GroomResult summarises a grooming run.
type GroomResult struct {
	Mode     GroomMode   `json:"mode"`
	DryRun   bool        `json:"dry_run"`
	Cutoff   time.Time   `json:"cutoff"`
	Scopes   []string    `json:"scopes"`
	Eligible int         `json:"eligible"`
	Archived int         `json:"archived"`
	Promoted int         `json:"promoted"`
	Marked   int         `json:"marked"`
	Rewrote  int         `json:"rewritten"`
	Failed   int         `json:"failed"`
	Items    []GroomItem `json:"items"`
}

// groomScopes resolves which client scopes a request covers.
func (c *Client) groomScopes(ctx context.Context, req GroomRequest) ([]string, error) {
	if c.principal != nil {
		if req.ClientID != nil || req.AllClients {
			return nil, fmt.Errorf("grooming another client's session context is an operator's act (pgm-admin): %w", ErrForbidden)
		}
		return []string{c.principal.ClientID}, nil
	}
	switch {
	case req.AllClients && req.ClientID != nil:
		return nil, validate.Invalid("client_id", "cannot be combined with all_clients")
	case req.AllClients:
		return c.store.SessionContextClients(ctx, c.ws)
	case req.ClientID != nil:
		if err := validate.Short("client_id", *req.ClientID, MaxOwnerLen); err != nil {
			return nil, err
		}
		return []string{*req.ClientID}, nil
	}
	return []string{""}, nil
}

func metaStr(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// GroomSessionContext archives or promotes stale session context. Each
// client scope is selected and groomed separately (AllClients is
// operational batching, not consolidation across clients). Every memory
// is groomed in its own transaction: a promotion writes the new durable
// memory, archives the source with metadata.promoted_to and adds the
// promoted_to edge together.
func (c *Client) GroomSessionContext(ctx context.Context, req GroomRequest) (*GroomResult, error) {
	if req.Mode == "" {
		req.Mode = GroomDryRun
	}
	switch req.Mode {
	case GroomDryRun:
		if err := c.principal.need(ScopeRead, "groom session context"); err != nil {
			return nil, err
		}
	case GroomArchive:
		if err := c.principal.need(ScopeWrite, "groom session context"); err != nil {
			return nil, err
		}
	case GroomPromote:
		if c.principal != nil {
			return nil, fmt.Errorf("promotion is an operator's act (pgm-admin memory groom --mode promote): %w", ErrForbidden)
		}
		if req.Groomer == nil {
			return nil, validate.Invalid("mode", "promote needs an extraction LLM (a Groomer); none is configured")
		}
	default:
		return nil, validate.Invalid("mode", "%q is not one of dry_run, archive, promote", validate.Truncate(string(req.Mode), 40))
	}
	if req.OlderThan == "" {
		req.OlderThan = "7d"
	}
	age, err := ParseAge("older_than", req.OlderThan)
	if err != nil {
		return nil, err
	}
	if req.Limit < 0 {
		return nil, validate.Invalid("limit", "must not be negative")
	}
	tags, err := validate.Tags("tags", req.Tags)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct{ name, v string }{{"topic", req.Topic}, {"session_id", req.SessionID}} {
		if err := validate.Short(f.name, f.v, MaxOwnerLen); err != nil {
			return nil, err
		}
	}
	scopes, err := c.groomScopes(ctx, req)
	if err != nil {
		return nil, err
	}
	now := c.now()
	res := &GroomResult{Mode: req.Mode, DryRun: req.Mode == GroomDryRun, Cutoff: now.Add(-age), Scopes: scopes, Items: []GroomItem{}}
	if res.Scopes == nil {
		res.Scopes = []string{}
	}
	f := driver.EntityFilter{Types: []EntityType{TypeMemory}, MemoryRole: RoleSessionContext, Tags: tags, UpdatedBefore: res.Cutoff}
	if len(f.Tags) == 0 {
		f.Tags = nil
	}
	if c.principal != nil {
		// Visibility and type limits of the key still apply.
		var ok bool
		if f, ok = c.principal.restrict(f); !ok {
			return res, nil
		}
	}
	q := driver.FindQuery{Order: driver.OrderOldest, Meta: []driver.MetaCond{{Key: metaGroomAfter, Op: driver.MetaLE, Value: formatMetaTime(now), OrMissing: true}}}
	if req.Topic != "" {
		q.Meta = append(q.Meta, driver.MetaCond{Key: metaTopic, Op: driver.MetaEq, Value: req.Topic})
	}
	if req.SessionID != "" {
		q.Meta = append(q.Meta, driver.MetaCond{Key: metaSessionID, Op: driver.MetaEq, Value: req.SessionID})
	}
	for _, scope := range scopes {
		limit := 0
		if req.Limit > 0 {
			if limit = req.Limit - res.Eligible; limit <= 0 {
				break
			}
		}
		scope := scope
		q.ClientID = &scope
		err := c.eachCandidate(ctx, f, q, limit, req.Mode == GroomDryRun, func(e *Entity) bool {
			item := GroomItem{ID: e.ID, ClientID: e.ClientID, Topic: metaStr(e.Metadata, metaTopic),
				SessionID: metaStr(e.Metadata, metaSessionID), UpdatedAt: e.UpdatedAt, Preview: validate.Truncate(e.Content, 200), Action: "eligible",
				Entity: e.Clone()}
			res.Eligible++
			if req.Mode != GroomDryRun {
				c.groomOne(ctx, req, e, &item, res)
			}
			res.Items = append(res.Items, item)
			return item.Action == "failed" || item.Action == "eligible"
		})
		if err != nil {
			return nil, fmt.Errorf("groom session context: %w", err)
		}
	}
	return res, nil
}

// groomOne archives or promotes one session context, recording the
// outcome in item and res.
func (c *Client) groomOne(ctx context.Context, req GroomRequest, e *Entity, item *GroomItem, res *GroomResult) {
	fail := func(err error) {
		item.Action, item.Error = "failed", err.Error()
		res.Failed++
	}
	now := c.now()
	src := e.Clone()
	src.Status = StatusArchived
	src.Version = e.Version + 1
	src.UpdatedAt = now
	src.Metadata[metaGroomedAt] = formatMetaTime(now)
	ops := []driver.BatchOp{}
	if req.Mode == GroomPromote && e.Metadata[metaPromotable] != false {
		d, err := req.Groomer.PromoteSessionContext(ctx, llm.SessionCandidate{ID: e.ID, Content: e.Content,
			Topic: item.Topic, SessionID: item.SessionID, Tags: e.Tags, UpdatedAt: e.UpdatedAt})
		if err != nil {
			fail(fmt.Errorf("groomer: %w", err))
			return
		}
		item.Reason = d.Reason
		if d.Promote {
			if err := validate.Content("content", d.Content, true); err != nil {
				fail(fmt.Errorf("groomer returned an unusable promotion: %w", err))
				return
			}
			tags, err := validate.Tags("tags", append(append([]string(nil), e.Tags...), d.Tags...))
			if err != nil {
				fail(fmt.Errorf("groomer returned unusable tags: %w", err))
				return
			}
			meta := map[string]any{"memory_role": string(RoleDurableMemory), metaPromotedFrom: e.ID.String()}
			if item.Topic != "" {
				meta[metaTopic] = item.Topic
			}
			if d.Reason != "" {
				meta["promotion_reason"] = validate.Truncate(d.Reason, 1000)
			}
			nu := &Entity{ID: newID(), Type: TypeMemory, Content: d.Content, Visibility: e.Visibility, Owner: e.Owner,
				Status: StatusActive, Tags: tags, Source: EdgeSourceGrooming, Metadata: meta, Version: 1, ClientID: e.ClientID,
				EnrichmentStatus: StagePending, CreatedAt: now, UpdatedAt: now}
			nu.ExtractionStatus = c.extractionStatusFor(nu, false)
			src.Metadata[metaPromotedTo] = nu.ID.String()
			src.Metadata[metaGroomAction] = "promoted"
			ops = append(ops,
				driver.BatchOp{Create: nu, Chunks: c.chunksFor(nu.Content),
					Audit: c.auditEntry("memory.promote", nu.ID.String(), map[string]any{"promoted_from": e.ID.String()})},
				driver.BatchOp{Update: src, Expected: e.Version},
				driver.BatchOp{Edge: &driver.BatchEdge{ID: newID(), SourceID: e.ID, TargetID: nu.ID, Relation: RelationPromotedTo,
					Confidence: 1, Source: EdgeSourceGrooming, Metadata: map[string]any{}, CreatedAt: now}})
			if err := c.store.WriteBatch(ctx, c.ws, ops); err != nil {
				fail(err)
				return
			}
			c.wake()
			item.Action, item.PromotedTo = "promoted", &nu.ID
			res.Promoted++
			res.Archived++
			return
		}
	}
	src.Metadata[metaGroomAction] = "archived"
	ops = append(ops, driver.BatchOp{Update: src, Expected: e.Version,
		Audit: c.auditEntry("memory.groom", e.ID.String(), map[string]any{"action": "archive"})})
	if err := c.store.WriteBatch(ctx, c.ws, ops); err != nil {
		fail(err)
		return
	}
	item.Action = "archived"
	res.Archived++
}

// DurableGroomRequest selects durable memories to review.
type DurableGroomRequest struct {
	// Mode is GroomDryRun (list candidates, no LLM) or GroomMark.
	Mode GroomMode `json:"mode"`
	// OlderThan: only memories not updated for this long. Default 30d.
	OlderThan    string       `json:"older_than,omitempty"`
	Topic        string       `json:"topic,omitempty"`
	Tags         []string     `json:"tags,omitempty"`
	Visibilities []Visibility `json:"visibility,omitempty"`
	Limit        int          `json:"limit,omitempty"`
	Groomer      llm.Groomer  `json:"-"`
}

// durableFilter selects active durable memories (legacy memories without
// a role included).
func durableFilter(tags []string, vis []Visibility, topic string) (driver.EntityFilter, driver.FindQuery, error) {
	nt, err := validate.Tags("tags", tags)
	if err != nil {
		return driver.EntityFilter{}, driver.FindQuery{}, err
	}
	for i, v := range vis {
		if err := validateVisibility(fmt.Sprintf("visibility[%d]", i), v); err != nil {
			return driver.EntityFilter{}, driver.FindQuery{}, err
		}
	}
	if err := validate.Short("topic", topic, MaxOwnerLen); err != nil {
		return driver.EntityFilter{}, driver.FindQuery{}, err
	}
	f := driver.EntityFilter{Types: []EntityType{TypeMemory}, Statuses: []Status{StatusActive}, Visibilities: vis}
	if len(nt) > 0 {
		f.Tags = nt
	}
	q := driver.FindQuery{Order: driver.OrderOldest, Meta: []driver.MetaCond{{Key: "memory_role", Op: driver.MetaEq, Value: string(RoleDurableMemory), OrMissing: true}}}
	if topic != "" {
		q.Meta = append(q.Meta, driver.MetaCond{Key: metaTopic, Op: driver.MetaEq, Value: topic})
	}
	return f, q, nil
}

// GroomDurable reviews durable memories: with GroomMark the Groomer
// classifies each as keep, needs_grooming, archive or superseded and the
// review is written to metadata.durable_grooming (outcome, reason,
// reviewed_at, suggestion, superseded_by). It never rewrites content or
// changes status (ApplyDurableGrooming does). Operators only.
func (a *Admin) GroomDurable(ctx context.Context, req DurableGroomRequest) (*GroomResult, error) {
	c := a.c
	if req.Mode == "" {
		req.Mode = GroomDryRun
	}
	if req.Mode != GroomDryRun && req.Mode != GroomMark {
		return nil, validate.Invalid("mode", "%q is not one of dry_run, mark", validate.Truncate(string(req.Mode), 40))
	}
	if req.Mode == GroomMark && req.Groomer == nil {
		return nil, validate.Invalid("mode", "mark needs an extraction LLM (a Groomer); none is configured")
	}
	if req.OlderThan == "" {
		req.OlderThan = "30d"
	}
	age, err := ParseAge("older_than", req.OlderThan)
	if err != nil {
		return nil, err
	}
	if req.Limit < 0 {
		return nil, validate.Invalid("limit", "must not be negative")
	}
	f, q, err := durableFilter(req.Tags, req.Visibilities, req.Topic)
	if err != nil {
		return nil, err
	}
	now := c.now()
	f.UpdatedBefore = now.Add(-age)
	res := &GroomResult{Mode: req.Mode, DryRun: req.Mode == GroomDryRun, Cutoff: f.UpdatedBefore, Scopes: []string{}, Items: []GroomItem{}}
	err = c.eachCandidate(ctx, f, q, req.Limit, req.Mode == GroomDryRun, func(e *Entity) bool {
		item := GroomItem{ID: e.ID, ClientID: e.ClientID, Topic: metaStr(e.Metadata, metaTopic), UpdatedAt: e.UpdatedAt,
			Preview: validate.Truncate(e.Content, 200), Action: "eligible"}
		res.Eligible++
		defer func() { res.Items = append(res.Items, item) }()
		if req.Mode == GroomDryRun {
			return item.Action == "failed" || item.Action == "eligible"
		}
		rv, err := req.Groomer.ReviewDurable(ctx, llm.DurableCandidate{ID: e.ID, Content: e.Content, Tags: e.Tags, Metadata: e.Metadata, UpdatedAt: e.UpdatedAt})
		if err == nil {
			switch rv.Outcome {
			case llm.OutcomeKeep, llm.OutcomeNeedsGrooming, llm.OutcomeArchive, llm.OutcomeSuperseded:
			default:
				err = fmt.Errorf("groomer returned outcome %q", rv.Outcome)
			}
		}
		if err != nil {
			item.Action, item.Error = "failed", err.Error()
			res.Failed++
			return item.Action == "failed" || item.Action == "eligible"
		}
		mark := map[string]any{"outcome": rv.Outcome, "reason": validate.Truncate(rv.Reason, 2000), "reviewed_at": formatMetaTime(c.now())}
		if rv.Suggestion != "" {
			mark["suggestion"] = validate.Truncate(rv.Suggestion, 16<<10)
		}
		if rv.SupersededBy != "" {
			mark["superseded_by"] = validate.Truncate(rv.SupersededBy, 100)
		}
		if _, err := c.Update(ctx, e.ID, UpdateInput{Version: e.Version, Metadata: map[string]any{metaDurableGrooming: mark}}); err != nil {
			item.Action, item.Error = "failed", err.Error()
			res.Failed++
			return item.Action == "failed" || item.Action == "eligible"
		}
		item.Action, item.Outcome, item.Reason = "marked", rv.Outcome, rv.Reason
		res.Marked++
		return false
	})
	return res, err
}

// eachCandidate calls fn for every entity matching f and q, oldest first,
// up to limit (0: all). fn reports whether the entity still matches after
// it ran (a failure leaves it selected); a writing run (stable false)
// pages past only those, since groomed rows leave the selection.
func (c *Client) eachCandidate(ctx context.Context, f driver.EntityFilter, q driver.FindQuery, limit int, stable bool, fn func(*Entity) (remains bool)) error {
	seen := map[uuid.UUID]bool{}
	offset, remaining := 0, 0
	for {
		n := MaxListLimit
		if limit > 0 {
			n = min(n, limit-len(seen))
			if n <= 0 {
				return nil
			}
		}
		if !stable {
			offset = remaining
		}
		page, _, err := c.store.FindEntities(ctx, c.ws, f, q, n, offset)
		if err != nil {
			return fmt.Errorf("select memories: %w", err)
		}
		fresh := 0
		for _, e := range page {
			if seen[e.ID] {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			seen[e.ID] = true
			fresh++
			if fn(e) {
				remaining++
			}
		}
		if len(page) < n || fresh == 0 {
			return nil
		}
		offset += len(page)
	}
}

// ApplyMode selects what ApplyDurableGrooming does.
type ApplyMode string

// Apply modes.
const (
	ApplyAuto    ApplyMode = "auto"    // rewrite needs_grooming, archive archive and superseded
	ApplyRewrite ApplyMode = "rewrite" // only rewrites
	ApplyArchive ApplyMode = "archive" // only archives
)

// ApplyGroomingRequest applies durable grooming marks.
type ApplyGroomingRequest struct {
	Mode   ApplyMode `json:"mode"`
	DryRun bool      `json:"dry_run"`
	// Outcomes narrows the marks applied (needs_grooming, archive,
	// superseded); empty means every outcome the mode handles.
	Outcomes     []string     `json:"status,omitempty"`
	Topic        string       `json:"topic,omitempty"`
	Tags         []string     `json:"tags,omitempty"`
	Visibilities []Visibility `json:"visibility,omitempty"`
	Limit        int          `json:"limit,omitempty"`
	// Groomer rewrites needs_grooming memories that carry no suggestion.
	Groomer llm.Groomer `json:"-"`
}

// ApplyDurableGrooming applies the marks GroomDurable wrote: a rewrite
// replaces the content (re-chunking it and queueing it for embedding
// again) from the stored suggestion or the Groomer; archive and
// superseded archive the memory. Each applied memory records
// metadata.durable_grooming.applied_at and applied_action. Operators only.
func (a *Admin) ApplyDurableGrooming(ctx context.Context, req ApplyGroomingRequest) (*GroomResult, error) {
	c := a.c
	if req.Mode == "" {
		req.Mode = ApplyAuto
	}
	handles := map[ApplyMode][]string{
		ApplyAuto:    {llm.OutcomeNeedsGrooming, llm.OutcomeArchive, llm.OutcomeSuperseded},
		ApplyRewrite: {llm.OutcomeNeedsGrooming},
		ApplyArchive: {llm.OutcomeArchive, llm.OutcomeSuperseded},
	}[req.Mode]
	if handles == nil {
		return nil, validate.Invalid("mode", "%q is not one of auto, rewrite, archive", validate.Truncate(string(req.Mode), 40))
	}
	outcomes := handles
	if len(req.Outcomes) > 0 {
		outcomes = nil
		for i, o := range req.Outcomes {
			ok := false
			for _, h := range handles {
				ok = ok || h == o
			}
			if !ok {
				return nil, validate.Invalid(fmt.Sprintf("status[%d]", i), "%q is not an outcome mode %s applies (%s)", validate.Truncate(o, 40), req.Mode, strings.Join(handles, ", "))
			}
			outcomes = append(outcomes, o)
		}
	}
	if req.Limit < 0 {
		return nil, validate.Invalid("limit", "must not be negative")
	}
	f, q, err := durableFilter(req.Tags, req.Visibilities, req.Topic)
	if err != nil {
		return nil, err
	}
	q.Meta = append(q.Meta, driver.MetaCond{Key: metaDurableGrooming + ".applied_at", Op: driver.MetaMissing})
	res := &GroomResult{Mode: GroomMode(req.Mode), DryRun: req.DryRun, Scopes: []string{}, Items: []GroomItem{}}
	for _, outcome := range outcomes {
		oq := q
		oq.Meta = append(append([]driver.MetaCond(nil), q.Meta...), driver.MetaCond{Key: metaDurableGrooming + ".outcome", Op: driver.MetaEq, Value: outcome})
		limit := 0
		if req.Limit > 0 {
			if limit = req.Limit - res.Eligible; limit <= 0 {
				break
			}
		}
		err := c.eachCandidate(ctx, f, oq, limit, req.DryRun, func(e *Entity) bool {
			item := GroomItem{ID: e.ID, ClientID: e.ClientID, Topic: metaStr(e.Metadata, metaTopic), UpdatedAt: e.UpdatedAt,
				Preview: validate.Truncate(e.Content, 200), Action: "eligible", Outcome: outcome}
			res.Eligible++
			defer func() { res.Items = append(res.Items, item) }()
			if req.DryRun {
				return item.Action == "failed" || item.Action == "eligible"
			}
			mark, _ := e.Metadata[metaDurableGrooming].(map[string]any)
			newMark := driver.CloneMetadata(mark)
			newMark["applied_at"] = formatMetaTime(c.now())
			in := UpdateInput{Version: e.Version, Metadata: map[string]any{metaDurableGrooming: newMark}}
			if outcome == llm.OutcomeNeedsGrooming {
				content, _ := mark["suggestion"].(string)
				if strings.TrimSpace(content) == "" {
					if req.Groomer == nil {
						item.Action, item.Error = "failed", "no stored suggestion and no extraction LLM configured"
						res.Failed++
						return item.Action == "failed" || item.Action == "eligible"
					}
					reason, _ := mark["reason"].(string)
					var err error
					content, err = req.Groomer.RewriteDurable(ctx, llm.DurableCandidate{ID: e.ID, Content: e.Content, Tags: e.Tags, Metadata: e.Metadata, UpdatedAt: e.UpdatedAt}, reason)
					if err != nil {
						item.Action, item.Error = "failed", "groomer: "+err.Error()
						res.Failed++
						return item.Action == "failed" || item.Action == "eligible"
					}
				}
				newMark["applied_action"] = "rewrite"
				in.Content = &content
			} else {
				newMark["applied_action"] = "archive"
				st := StatusArchived
				in.Status = &st
			}
			if _, err := c.Update(ctx, e.ID, in); err != nil {
				item.Action, item.Error = "failed", err.Error()
				res.Failed++
				return item.Action == "failed" || item.Action == "eligible"
			}
			if outcome == llm.OutcomeNeedsGrooming {
				item.Action = "rewritten"
				res.Rewrote++
			} else {
				item.Action = "archived"
				res.Archived++
			}
			return false
		})
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}
