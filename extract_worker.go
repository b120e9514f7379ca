package postgram

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/validate"
)

// MemoryExtractionMode says which memories the extraction worker reads
// (EXTRACTION_MEMORY_MODE). Session context is never extracted, whatever
// the mode: it is working context scoped to one client, not knowledge.
type MemoryExtractionMode string

// Memory extraction modes.
const (
	// MemoryEmbedOnly embeds memories (they are searchable) but extracts
	// no graph from them. The default.
	MemoryEmbedOnly MemoryExtractionMode = "embed_only"
	// MemoryExtractDurable extracts durable memories only.
	MemoryExtractDurable MemoryExtractionMode = "extract_durable"
	// MemoryExtractAll extracts every memory but session context (durable
	// ones and memories without a role).
	MemoryExtractAll MemoryExtractionMode = "extract_all"
)

// Valid reports whether m is a known mode.
func (m MemoryExtractionMode) Valid() bool {
	switch m {
	case MemoryEmbedOnly, MemoryExtractDurable, MemoryExtractAll:
		return true
	}
	return false
}

// Auto-created placeholder entities carry TagAutoCreated and this metadata.
const (
	metaAutoCreatedBy   = "auto_created_by"
	metaSourceEntityID  = "source_entity_id"
	metaSkipExtraction  = "skip_extraction"
	defaultExtractConc  = 2
	defaultAutoCreateMC = 0.7
)

// DefaultAutoCreateTypes are the types extraction may auto-create
// (EXTRACTION_AUTO_CREATE_TYPES): documents, tasks and memories are
// written by people, never invented from a mention.
var DefaultAutoCreateTypes = []EntityType{TypePerson, TypeProject, TypeInteraction}

// ExtractionConfig configures LLM relation extraction. A nil Extractor
// turns extraction off (the default): entities are stored with
// extraction_status skipped.
type ExtractionConfig struct {
	// Extractor reads entities and returns relations (EXTRACTION_PROVIDER,
	// EXTRACTION_MODEL).
	Extractor llm.Extractor
	// ForOverride returns the extractor for a per-entity provider/model
	// override (pgm-admin improve-graph). Nil: an entity queued with an
	// override fails with an error saying so.
	ForOverride func(ExtractOverride) (llm.Extractor, error)
	// MemoryMode selects which memories are extracted. Default embed_only.
	MemoryMode MemoryExtractionMode
	// AutoCreate creates placeholder entities for names that resolve to no
	// existing entity (EXTRACTION_AUTO_CREATE_ENTITIES), when the type is
	// in AutoCreateTypes (default DefaultAutoCreateTypes) and the name's
	// best relation confidence is at least AutoCreateMinConfidence
	// (default 0.7). Placeholders are tagged auto-created, embedded, and
	// never extracted themselves.
	AutoCreate              bool
	AutoCreateTypes         []EntityType
	AutoCreateMinConfidence float64
	// SemanticNeighbors runs the semantic-neighbour pass after each
	// extraction (EXTRACTION_SEMANTIC_NEIGHBORS_ENABLED) with Neighbors'
	// options (zero values take NeighborOptions' defaults).
	SemanticNeighbors bool
	Neighbors         NeighborOptions
	// Concurrency is how many entities one worker loop extracts at once
	// (LLM calls are slow and mostly waiting). Default 2.
	Concurrency int
}

func (x *ExtractionConfig) defaults() {
	if x.MemoryMode == "" {
		x.MemoryMode = MemoryEmbedOnly
	}
	if x.AutoCreateTypes == nil {
		x.AutoCreateTypes = DefaultAutoCreateTypes
	}
	if x.AutoCreateMinConfidence == 0 {
		x.AutoCreateMinConfidence = defaultAutoCreateMC
	}
	if x.Concurrency == 0 {
		x.Concurrency = defaultExtractConc
	}
}

func (x *ExtractionConfig) validate() error {
	if !x.MemoryMode.Valid() {
		return validate.Invalid("extraction.memory_mode", "%q is not embed_only, extract_durable or extract_all", validate.Truncate(string(x.MemoryMode), 40))
	}
	for i, t := range x.AutoCreateTypes {
		if !t.Valid() {
			return validate.Invalid(fmt.Sprintf("extraction.auto_create_types[%d]", i), "%q is not an entity type", validate.Truncate(string(t), 40))
		}
	}
	if x.AutoCreateMinConfidence < 0 || x.AutoCreateMinConfidence > 1 {
		return validate.Invalid("extraction.auto_create_min_confidence", "must be between 0 and 1")
	}
	if x.Concurrency < 1 || x.Concurrency > 64 {
		return validate.Invalid("extraction.concurrency", "must be between 1 and 64")
	}
	if x.SemanticNeighbors {
		n := x.Neighbors
		if err := n.defaults(); err != nil {
			return err
		}
	}
	return nil
}

