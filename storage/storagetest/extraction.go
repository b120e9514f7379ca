package storagetest

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
)

// testExtraction runs the LLM-extraction conformance tests.
func testExtraction(t *testing.T, open Opener) {
	for _, tt := range []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"Corpus", testExtractionCorpus},
		{"Eligibility", testExtractionEligibility},
		{"FailureAndRetry", testExtractionFailure},
		{"StaleResult", testExtractionStale},
		{"ReextractAndOverride", testReextract},
		{"ValidateEdges", testValidateEdges},
		{"ConcurrentWorkers", testExtractionConcurrent},
		{"BackgroundWorker", testExtractionWorker},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open)
		})
	}
}

// extractEnv is an env whose client extracts with a scripted LLM.
func extractEnv(t *testing.T, open Opener, model *postgramtest.ScriptedLLM, mod ...func(*postgram.ExtractionConfig)) *env {
	t.Helper()
	return newEnv(t, open, func(c *postgram.Config) {
		c.Extraction.Extractor = llm.NewExtractor(model)
		// Long enough that two back-to-back passes on a loaded machine
		// fall inside it, short enough to wait out four times.
		c.Worker.RetryBackoff = 800 * time.Millisecond
		for _, m := range mod {
			m(&c.Extraction)
		}
	})
}

func (e *env) extract() postgram.ExtractStats {
	e.t.Helper()
	st, err := e.admin().ExtractPending(e.ctx)
	if err != nil {
		e.t.Fatalf("ExtractPending: %v", err)
	}
	return st
}

// edgeLine renders an edge by its ends' display names, for readable diffs.
type edgeLine struct {
	From, Relation, To, Source string
	Confidence                 float64
}

