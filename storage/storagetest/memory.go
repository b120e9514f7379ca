package storagetest

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newClock() *clock { return &clock{t: time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)} }

func agent(c *postgram.Client, client string) *postgram.Client {
	a, err := c.Admin()
	if err != nil {
		panic(err) // c is the test's unscoped client
	}
	return a.As(postgram.Principal{KeyID: "key-" + client, ClientID: client, Scopes: postgram.AllScopes})
}

// testSessionContextIsolation: client A's session context is invisible to
// client B through recall, list, search and graph expansion, and visible
// to A.
func testSessionContextIsolation(t *testing.T, open Opener) {
	e := newEnv(t, open)
	a, b := agent(e.c, "client-a"), agent(e.c, "client-b")
	sc, err := a.StoreSessionContext(e.ctx, postgram.SessionContextInput{Content: "we were debugging the zebrafish importer",
		SessionID: "s1", AgentID: "claude", Topic: "importer", Tags: []string{"wip"}, GroomAfter: "1h", ExpiresAt: "2026-12-31T00:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	if sc.MemoryRole() != postgram.RoleSessionContext || sc.ClientID != "client-a" || sc.Metadata["session_id"] != "s1" ||
		sc.Metadata["topic"] != "importer" || sc.Metadata["expires_at"] != "2026-12-31T00:00:00Z" || sc.ExtractionStatus != postgram.StageSkipped {
		t.Fatalf("session context = %+v", sc)
	}
	durable := mustStore(t, a, postgram.StoreInput{Content: "the zebrafish importer reads CSV"})
	if _, err := e.c.Link(e.ctx, postgram.LinkInput{SourceID: durable.ID, TargetID: sc.ID, Relation: "mentioned_in"}); err != nil {
		t.Fatal(err)
	}
	e.enrich()

	// A sees it everywhere.
	if _, err := a.Recall(e.ctx, sc.ID); err != nil {
		t.Fatalf("A recall: %v", err)
	}
	if p, _ := a.List(e.ctx, postgram.ListOptions{MemoryRole: postgram.RoleSessionContext}); len(p.Items) != 1 {
		t.Fatalf("A list session context: %d items", len(p.Items))
	}
	if r := mustSearch(t, a, postgram.SearchRequest{Query: "zebrafish", MemoryRole: postgram.RoleSessionContext}); !has(ids(r), sc.ID) {
		t.Fatalf("A search: %v", ids(r))
	}

	// B sees it nowhere.
	if _, err := b.Recall(e.ctx, sc.ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("B recall: %v", err)
	}
	for _, role := range []postgram.MemoryRole{"", postgram.RoleSessionContext} {
		p, err := b.List(e.ctx, postgram.ListOptions{MemoryRole: role})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range p.Items {
			if it.ID == sc.ID {
				t.Fatalf("B list (role %q) shows A's session context", role)
			}
		}
	}
	for _, role := range []postgram.MemoryRole{"", postgram.RoleSessionContext} {
		r := mustSearch(t, b, postgram.SearchRequest{Query: "zebrafish importer", MemoryRole: role, ExpandGraph: true})
		if has(ids(r), sc.ID) {
			t.Fatalf("B search (role %q) shows A's session context", role)
		}
		for _, res := range r.Results {
			for _, n := range res.Related {
				if n.Entity.ID == sc.ID {
					t.Fatalf("B search expand_graph shows A's session context")
				}
			}
		}
	}
	if _, err := b.Expand(e.ctx, sc.ID, postgram.ExpandOptions{}); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("B expand A's context: %v", err)
	}
	g, err := b.Expand(e.ctx, durable.ID, postgram.ExpandOptions{Depth: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Entities {
		if n.ID == sc.ID {
			t.Fatal("B expand of a shared memory reaches A's session context")
		}
	}
	if edges, err := b.Edges(e.ctx, durable.ID, postgram.EdgesOptions{}); err != nil || len(edges) != 0 {
		t.Fatalf("B edges of the shared memory: %v %v", edges, err)
	}
	if ga, err := a.Expand(e.ctx, durable.ID, postgram.ExpandOptions{}); err != nil || len(ga.Entities) != 2 {
		t.Fatalf("A expand: %v %v", ga, err)
	}
	// Bad input.
	_, err = a.StoreSessionContext(e.ctx, postgram.SessionContextInput{Content: "x", GroomAfter: "7x"})
	wantErr(t, err, postgram.ErrInvalidArgument, "groom_after")
}

// fakeGroomer promotes session context whose content contains "decided"
// and reviews durable memories by keywords in their content.
type fakeGroomer struct {
	mu       sync.Mutex
	promoted []uuid.UUID
	calls    int
}

func (g *fakeGroomer) PromoteSessionContext(_ context.Context, c llm.SessionCandidate) (llm.PromotionDecision, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls++
	if strings.Contains(c.Content, "llm-fails") {
		return llm.PromotionDecision{}, errors.New("model overloaded")
	}
	if strings.Contains(c.Content, "decided") {
		g.promoted = append(g.promoted, c.ID)
		return llm.PromotionDecision{Promote: true, Content: "Decision: " + c.Content, Tags: []string{"promoted"}, Reason: "a decision"}, nil
	}
	return llm.PromotionDecision{Reason: "chatter"}, nil
}

func (g *fakeGroomer) ReviewDurable(_ context.Context, c llm.DurableCandidate) (llm.DurableReview, error) {
	switch {
	case strings.Contains(c.Content, "vague"):
		return llm.DurableReview{Outcome: llm.OutcomeNeedsGrooming, Reason: "too vague", Suggestion: "The importer reads UTF-8 CSV files."}, nil
	case strings.Contains(c.Content, "unclear"):
		return llm.DurableReview{Outcome: llm.OutcomeNeedsGrooming, Reason: "unclear"}, nil
	case strings.Contains(c.Content, "obsolete"):
		return llm.DurableReview{Outcome: llm.OutcomeArchive, Reason: "obsolete"}, nil
	case strings.Contains(c.Content, "old version"):
		return llm.DurableReview{Outcome: llm.OutcomeSuperseded, Reason: "replaced", SupersededBy: "x"}, nil
	}
	return llm.DurableReview{Outcome: llm.OutcomeKeep, Reason: "fine"}, nil
}

func (g *fakeGroomer) RewriteDurable(_ context.Context, c llm.DurableCandidate, reason string) (string, error) {
	return "Rewritten (" + reason + "): quokka facts", nil
}

func testGroomSessionContext(t *testing.T, open Opener) {
	clk := newClock()
	e := newEnv(t, open, func(c *postgram.Config) { c.Now = clk.now })
	a, b := agent(e.c, "client-a"), agent(e.c, "client-b")
	store := func(c *postgram.Client, content, topic, session string, tags ...string) *postgram.Entity {
		t.Helper()
		ent, err := c.StoreSessionContext(e.ctx, postgram.SessionContextInput{Content: content, Topic: topic, SessionID: session, Tags: tags})
		if err != nil {
			t.Fatal(err)
		}
		return ent
	}
	a1 := store(a, "a: chatter about lunch", "misc", "s1")
	a2 := store(a, "a: we decided to use pgvector", "postgram", "s1", "session-context")
	clk.add(3 * time.Hour)
	a3 := store(a, "a: recent debugging", "postgram", "s2", "session-context")
	b1 := store(b, "b: we decided on SQLite", "postgram", "s9")
	clk.add(time.Hour)
	// a1 and a2 are 4h old; a3 and b1 1h.

	groom := func(c *postgram.Client, req postgram.GroomRequest) *postgram.GroomResult {
		t.Helper()
		r, err := c.GroomSessionContext(e.ctx, req)
		if err != nil {
			t.Fatalf("groom %+v: %v", req, err)
		}
		return r
	}
	itemIDs := func(r *postgram.GroomResult) []uuid.UUID {
		var out []uuid.UUID
		for _, it := range r.Items {
			out = append(out, it.ID)
		}
		return out
	}
	// Dry runs: own scope only, by age and filters.
	if r := groom(a, postgram.GroomRequest{OlderThan: "2h"}); !sameIDs(itemIDs(r), a1.ID, a2.ID) || r.Archived != 0 {
		t.Fatalf("A dry run 2h: %v", itemIDs(r))
	}
	if r := groom(a, postgram.GroomRequest{OlderThan: "0d"}); !sameIDs(itemIDs(r), a1.ID, a2.ID, a3.ID) {
		t.Fatalf("A dry run 0d: %v", itemIDs(r))
	}
	if r := groom(a, postgram.GroomRequest{OlderThan: "30m", Topic: "postgram"}); !sameIDs(itemIDs(r), a2.ID, a3.ID) {
		t.Fatalf("A dry run topic: %v", itemIDs(r))
	}
	if r := groom(a, postgram.GroomRequest{OlderThan: "30m", SessionID: "s2"}); !sameIDs(itemIDs(r), a3.ID) {
		t.Fatalf("A dry run session: %v", itemIDs(r))
	}
	if r := groom(a, postgram.GroomRequest{OlderThan: "30m", Tags: []string{"session-context"}, Limit: 1}); !sameIDs(itemIDs(r), a2.ID) {
		t.Fatalf("A dry run tag+limit: %v", itemIDs(r))
	}
	if r := groom(a, postgram.GroomRequest{OlderThan: "7d"}); r.Eligible != 0 {
		t.Fatalf("A dry run 7d: %v", itemIDs(r))
	}
	// Bad input and forbidden modes.
	_, err := a.GroomSessionContext(e.ctx, postgram.GroomRequest{OlderThan: "7x"})
	wantErr(t, err, postgram.ErrInvalidArgument, "older_than")
	_, err = a.GroomSessionContext(e.ctx, postgram.GroomRequest{Mode: "purge"})
	wantErr(t, err, postgram.ErrInvalidArgument, "mode")
	if _, err := a.GroomSessionContext(e.ctx, postgram.GroomRequest{Mode: postgram.GroomPromote, Groomer: &fakeGroomer{}}); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("agent promote: %v", err)
	}
	if _, err := a.GroomSessionContext(e.ctx, postgram.GroomRequest{AllClients: true}); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("agent all clients: %v", err)
	}
	other := "client-b"
	if _, err := a.GroomSessionContext(e.ctx, postgram.GroomRequest{ClientID: &other}); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("agent other client: %v", err)
	}

	// Archive own scope: a1 only (topic misc); B's context untouched.
	if r := groom(a, postgram.GroomRequest{Mode: postgram.GroomArchive, OlderThan: "2h", Topic: "misc"}); r.Archived != 1 || !sameIDs(itemIDs(r), a1.ID) {
		t.Fatalf("A archive: %+v", r)
	}
	if cur, _ := e.c.Recall(e.ctx, a1.ID); cur.Status != postgram.StatusArchived || cur.Metadata["groom_action"] != "archived" {
		t.Fatalf("a1 after archive: %s %v", cur.Status, cur.Metadata)
	}
	if cur, _ := e.c.Recall(e.ctx, b1.ID); cur.Status != postgram.StatusActive {
		t.Fatal("A's grooming touched B's context")
	}

	// Operator: promote over all clients, each scope separately.
	g := &fakeGroomer{}
	if r := groom(e.c, postgram.GroomRequest{Mode: postgram.GroomDryRun, OlderThan: "30m", AllClients: true}); !sameIDs(itemIDs(r), a2.ID, a3.ID, b1.ID) ||
		len(r.Scopes) != 2 || g.calls != 0 {
		t.Fatalf("operator dry run all clients: %v scopes %v (a2 %s b1 %s) %+v", itemIDs(r), r.Scopes, a2.ID, b1.ID, r.Items)
	}
	_, err = e.c.GroomSessionContext(e.ctx, postgram.GroomRequest{Mode: postgram.GroomPromote})
	wantErr(t, err, postgram.ErrInvalidArgument, "mode")
	r := groom(e.c, postgram.GroomRequest{Mode: postgram.GroomPromote, OlderThan: "0d", AllClients: true, Groomer: g})
	if r.Promoted != 2 || r.Archived != 3 || r.Failed != 0 || r.Eligible != 3 {
		t.Fatalf("promote: %+v", r)
	}
	for _, it := range r.Items {
		if it.ID == a3.ID {
			if it.Action != "archived" || it.PromotedTo != nil {
				t.Fatalf("a3: %+v", it)
			}
			continue
		}
		if it.Action != "promoted" || it.PromotedTo == nil {
			t.Fatalf("promoted item %+v", it)
		}
		src, err := e.c.Recall(e.ctx, it.ID)
		if err != nil {
			t.Fatal(err)
		}
		nu, err := e.c.Recall(e.ctx, *it.PromotedTo)
		if err != nil {
			t.Fatal(err)
		}
		if src.Status != postgram.StatusArchived || src.Metadata["promoted_to"] != nu.ID.String() {
			t.Fatalf("source after promote: %s %v", src.Status, src.Metadata)
		}
		if nu.MemoryRole() != postgram.RoleDurableMemory || nu.Metadata["promoted_from"] != src.ID.String() ||
			nu.Content != "Decision: "+src.Content || !containsAllTags(nu.Tags, "promoted") || nu.ClientID != src.ClientID {
			t.Fatalf("promoted memory %+v", nu)
		}
		edges, err := e.c.Edges(e.ctx, src.ID, postgram.EdgesOptions{Relation: postgram.RelationPromotedTo, Direction: postgram.DirectionSource})
		if err != nil || len(edges) != 1 || edges[0].TargetID != nu.ID || edges[0].Source != postgram.EdgeSourceGrooming {
			t.Fatalf("promoted_to edge: %v %v", edges, err)
		}
		// The durable memory is visible to every client (it is not scoped).
		if _, err := b.Recall(e.ctx, nu.ID); err != nil {
			t.Fatalf("B recall of a promoted memory: %v", err)
		}
	}
	// Nothing is left to groom; a second run changes nothing.
	if r := groom(e.c, postgram.GroomRequest{Mode: postgram.GroomPromote, OlderThan: "0d", AllClients: true, Groomer: g}); r.Eligible != 0 {
		t.Fatalf("second promote: %+v", r)
	}
	// A failing LLM leaves the context in place and reports it.
	f := store(a, "a: llm-fails here", "x", "s3")
	clk.add(time.Minute)
	cid := "client-a"
	r = groom(e.c, postgram.GroomRequest{Mode: postgram.GroomPromote, OlderThan: "0d", ClientID: &cid, Groomer: g})
	if r.Failed != 1 || r.Items[0].ID != f.ID || !strings.Contains(r.Items[0].Error, "overloaded") {
		t.Fatalf("failing groomer: %+v", r)
	}
	if cur, _ := e.c.Recall(e.ctx, f.ID); cur.Status != postgram.StatusActive {
		t.Fatalf("failed promotion archived the source")
	}
}