// ExtractionEnabled reports whether an extractor is configured.
func (a *Admin) ExtractionEnabled() bool { return a.c.cfg.Extraction.Extractor != nil }

// isPlaceholder reports whether e was auto-created by extraction.
func isPlaceholder(e *Entity) bool {
	if v, _ := e.Metadata[metaAutoCreatedBy].(string); v != "" {
		return true
	}
	return false
}

// extractionStatusFor is the extraction status a new or re-chunked entity
// gets: pending when an extractor is configured and the entity is one
// extraction reads, skipped otherwise.
func (c *core) extractionStatusFor(e *Entity, skip bool) StageStatus {
	x := &c.cfg.Extraction
	if x.Extractor == nil || skip || e.Status == StatusArchived || isPlaceholder(e) {
		return StageSkipped
	}
	if v, _ := e.Metadata[metaSkipExtraction].(bool); v {
		return StageSkipped
	}
	if !c.extractable(e) {
		return StageSkipped
	}
	return StagePending
}

// extractable applies the memory rules: session context never, memories
// by MemoryMode.
func (c *core) extractable(e *Entity) bool {
	role := e.MemoryRole()
	if role == RoleSessionContext {
		return false
	}
	if e.Type != TypeMemory {
		return true
	}
	switch c.cfg.Extraction.MemoryMode {
	case MemoryExtractDurable:
		return role == RoleDurableMemory
	case MemoryExtractAll:
		return true
	}
	return false
}

// ExtractStats counts the work one ExtractPending call did.
type ExtractStats struct {
	Entities     int `json:"entities"`       // entities extracted
	Edges        int `json:"edges"`          // edges written
	Placeholders int `json:"placeholders"`   // entities auto-created
	Failed       int `json:"failed"`         // entities whose attempt failed
	Stale        int `json:"stale"`          // results dropped because the content changed meanwhile
	Neighbors    int `json:"neighbor_edges"` // semantic-neighbor edges written
}

func (s *ExtractStats) add(o ExtractStats) {
	s.Entities += o.Entities
	s.Edges += o.Edges
	s.Placeholders += o.Placeholders
	s.Failed += o.Failed
	s.Stale += o.Stale
	s.Neighbors += o.Neighbors
}

var errNoExtractor = fmt.Errorf("no extraction provider is configured (EXTRACTION_ENABLED): %w", ErrUnavailable)

func (c *core) extraction() driver.ExtractionStorage { return c.store }

// ExtractPending processes the extraction queue synchronously until no
// due work remains (failures waiting for their retry time are left for
// later). With an embedder, only entities whose embedding is completed
// are extracted, so run EnrichPending first. For tests, CLIs and embedded
// use without Start.
func (a *Admin) ExtractPending(ctx context.Context) (ExtractStats, error) {
	c := a.c
	var total ExtractStats
	if c.cfg.Extraction.Extractor == nil {
		return total, errNoExtractor
	}
	for {
		st, n, err := c.extractOnce(ctx)
		total.add(st)
		if err != nil {
			return total, err
		}
		if n == 0 {
			return total, nil
		}
	}
}

// extractOnce claims up to Concurrency entities and extracts them in
// parallel. It returns how many it claimed.
func (c *core) extractOnce(ctx context.Context) (ExtractStats, int, error) {
	var st ExtractStats
	x := &c.cfg.Extraction
	w := &c.cfg.Worker
	jobs, err := c.store.ClaimWork(ctx, c.ws, driver.WorkClaim{Queue: driver.QueueExtraction, Max: x.Concurrency,
		MaxAttempts: w.MaxAttempts, Lease: w.Lease, AfterEmbedding: c.embedder != nil})
	if err != nil {
		return st, 0, fmt.Errorf("claim extraction work: %w", err)
	}
	if len(jobs) == 0 {
		return st, 0, nil
	}
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one, err := c.extractJob(ctx, j)
			mu.Lock()
			defer mu.Unlock()
			st.add(one)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	return st, len(jobs), firstErr
}