func (e *env) edgeLines(ids ...uuid.UUID) []edgeLine {
	e.t.Helper()
	seen := map[uuid.UUID]bool{}
	var out []edgeLine
	names := map[uuid.UUID]string{}
	name := func(id uuid.UUID) string {
		if n, ok := names[id]; ok {
			return n
		}
		ent, err := e.store.GetEntity(e.ctx, e.c.Workspace(), id)
		if err != nil {
			e.t.Fatalf("GetEntity(%s): %v", id, err)
		}
		names[id] = postgram.DisplayName(ent)
		return names[id]
	}
	for _, id := range ids {
		es, err := e.c.Edges(e.ctx, id, postgram.EdgesOptions{})
		if err != nil {
			e.t.Fatalf("Edges(%s): %v", id, err)
		}
		for _, x := range es {
			if seen[x.ID] {
				continue
			}
			seen[x.ID] = true
			out = append(out, edgeLine{From: name(x.SourceID), Relation: x.Relation, To: name(x.TargetID), Source: x.Source, Confidence: round3(x.Confidence)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return fmt.Sprint(a.From, a.Relation, a.To) < fmt.Sprint(b.From, b.Relation, b.To)
	})
	return out
}

// round3 hides float4 storage (PostgreSQL keeps confidence as real).
func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// kickoff is a meeting note naming people and a project; its scripted
// answer mixes an alias, a case difference, a placeholder-worthy name, a
// name below the auto-create confidence, a type that is never auto-created
// and a relation to a name that is nowhere.
const kickoff = `# Apollo kickoff
Alice Chen and Bob Martinez agreed to ship the ingestion service by March. Carol Diaz from finance joins next week. Dave may help. See the Q3 budget.`

var kickoffAnswer = map[string]any{
	"entities": []map[string]any{
		{"name": "Apollo", "type": "project"},
		{"name": "Alice Chen", "type": "person"},
		{"name": "bob  martinez", "type": "person"},
		{"name": "Carol Diaz", "type": "person"},
		{"name": "Dave", "type": "person"},
		{"name": "Q3 budget", "type": "document"},
	},
	"relations": []map[string]any{
		{"source": "SELF", "target": "Apollo", "relation": "part_of", "confidence": 0.9},
		{"source": "Alice Chen", "target": "Apollo", "relation": "works on", "confidence": 0.95},
		{"source": "bob  martinez", "target": "Apollo", "relation": "works_on", "confidence": 0.8},
		{"source": "SELF", "target": "Carol Diaz", "relation": "involves", "confidence": 0.85},
		{"source": "SELF", "target": "Dave", "relation": "involves", "confidence": 0.5},
		{"source": "SELF", "target": "Q3 budget", "relation": "mentions", "confidence": 0.9},
		{"source": "Alice Chen", "target": "Bob Martinez", "relation": "works_with", "confidence": 0.7},
		{"source": "Alice Chen", "target": "Alice Chen", "relation": "knows", "confidence": 0.9},
		{"source": "Apollo kickoff", "target": "Alice Chen", "relation": "involves", "confidence": 0.9},
	},
}

func testExtractionCorpus(t *testing.T, open Opener) {
	model := postgramtest.NewScriptedLLM("").OnValue("Alice Chen and Bob Martinez agreed", kickoffAnswer)
	e := extractEnv(t, open, model, func(x *postgram.ExtractionConfig) { x.AutoCreate = true })
	alice := e.store1(postgram.StoreInput{Type: postgram.TypePerson, Content: "Alice Chen"})
	bob := e.store1(postgram.StoreInput{Type: postgram.TypePerson, Content: "Bob is the infrastructure lead; he runs the on-call rota.",
		Metadata: map[string]any{"name": "Bob Martinez"}})
	apollo := e.store1(postgram.StoreInput{Type: postgram.TypeProject, Content: "Project Apollo: the new ingestion pipeline.",
		Metadata: map[string]any{"title": "Project Apollo", "aliases": []any{"Apollo", "APL"}}})
	// An archived namesake and another client's session context are never
	// resolution targets.
	old := e.store1(postgram.StoreInput{Type: postgram.TypeProject, Content: "Apollo"})
	if _, err := e.c.Delete(e.ctx, old.ID); err != nil {
		t.Fatal(err)
	}
	doc := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: kickoff})
	manual := e.link(doc.ID, apollo.ID, "part_of") // a person said so first
	if doc.ExtractionStatus != postgram.StagePending {
		t.Fatalf("a new document's extraction is %s, want pending", doc.ExtractionStatus)
	}
	// Extraction waits for embedding.
	if st := e.extract(); st.Entities != 0 {
		t.Fatalf("extracted before embedding: %+v", st)
	}
	e.enrich()
	st := e.extract()
	if st.Placeholders != 1 || st.Failed != 0 {
		t.Fatalf("extract stats: %+v", st)
	}
	want := []edgeLine{
		{"Alice Chen", "works_on", "Project Apollo", postgram.EdgeSourceLLM, 0.95},
		{"Alice Chen", "works_with", "Bob Martinez", postgram.EdgeSourceLLM, 0.7},
		{"Apollo kickoff", "involves", "Alice Chen", postgram.EdgeSourceLLM, 0.9},
		{"Apollo kickoff", "involves", "Carol Diaz", postgram.EdgeSourceLLM, 0.85},
		{"Apollo kickoff", "part_of", "Project Apollo", postgram.EdgeSourceManual, 1},
		{"Bob Martinez", "works_on", "Project Apollo", postgram.EdgeSourceLLM, 0.8},
	}
	if diff := cmp.Diff(want, e.edgeLines(doc.ID, alice.ID, bob.ID, apollo.ID)); diff != "" {
		t.Fatalf("edges after extraction (-want +got):\n%s", diff)
	}
	// Provenance on every derived edge; the manual one is untouched.
	es, _ := e.c.Edges(e.ctx, apollo.ID, postgram.EdgesOptions{})
	for _, x := range es {
		if x.ID == manual.ID {
			if x.Source != postgram.EdgeSourceManual || x.OriginID != nil || x.Confidence != 1 {
				t.Fatalf("manual edge changed: %+v", x)
			}
			continue
		}
		if x.OriginID == nil || *x.OriginID != doc.ID || x.Provider != "scripted" || x.Model != "script-1" ||
			x.PromptVersion != llm.ExtractPromptVersion {
			t.Fatalf("derived edge lacks provenance: %+v", x)
		}
	}
	// The placeholder: tagged, pointing at its source, embedded but never extracted.
	page, err := e.c.List(e.ctx, postgram.ListOptions{Tags: []string{postgram.TagAutoCreated}})
	if err != nil || page.Total != 1 {
		t.Fatalf("placeholders: %v %+v", err, page)
	}
	carol := page.Items[0]
	if carol.Type != postgram.TypePerson || carol.Content != "Carol Diaz" || carol.Metadata["source_entity_id"] != doc.ID.String() ||
		carol.Metadata["auto_created_by"] != postgram.EdgeSourceLLM || carol.ExtractionStatus != postgram.StageSkipped ||
		carol.EnrichmentStatus != postgram.StagePending || carol.Visibility != doc.Visibility {
		t.Fatalf("placeholder: %+v", carol)
	}
	if st := e.enrich(); st.Entities != 1 {
		t.Fatalf("placeholder not embedded: %+v", st)
	}
	back, _ := e.c.Recall(e.ctx, doc.ID)
	if back.ExtractionStatus != postgram.StageCompleted || back.ExtractionAttempts != 0 || back.ExtractionError != "" || back.Version != doc.Version {
		t.Fatalf("document after extraction: %+v", back)
	}
	// A name mentioned again later resolves to the placeholder, not a new one.
	model.OnValue("Carol Diaz approved", map[string]any{
		"entities":  []map[string]any{{"name": "carol diaz", "type": "person"}},
		"relations": []map[string]any{{"source": "carol diaz", "target": "SELF", "relation": "approved", "confidence": 0.9}},
	})
	memo := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "Budget memo. Carol Diaz approved the spend."})
	e.enrich()
	if st := e.extract(); st.Placeholders != 0 || st.Edges != 1 {
		t.Fatalf("second mention: %+v", st)
	}
	if diff := cmp.Diff([]edgeLine{{"Carol Diaz", "approved", "Budget memo. Carol Diaz approved the spend.", postgram.EdgeSourceLLM, 0.9}},
		e.edgeLines(memo.ID)); diff != "" {
		t.Fatalf("second mention edges (-want +got):\n%s", diff)
	}

	// New content: the old derived edges are retracted, the new ones written;
	// the manual edge stays.
	model.OnValue("Kickoff moved", map[string]any{
		"entities":  []map[string]any{{"name": "Bob Martinez", "type": "person"}},
		"relations": []map[string]any{{"source": "Bob Martinez", "target": "SELF", "relation": "organised", "confidence": 0.75}},
	})
	nc := "# Apollo kickoff\nKickoff moved to Friday; Bob Martinez organises it."
	if _, err := e.c.Update(e.ctx, doc.ID, postgram.UpdateInput{Version: back.Version, Content: &nc}); err != nil {
		t.Fatal(err)
	}
	e.enrich()
	e.extract()
	// Everything the old content produced is gone (the works_on and
	// works_with edges came from it too); what the new content states and
	// the manual edge remain.
	want = []edgeLine{
		{"Apollo kickoff", "part_of", "Project Apollo", postgram.EdgeSourceManual, 1},
		{"Bob Martinez", "organised", "Apollo kickoff", postgram.EdgeSourceLLM, 0.75},
	}
	if diff := cmp.Diff(want, e.edgeLines(doc.ID, apollo.ID)); diff != "" {
		t.Fatalf("edges after the content changed (-want +got):\n%s", diff)
	}
	// Deleting the source retracts what it produced; manual edges stay.
	if _, err := e.c.Delete(e.ctx, doc.ID); err != nil {
		t.Fatal(err)
	}
	all, err := e.store.FindEdges(e.ctx, e.c.Workspace(), driver.EdgeQuery{OriginIDs: []uuid.UUID{doc.ID}})
	if err != nil || len(all) != 0 {
		t.Fatalf("edges of a deleted source: %v %+v", err, all)
	}
	if x, err := e.store.GetEdge(e.ctx, e.c.Workspace(), manual.ID); err != nil || x.Source != postgram.EdgeSourceManual {
		t.Fatalf("manual edge after deleting its source: %v %+v", err, x)
	}
}