func containsAllTags(tags []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, t := range tags {
			found = found || t == w
		}
		if !found {
			return false
		}
	}
	return true
}

func testDurableGrooming(t *testing.T, open Opener) {
	clk := newClock()
	e := newEnv(t, open, func(c *postgram.Config) { c.Now = clk.now })
	mk := func(content string, meta map[string]any) *postgram.Entity {
		return e.store1(postgram.StoreInput{Content: content, Metadata: meta})
	}
	keep := mk("the importer is written in Go", nil)
	vague := mk("vague importer stuff", nil)
	unclear := mk("unclear note about wombats", nil)
	obsolete := mk("obsolete: we use MySQL", nil)
	super := mk("old version of the deploy steps", nil)
	legacy := mk("legacy obsolete memory without a role", nil)
	// A legacy memory with no memory_role at all.
	if _, err := e.c.Update(e.ctx, legacy.ID, postgram.UpdateInput{Version: 1, Metadata: map[string]any{"memory_role": nil}}); err != nil {
		t.Fatal(err)
	}
	session := mk("obsolete session context", map[string]any{"memory_role": "session_context"})
	clk.add(40 * 24 * time.Hour)
	recent := mk("obsolete but recent", nil)
	_, _ = recent, session

	if _, err := e.admin().As(postgram.Principal{ClientID: "x", Scopes: postgram.AllScopes}).Admin(); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("agent durable grooming: %v", err)
	}
	dry, err := e.admin().GroomDurable(e.ctx, postgram.DurableGroomRequest{OlderThan: "30d"})
	if err != nil {
		t.Fatal(err)
	}
	if dry.Eligible != 6 || dry.Marked != 0 {
		t.Fatalf("durable dry run: %d eligible", dry.Eligible)
	}
	g := &fakeGroomer{}
	marked, err := e.admin().GroomDurable(e.ctx, postgram.DurableGroomRequest{Mode: postgram.GroomMark, OlderThan: "30d", Groomer: g})
	if err != nil || marked.Marked != 6 || marked.Failed != 0 {
		t.Fatalf("mark: %+v %v", marked, err)
	}
	outcome := func(id uuid.UUID) (string, *postgram.Entity) {
		cur, err := e.c.Recall(e.ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		m, _ := cur.Metadata["durable_grooming"].(map[string]any)
		o, _ := m["outcome"].(string)
		return o, cur
	}
	for id, want := range map[uuid.UUID]string{keep.ID: "keep", vague.ID: "needs_grooming", obsolete.ID: "archive", super.ID: "superseded", legacy.ID: "archive"} {
		if got, cur := outcome(id); got != want || cur.Status != postgram.StatusActive {
			t.Fatalf("%s marked %q (status %s), want %q", cur.Content, got, cur.Status, want)
		}
	}
	if o, _ := outcome(session.ID); o != "" {
		t.Fatal("durable grooming marked session context")
	}
	// Apply: dry run first, then for real.
	pre, err := e.admin().ApplyDurableGrooming(e.ctx, postgram.ApplyGroomingRequest{DryRun: true})
	if err != nil || pre.Eligible != 5 || pre.Archived+pre.Rewrote != 0 {
		t.Fatalf("apply dry run: %+v %v", pre, err)
	}
	_, err = e.admin().ApplyDurableGrooming(e.ctx, postgram.ApplyGroomingRequest{Mode: postgram.ApplyArchive, Outcomes: []string{"needs_grooming"}})
	wantErr(t, err, postgram.ErrInvalidArgument, "status[0]")
	res, err := e.admin().ApplyDurableGrooming(e.ctx, postgram.ApplyGroomingRequest{Groomer: g})
	if err != nil || res.Rewrote != 2 || res.Archived != 3 || res.Failed != 0 {
		t.Fatalf("apply: %+v %v", res, err)
	}
	_, v := outcome(vague.ID)
	if v.Content != "The importer reads UTF-8 CSV files." || v.EnrichmentStatus != postgram.StagePending || v.Status != postgram.StatusActive {
		t.Fatalf("rewritten from the suggestion: %q %s", v.Content, v.EnrichmentStatus)
	}
	_, u := outcome(unclear.ID)
	if u.Content != "Rewritten (unclear): quokka facts" {
		t.Fatalf("rewritten by the groomer: %q", u.Content)
	}
	// The rewrite re-chunked the memory: keyword search finds the new text.
	if r := e.search(postgram.SearchRequest{Query: "quokka"}); !has(ids(r), unclear.ID) {
		t.Fatal("rewritten memory not found by its new content")
	}
	for _, id := range []uuid.UUID{obsolete.ID, super.ID, legacy.ID} {
		if _, cur := outcome(id); cur.Status != postgram.StatusArchived {
			t.Fatalf("%q not archived", cur.Content)
		}
	}
	if _, k := outcome(keep.ID); k.Status != postgram.StatusActive || k.Content != keep.Content {
		t.Fatal("keep changed")
	}
	again, err := e.admin().ApplyDurableGrooming(e.ctx, postgram.ApplyGroomingRequest{Groomer: g})
	if err != nil || again.Eligible != 0 {
		t.Fatalf("second apply: %+v %v", again, err)
	}
	_ = fmt.Sprint
}