// extractJob extracts one entity. LLM and resolution failures are
// recorded on the entity (and retried); only store errors are returned.
func (c *core) extractJob(ctx context.Context, j driver.Lease) (ExtractStats, error) {
	var st ExtractStats
	w := &c.cfg.Worker
	fail := func(cause error) error {
		if ctx.Err() != nil {
			// Shutting down: leave the lease to expire rather than count an
			// attempt against the entity.
			return ctx.Err()
		}
		st.Failed++
		msg := validate.Truncate(cause.Error(), 1000)
		retryAt := c.now().Add(w.RetryBackoff)
		var ra interface{ RetryAfter() time.Duration }
		if errors.As(cause, &ra) && ra.RetryAfter() > w.RetryBackoff {
			retryAt = c.now().Add(ra.RetryAfter())
		}
		c.log.Warn("extraction failed; will retry", "entity", j.EntityID.String(), "attempt", j.Attempts+1, "err", msg)
		if err := c.store.FailWork(ctx, c.ws, driver.QueueExtraction, []driver.Lease{j}, msg, retryAt); err != nil {
			return fmt.Errorf("record extraction failure: %w", err)
		}
		return nil
	}
	e, err := c.store.GetEntity(ctx, c.ws, j.EntityID)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return st, nil
		}
		return st, fmt.Errorf("load entity to extract: %w", err)
	}
	res := driver.ExtractResult{EntityID: e.ID, Generation: j.Generation, Retract: []string{EdgeSourceLLM}}
	if e.Status != StatusArchived && !isPlaceholder(e) && c.extractable(e) {
		ex, err := c.extractorFor(j.Override)
		if err != nil {
			return st, fail(err)
		}
		out, err := ex.Extract(ctx, llm.ExtractInput{Type: e.Type, Name: DisplayName(e), Content: e.Content})
		if err != nil {
			return st, fail(err)
		}
		if out.Info == (llm.ExtractorInfo{}) {
			out.Info = ex.Info()
		}
		if err := c.buildExtraction(ctx, e, out, &res); err != nil {
			if errors.Is(err, ErrLLMFailed) || errors.Is(err, ErrInvalidArgument) {
				return st, fail(err)
			}
			return st, err
		}
		res.Audit = &AuditEntry{ID: newID(), At: c.now(), Operation: "entity.extract", EntityID: e.ID.String(), Details: map[string]any{
			"edges": len(res.Edges), "placeholders": len(res.Creates),
			"provider": out.Info.Provider, "model": out.Info.Model, "prompt_version": out.Info.PromptVersion}}
	}
	written, ok, err := c.extraction().CompleteExtraction(ctx, c.ws, res)
	if err != nil {
		return st, fmt.Errorf("record extraction: %w", err)
	}
	if !ok {
		st.Stale++
		return st, nil
	}
	st.Entities++
	st.Edges += written
	st.Placeholders += len(res.Creates)
	if len(res.Creates) > 0 {
		c.wake() // placeholders wait for embedding
	}
	c.log.Info("extracted", "entity", e.ID.String(), "edges", written, "placeholders", len(res.Creates))
	if x := &c.cfg.Extraction; x.SemanticNeighbors && e.Status != StatusArchived {
		opts := x.Neighbors
		if err := opts.defaults(); err == nil {
			nr, err := c.linkNeighbors(ctx, e.ID, opts)
			if err != nil {
				c.log.Warn("semantic-neighbor pass failed", "entity", e.ID.String(), "err", err)
			} else {
				st.Neighbors += len(nr.Neighbors)
			}
		}
	}
	return st, nil
}

// extractorFor returns the configured extractor, or the override's.
func (c *core) extractorFor(o ExtractOverride) (llm.Extractor, error) {
	x := &c.cfg.Extraction
	if o == (ExtractOverride{}) {
		return x.Extractor, nil
	}
	if x.ForOverride == nil {
		return nil, fmt.Errorf("%w: the entity asks for provider %q model %q, and this client has no way to build another extractor",
			ErrUnavailable, o.Provider, o.Model)
	}
	ex, err := x.ForOverride(o)
	if err != nil {
		return nil, fmt.Errorf("extractor for provider %q model %q: %w", o.Provider, o.Model, err)
	}
	return ex, nil
}

// DisplayName is how an entity is named to people and models: its
// metadata title or name, else the first line of its content (at most 120
// characters).
func DisplayName(e *Entity) string {
	for _, k := range []string{"title", "name"} {
		if s, ok := e.Metadata[k].(string); ok && strings.TrimSpace(s) != "" {
			return validate.Truncate(validate.CleanName(s), 120)
		}
	}
	line := e.Content
	if i := strings.IndexByte(line, '\n'); i >= 0 {
		line = line[:i]
	}
	line = strings.TrimLeft(strings.TrimSpace(line), "# ")
	return validate.Truncate(validate.CleanName(line), 120)
}