func testExtractionEligibility(t *testing.T, open Opener) {
	t.Run("Off", func(t *testing.T) {
		e := newEnv(t, open)
		ent := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "no extractor configured"})
		if ent.ExtractionStatus != postgram.StageSkipped {
			t.Fatalf("without an extractor: %s", ent.ExtractionStatus)
		}
		if _, err := e.admin().ExtractPending(e.ctx); err == nil {
			t.Fatal("ExtractPending without an extractor succeeded")
		}
	})
	// Memories always carry a role (durable unless stored as session
	// context), and session context is never extracted, so extract_all
	// reads what extract_durable reads.
	for _, tt := range []struct {
		mode    postgram.MemoryExtractionMode
		durable postgram.StageStatus
	}{
		{postgram.MemoryEmbedOnly, postgram.StageSkipped},
		{postgram.MemoryExtractDurable, postgram.StagePending},
		{postgram.MemoryExtractAll, postgram.StagePending},
	} {
		t.Run(string(tt.mode), func(t *testing.T) {
			model := postgramtest.NewScriptedLLM("")
			e := extractEnv(t, open, model, func(x *postgram.ExtractionConfig) { x.MemoryMode = tt.mode })
			durable := e.store1(postgram.StoreInput{Type: postgram.TypeMemory, Content: "we deploy on Tuesdays"})
			project := e.store1(postgram.StoreInput{Type: postgram.TypeProject, Content: "Project Zephyr"})
			skipped := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "do not read me", SkipExtraction: true})
			sc, err := e.c.StoreSessionContext(e.ctx, postgram.SessionContextInput{Content: "working notes about Zephyr", SessionID: "s1"})
			if err != nil {
				t.Fatal(err)
			}
			got := []postgram.StageStatus{durable.ExtractionStatus, project.ExtractionStatus, skipped.ExtractionStatus, sc.ExtractionStatus}
			want := []postgram.StageStatus{tt.durable, postgram.StagePending, postgram.StageSkipped, postgram.StageSkipped}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("statuses (durable memory, project, skip_extraction, session context) (-want +got):\n%s", diff)
			}
			e.enrich()
			st := e.extract()
			n := 1
			if tt.durable == postgram.StagePending {
				n++
			}
			if st.Entities != n {
				t.Fatalf("extracted %d entities, want %d", st.Entities, n)
			}
			for _, call := range model.Calls() {
				if strings.Contains(call.Prompt, "working notes") || strings.Contains(call.Prompt, "do not read me") {
					t.Fatalf("the LLM read something it must not: %q", call.Prompt)
				}
			}
			// Re-extraction never selects session context either.
			res, err := e.admin().Reextract(e.ctx, postgram.ReextractRequest{All: true, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range res.IDs {
				if id == sc.ID {
					t.Fatal("reextract selected session context")
				}
			}
		})
	}
}

func testExtractionFailure(t *testing.T, open Opener) {
	model := postgramtest.NewScriptedLLM("")
	model.Fail("flaky provider", fmt.Errorf("HTTP 503 from the LLM: %w", postgram.ErrUnavailable))
	model.On("off-schema answer", `{"entities":[],"relations":[{"source":"SELF","target":"X","relation":"rel","confidence":1.7}]}`)
	model.On("malformed answer", `{"entities":[`)
	e := extractEnv(t, open, model)
	flaky := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "a flaky provider note"})
	bad := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "an off-schema answer note"})
	broken := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "a malformed answer note"})
	e.link(bad.ID, flaky.ID, "related_to")
	e.enrich()
	for attempt := 1; attempt <= 4; attempt++ {
		st := e.extract()
		if st.Failed != 3 {
			t.Fatalf("attempt %d: %+v", attempt, st)
		}
		if st2 := e.extract(); st2.Failed != 0 {
			t.Fatalf("attempt %d retried before its backoff: %+v", attempt, st2)
		}
		for _, id := range []uuid.UUID{flaky.ID, bad.ID, broken.ID} {
			back, _ := e.c.Recall(e.ctx, id)
			if back.ExtractionStatus != postgram.StageFailed || back.ExtractionAttempts != attempt || back.ExtractionError == "" {
				t.Fatalf("after attempt %d: %+v", attempt, back)
			}
		}
		q, err := e.c.QueueStatus(e.ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		kinds := 0
		for _, f := range q.Failures {
			if f.Kind == "extraction" {
				kinds++
			}
		}
		if q.Extraction == nil || q.Extraction.Failed != 3 || kinds != 3 {
			t.Fatalf("queue after attempt %d: %+v %+v", attempt, q.Extraction, q.Failures)
		}
		time.Sleep(850 * time.Millisecond)
	}
	back, _ := e.c.Recall(e.ctx, bad.ID)
	if !strings.Contains(back.ExtractionError, "confidence") {
		t.Fatalf("the recorded error does not say what was wrong: %q", back.ExtractionError)
	}
	// Exhausted: no more attempts, and a failure never wrote part of a graph.
	model.Forget("flaky provider")
	if st := e.extract(); st.Entities != 0 || st.Failed != 0 {
		t.Fatalf("exhausted entities retried: %+v", st)
	}
	edges, _ := e.store.FindEdges(e.ctx, e.c.Workspace(), driver.EdgeQuery{Sources: []string{postgram.EdgeSourceLLM}})
	if len(edges) != 0 {
		t.Fatalf("failed extractions wrote edges: %+v", edges)
	}
	// --only-failed re-queues them with fresh attempts.
	res, err := e.admin().Reextract(e.ctx, postgram.ReextractRequest{All: true, OnlyFailed: true})
	if err != nil || res.Queued != 3 {
		t.Fatalf("reextract --only-failed: %v %+v", err, res)
	}
	if st := e.extract(); st.Entities != 1 || st.Failed != 2 {
		t.Fatalf("after re-queue: %+v", st)
	}
	back, _ = e.c.Recall(e.ctx, flaky.ID)
	if back.ExtractionStatus != postgram.StageCompleted || back.ExtractionAttempts != 0 || back.ExtractionError != "" {
		t.Fatalf("recovered entity: %+v", back)
	}
}