// buildExtraction resolves the extraction's names to entities (the entity
// itself for SELF or its own name; existing entities by exact,
// case-insensitive name or alias; auto-created placeholders when allowed)
// and fills res with the edges and creations. Relations whose ends do not
// resolve are dropped; self-loops too.
func (c *core) buildExtraction(ctx context.Context, e *Entity, out *llm.Extraction, res *driver.ExtractResult) error {
	x := &c.cfg.Extraction
	selfKey := validate.NameKey(DisplayName(e))
	types := map[string]EntityType{} // name key -> type the model gave
	for _, en := range out.Entities {
		k := validate.NameKey(en.Name)
		if _, ok := types[k]; !ok {
			types[k] = en.Type
		}
	}
	isSelf := func(k string) bool { return k == strings.ToLower(llm.SelfName) || (selfKey != "" && k == selfKey) }
	best := map[string]float64{} // name key -> highest confidence among its relations
	display := map[string]string{}
	var keys []string
	for _, r := range out.Relations {
		for _, n := range []string{r.Source, r.Target} {
			k := validate.NameKey(n)
			if isSelf(k) {
				continue
			}
			if _, ok := best[k]; !ok {
				keys = append(keys, k)
				display[k] = validate.CleanName(n)
			}
			best[k] = max(best[k], r.Confidence)
		}
	}
	resolved := map[string]uuid.UUID{}
	if len(keys) > 0 {
		matches, err := c.extraction().FindByNames(ctx, c.ws, keys)
		if err != nil {
			return fmt.Errorf("resolve extracted names: %w", err)
		}
		byKey := map[string][]driver.NameMatch{}
		for _, m := range matches {
			byKey[m.Key] = append(byKey[m.Key], m)
		}
		for _, k := range keys {
			ms := byKey[k]
			if len(ms) == 0 {
				continue
			}
			want := types[k]
			sort.Slice(ms, func(a, b int) bool {
				ma, mb := ms[a], ms[b]
				if (ma.Type == want) != (mb.Type == want) {
					return ma.Type == want
				}
				if ma.Exact != mb.Exact {
					return ma.Exact
				}
				if !ma.CreatedAt.Equal(mb.CreatedAt) {
					return ma.CreatedAt.Before(mb.CreatedAt)
				}
				return ma.EntityID.String() < mb.EntityID.String()
			})
			resolved[k] = ms[0].EntityID
		}
	}
	if x.AutoCreate {
		now := c.now()
		for _, k := range keys {
			if _, ok := resolved[k]; ok {
				continue
			}
			t, ok := types[k]
			if !ok || !containsType(x.AutoCreateTypes, t) || best[k] < x.AutoCreateMinConfidence {
				continue
			}
			status := StatusActive
			if t == TypeTask {
				status = StatusInbox
			}
			p := &Entity{ID: newID(), Type: t, Content: display[k], Visibility: e.Visibility, Owner: e.Owner,
				Status: status, Tags: []string{TagAutoCreated}, Source: EdgeSourceLLM,
				Metadata: map[string]any{metaAutoCreatedBy: EdgeSourceLLM, metaSourceEntityID: e.ID.String()},
				Version:  1, EnrichmentStatus: StagePending, ExtractionStatus: StageSkipped, CreatedAt: now, UpdatedAt: now}
			if err := validate.Content("content", p.Content, true); err != nil {
				continue
			}
			res.Creates = append(res.Creates, driver.PlaceholderCreate{Entity: p, Chunks: c.chunksFor(p.Content)})
			resolved[k] = p.ID
		}
	}
	endpoint := func(name string) (uuid.UUID, bool) {
		k := validate.NameKey(name)
		if isSelf(k) {
			return e.ID, true
		}
		id, ok := resolved[k]
		return id, ok
	}
	type key struct {
		s, t uuid.UUID
		rel  string
	}
	idx := map[key]int{}
	now := c.now()
	info := out.Info
	for _, r := range out.Relations {
		s, ok1 := endpoint(r.Source)
		t, ok2 := endpoint(r.Target)
		if !ok1 || !ok2 || s == t {
			continue
		}
		k := key{s, t, r.Relation}
		if i, ok := idx[k]; ok {
			res.Edges[i].Confidence = max(res.Edges[i].Confidence, r.Confidence)
			continue
		}
		origin := e.ID
		idx[k] = len(res.Edges)
		res.Edges = append(res.Edges, Edge{ID: newID(), SourceID: s, TargetID: t, Relation: r.Relation,
			Confidence: r.Confidence, Source: EdgeSourceLLM,
			Metadata: map[string]any{"source_name": validate.CleanName(r.Source), "target_name": validate.CleanName(r.Target)},
			OriginID: &origin, Provider: info.Provider, Model: info.Model, PromptVersion: info.PromptVersion,
			CreatedAt: now, UpdatedAt: now})
	}
	return nil
}

func containsType(ts []EntityType, t EntityType) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}