func testExtractionStale(t *testing.T, open Opener) {
	model := postgramtest.NewScriptedLLM("").OnValue("first version", map[string]any{
		"entities":  []map[string]any{{"name": "Zed", "type": "person"}},
		"relations": []map[string]any{{"source": "SELF", "target": "Zed", "relation": "mentions", "confidence": 0.9}},
	})
	gate := &gatedLLM{ScriptedLLM: model, marker: "first version", entered: make(chan struct{}), release: make(chan struct{})}
	e := newEnv(t, open, func(c *postgram.Config) { c.Extraction.Extractor = llm.NewExtractor(gate) })
	e.store1(postgram.StoreInput{Type: postgram.TypePerson, Content: "Zed"})
	doc := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "the first version names Zed"})
	e.enrich()
	done := make(chan postgram.ExtractStats, 1)
	go func() {
		st, err := e.admin().ExtractPending(e.ctx)
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	<-gate.entered
	nc := "the second version names nobody"
	if _, err := e.c.Update(e.ctx, doc.ID, postgram.UpdateInput{Version: 1, Content: &nc}); err != nil {
		t.Fatal(err)
	}
	close(gate.release)
	st := <-done
	if st.Stale != 1 {
		t.Fatalf("stale result not detected: %+v", st)
	}
	if lines := e.edgeLines(doc.ID); len(lines) != 0 {
		t.Fatalf("a stale extraction wrote edges: %+v", lines)
	}
	e.enrich()
	if st := e.extract(); st.Entities != 1 || st.Edges != 0 {
		t.Fatalf("the new content was not extracted: %+v", st)
	}
}

// gatedLLM blocks the first call whose prompt holds marker until release
// is closed.
type gatedLLM struct {
	*postgramtest.ScriptedLLM
	marker           string
	entered, release chan struct{}
	once             sync.Once
}

func (g *gatedLLM) GenerateJSON(ctx context.Context, req llm.Request) (json.RawMessage, error) {
	first := false
	if strings.Contains(req.Prompt, g.marker) {
		g.once.Do(func() { first = true })
	}
	if first {
		close(g.entered)
		<-g.release
	}
	return g.ScriptedLLM.GenerateJSON(ctx, req)
}

func testReextract(t *testing.T, open Opener) {
	base := postgramtest.NewScriptedLLM("").OnValue("Helix", map[string]any{
		"entities":  []map[string]any{{"name": "Helix", "type": "project"}},
		"relations": []map[string]any{{"source": "SELF", "target": "Helix", "relation": "part_of", "confidence": 0.6}},
	})
	better := postgramtest.NewScriptedLLM("").WithInfo("anthropic", "claude-x").OnValue("Helix", map[string]any{
		"entities":  []map[string]any{{"name": "Helix", "type": "project"}},
		"relations": []map[string]any{{"source": "SELF", "target": "Helix", "relation": "part_of", "confidence": 0.95}},
	})
	var asked []postgram.ExtractOverride
	var mu sync.Mutex
	e := extractEnv(t, open, base, func(x *postgram.ExtractionConfig) {
		x.ForOverride = func(o postgram.ExtractOverride) (llm.Extractor, error) {
			mu.Lock()
			asked = append(asked, o)
			mu.Unlock()
			if o.Provider != "anthropic" {
				return nil, fmt.Errorf("unknown provider %q: %w", o.Provider, postgram.ErrInvalidArgument)
			}
			return llm.NewExtractor(better), nil
		}
	})
	helix := e.store1(postgram.StoreInput{Type: postgram.TypeProject, Content: "Helix"})
	d1 := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "Helix design review"})
	d2 := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "lunch menu"})
	e.enrich()
	e.extract()
	if _, err := e.admin().Reextract(e.ctx, postgram.ReextractRequest{}); postgram.FieldOf(err) != "scope" {
		t.Fatalf("reextract without a scope: %v", err)
	}
	if _, err := e.admin().As(postgram.Principal{Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}}).Admin(); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("a key got the operator API (reextract): %v", err)
	}
	// --no-edges-only picks the entities that produced nothing.
	res, err := e.admin().Reextract(e.ctx, postgram.ReextractRequest{Type: postgram.TypeDocument, NoEdgesOnly: true, DryRun: true})
	if err != nil || len(res.IDs) != 1 || res.IDs[0] != d2.ID || res.Queued != 0 {
		t.Fatalf("--no-edges-only dry run: %v %+v", err, res)
	}
	// improve-graph: another model for one entity; the edge gets its
	// provenance and confidence, the override is cleared on success.
	res, err = e.admin().Reextract(e.ctx, postgram.ReextractRequest{IDs: []uuid.UUID{d1.ID},
		Override: postgram.ExtractOverride{Provider: "anthropic", Model: "claude-x"}})
	if err != nil || res.Queued != 1 {
		t.Fatalf("improve-graph: %v %+v", err, res)
	}
	if st := e.extract(); st.Entities != 1 || st.Edges != 1 {
		t.Fatalf("improve-graph run: %+v", st)
	}
	es, _ := e.c.Edges(e.ctx, helix.ID, postgram.EdgesOptions{})
	if len(es) != 1 || es[0].Provider != "anthropic" || es[0].Model != "claude-x" || round3(es[0].Confidence) != 0.95 {
		t.Fatalf("edge after improve-graph: %+v", es)
	}
	if len(asked) != 1 || asked[0] != (postgram.ExtractOverride{Provider: "anthropic", Model: "claude-x"}) {
		t.Fatalf("overrides asked: %+v", asked)
	}
	// Cleared: a plain re-extraction uses the default model again; with
	// --clean-edges the old edges go at once.
	res, err = e.admin().Reextract(e.ctx, postgram.ReextractRequest{IDs: []uuid.UUID{d1.ID}, CleanEdges: true})
	if err != nil || res.EdgesDeleted != 1 {
		t.Fatalf("reextract --clean-edges: %v %+v", err, res)
	}
	if es, _ := e.c.Edges(e.ctx, helix.ID, postgram.EdgesOptions{}); len(es) != 0 {
		t.Fatalf("--clean-edges left %+v", es)
	}
	e.extract()
	es, _ = e.c.Edges(e.ctx, helix.ID, postgram.EdgesOptions{})
	if len(es) != 1 || es[0].Provider != "scripted" || round3(es[0].Confidence) != 0.6 {
		t.Fatalf("edge after a default re-extraction: %+v", es)
	}
	// An override the client cannot build fails the entity visibly.
	if _, err := e.admin().Reextract(e.ctx, postgram.ReextractRequest{IDs: []uuid.UUID{d1.ID},
		Override: postgram.ExtractOverride{Provider: "nope", Model: "x"}}); err != nil {
		t.Fatal(err)
	}
	if st := e.extract(); st.Failed != 1 {
		t.Fatalf("unbuildable override: %+v", st)
	}
	back, _ := e.c.Recall(e.ctx, d1.ID)
	if !strings.Contains(back.ExtractionError, "nope") {
		t.Fatalf("error does not name the provider: %q", back.ExtractionError)
	}
	// Limits and unknown ids.
	if _, err := e.admin().Reextract(e.ctx, postgram.ReextractRequest{IDs: []uuid.UUID{uuid.New()}}); postgram.FieldOf(err) != "id[0]" {
		t.Fatalf("unknown id: %v", err)
	}
	res, err = e.admin().Reextract(e.ctx, postgram.ReextractRequest{All: true, Limit: 1, DryRun: true})
	if err != nil || len(res.IDs) != 1 || res.IDs[0] != helix.ID {
		t.Fatalf("--limit 1 (oldest first): %v %+v", err, res)
	}
}

// judge is a scripted EdgeJudge: relations in reject are judged invalid,
// those in weak valid with low confidence.
type judge struct {
	mu     sync.Mutex
	calls  int
	reject map[string]bool
	weak   map[string]bool
}

func (j *judge) JudgeEdge(_ context.Context, c llm.EdgeClaim) (llm.EdgeVerdict, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.calls++
	switch {
	case j.reject[c.Relation]:
		return llm.EdgeVerdict{Valid: false, Confidence: 0.9, Reason: "the text does not say so"}, nil
	case j.weak[c.Relation]:
		return llm.EdgeVerdict{Valid: true, Confidence: 0.2, Reason: "barely implied"}, nil
	}
	if !strings.Contains(c.Content, c.TargetName) {
		return llm.EdgeVerdict{}, fmt.Errorf("judge saw no content for %s: %w", c.TargetName, postgram.ErrLLMFailed)
	}
	return llm.EdgeVerdict{Valid: true, Confidence: 0.9, Reason: "stated"}, nil
}

func testValidateEdges(t *testing.T, open Opener) {
	model := postgramtest.NewScriptedLLM("").OnValue("Orion", map[string]any{
		"entities": []map[string]any{{"name": "Orion", "type": "project"}, {"name": "Rhea", "type": "person"}, {"name": "Tess", "type": "person"}},
		"relations": []map[string]any{
			{"source": "SELF", "target": "Orion", "relation": "part_of", "confidence": 0.9},
			{"source": "Rhea", "target": "Orion", "relation": "owns", "confidence": 0.8},
			{"source": "Tess", "target": "Orion", "relation": "works_on", "confidence": 0.8},
		},
	})
	e := extractEnv(t, open, model)
	orion := e.store1(postgram.StoreInput{Type: postgram.TypeProject, Content: "Orion"})
	rhea := e.store1(postgram.StoreInput{Type: postgram.TypePerson, Content: "Rhea"})
	e.store1(postgram.StoreInput{Type: postgram.TypePerson, Content: "Tess"})
	doc := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "Orion status: Rhea and Tess on the Orion team."})
	hand := e.link(rhea.ID, orion.ID, "leads")
	e.enrich()
	e.extract()
	j := &judge{reject: map[string]bool{"owns": true, "leads": true}, weak: map[string]bool{"works_on": true}}
	if _, err := e.admin().ValidateEdges(e.ctx, postgram.ValidateEdgesRequest{}); postgram.FieldOf(err) != "judge" {
		t.Fatalf("no judge: %v", err)
	}
	if _, err := e.admin().ValidateEdges(e.ctx, postgram.ValidateEdgesRequest{Judge: j, Sources: []string{"manual"}}); postgram.FieldOf(err) != "source[0]" {
		t.Fatalf("judging manual edges: %v", err)
	}
	dry, err := e.admin().ValidateEdges(e.ctx, postgram.ValidateEdgesRequest{Judge: j, DryRun: true})
	if err != nil || dry.Judged != 3 || dry.Removed != 2 || dry.Kept != 1 {
		t.Fatalf("dry run: %v %+v", err, dry)
	}
	if n := len(e.edgeLines(orion.ID)); n != 4 {
		t.Fatalf("a dry run changed edges: %d", n)
	}
	res, err := e.admin().ValidateEdges(e.ctx, postgram.ValidateEdgesRequest{Judge: j})
	if err != nil || res.Removed != 2 || res.Kept != 1 {
		t.Fatalf("validate: %v %+v", err, res)
	}
	want := []edgeLine{
		{"Orion status: Rhea and Tess on the Orion team.", "part_of", "Orion", postgram.EdgeSourceLLM, 0.9},
		{"Rhea", "leads", "Orion", postgram.EdgeSourceManual, 1},
	}
	if diff := cmp.Diff(want, e.edgeLines(orion.ID, doc.ID)); diff != "" {
		t.Fatalf("after validation (-want +got):\n%s", diff)
	}
	if x, _ := e.store.GetEdge(e.ctx, e.c.Workspace(), hand.ID); x == nil || x.Source != postgram.EdgeSourceManual {
		t.Fatal("validation touched a manual edge")
	}
	// Validated recently: skipped unless forced.
	calls := j.calls
	again, err := e.admin().ValidateEdges(e.ctx, postgram.ValidateEdgesRequest{Judge: j})
	if err != nil || again.Judged != 0 || again.Skipped != 1 || j.calls != calls {
		t.Fatalf("re-run within the window: %v %+v", err, again)
	}
	forced, err := e.admin().ValidateEdges(e.ctx, postgram.ValidateEdgesRequest{Judge: j, Force: true})
	if err != nil || forced.Judged != 1 {
		t.Fatalf("forced: %v %+v", err, forced)
	}
}

func testExtractionConcurrent(t *testing.T, open Opener) {
	model := postgramtest.NewScriptedLLM("")
	e := extractEnv(t, open, model)
	const n = 40
	for i := 0; i < n; i++ {
		e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: fmt.Sprintf("note number %d", i)})
	}
	e.enrich()
	other := e.client(func(c *postgram.Config) { c.Extraction.Extractor = llm.NewExtractor(model) })
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for _, c := range []*postgram.Client{e.c, other, e.c, other} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := adminOf(t, c).ExtractPending(e.ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += st.Entities
			mu.Unlock()
		}()
	}
	wg.Wait()
	if total != n || len(model.Calls()) != n {
		t.Fatalf("%d entities extracted with %d LLM calls, want %d each", total, len(model.Calls()), n)
	}
}

// testExtractionWorker: with Start, a write is embedded and then extracted
// without anyone calling ExtractPending (the embedding wakes the
// extraction loop; no 30-second poll).
func testExtractionWorker(t *testing.T, open Opener) {
	model := postgramtest.NewScriptedLLM("").OnValue("Lyra", map[string]any{
		"entities":  []map[string]any{{"name": "Lyra", "type": "project"}},
		"relations": []map[string]any{{"source": "SELF", "target": "Lyra", "relation": "part_of", "confidence": 0.9}},
	})
	e := extractEnv(t, open, model)
	lyra := e.store1(postgram.StoreInput{Type: postgram.TypeProject, Content: "Lyra"})
	if err := e.c.Start(e.ctx); err != nil {
		t.Fatal(err)
	}
	defer e.c.Stop(e.ctx)
	doc := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: "Lyra retro notes"})
	deadline := time.Now().Add(10 * time.Second)
	for {
		back, err := e.c.Recall(e.ctx, doc.ID)
		if err != nil {
			t.Fatal(err)
		}
		if back.ExtractionStatus == postgram.StageCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not extracted within 10s: %+v", back)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if lines := e.edgeLines(lyra.ID); len(lines) != 1 || lines[0].Relation != "part_of" {
		t.Fatalf("edges: %+v", lines)
	}
}
