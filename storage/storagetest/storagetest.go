// Package storagetest is the conformance suite every driver.Storage
// backend must pass. A backend's test calls Run with a function that opens
// a fresh, migrated, empty store; the suite drives it through the public
// postgram.Client, so it checks the library's rules and the backend
// together. A behaviour change goes here, not into one backend's tests.
package storagetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
)

// Opener returns a fresh, migrated, empty store that is closed when the
// test ends. It is called once per subtest, possibly in parallel.
type Opener func(t *testing.T) driver.Storage

// Dims is the embedding dimension the suite uses.
const Dims = 64

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, Opener)
	}{
		{"EntityCRUD", testEntityCRUD},
		{"UpdateConflict", testUpdateConflict},
		{"Validation", testValidation},
		{"SoftDelete", testSoftDelete},
		{"BulkArchive", testBulkArchive},
		{"ListFiltersAndPaging", testList},
		{"FilterOneDefinition", testFilterOneDefinition}, // filter.go
		{"EntityVectors", testEntityVectors},             // filter.go
		{"WorkspaceIsolation", testWorkspaceIsolation},
		{"Principal", testPrincipal},
		{"KeywordImmediately", testKeywordImmediately},
		{"KeywordTerms", testKeywordTerms},
		{"KeywordTermsV2", testKeywordTermsV2},
		{"ExpansionsVisibleOnly", testExpansionsVisibleOnly},
		{"KeywordPoolProbes", testKeywordPool},
		{"KeywordFill", testKeywordFill}, // fill.go
		{"VectorAlso", testVectorAlso},   // fill.go
		{"HybridSearch", testHybridSearch},
		{"VectorStrategies", testVectorStrategies},
		{"SearchDegraded", testSearchDegraded},
		{"SearchOptions", testSearchOptions},
		{"Enrichment", testEnrichment},
		{"EnrichmentRetry", testEnrichmentRetry},
		{"EnrichmentRechunk", testEnrichmentRechunk},
		{"ConcurrentWorkers", testConcurrentWorkers},
		{"WorkerStartStop", testWorkerStartStop},
		{"QueryCache", testQueryCache},
		{"ModelMismatch", testModelMismatch},
		{"ModelSwitch", testModelSwitch}, // models.go
		{"APIKeys", testAPIKeys},
		{"KeyRevocationAcrossClients", testKeyRevocationAcrossClients},
		{"KeyExpiry", testKeyExpiry},       // keys.go
		{"KeyRotation", testKeyRotation},   // keys.go
		{"ResultBudget", testResultBudget}, // limits.go
		{"Audit", testAudit},
		{"Graph", testGraph},
		{"Extraction", testExtraction},                           // extraction.go
		{"Tasks", testTasks},                                     // tasks.go
		{"SessionContextIsolation", testSessionContextIsolation}, // memory.go
		{"GroomSessionContext", testGroomSessionContext},
		{"DurableGrooming", testDurableGrooming},
		{"MarkdownSync", testMarkdownSync}, // sync.go
		{"SyncBadInput", testSyncBadInput},
		{"SyncRepos", testSyncRepos}, // sync.go
		{"Transfer", testTransfer},
		{"SearchWorstQuery", testSearchWorstQuery},             // cost.go
		{"WriteRacesEnrichment", testWriteRacesEnrichment},     // cost.go
		{"WriteCannotHide", testWriteCannotHide},               // access.go
		{"SyncAccess", testSyncAccess},                         // access.go
		{"QueueAccess", testQueueAccess},                       // access.go
		{"RetryFailed", testRetryFailed},                       // access.go
		{"BadInputSameAnswer", testBadInputSameAnswer},         // access.go
		{"AuditPrune", testAuditPrune},                         // access.go
		{"ConflictHidesInvisible", testConflictHidesInvisible}, // access.go
		{"Purge", testPurge},                                   // purge.go
		{"Users", testUsers},                                   // users.go
		{"OAuthRecords", testOAuthRecords},                     // oauth.go
		{"Jobs", testJobs},                                     // jobs.go
		{"EventLog", testEventLog},                             // jobs.go
		{"EntityEvents", testEntityEvents},                     // jobs.go
		{"Workspaces", testWorkspaces},                         // workspaces.go
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open)
		})
	}
}

// env is one test's store, embedder and client.
type env struct {
	t     *testing.T
	ctx   context.Context
	store driver.Storage
	emb   *postgramtest.Embedder
	c     *postgram.Client
}

func newEnv(t *testing.T, open Opener, mod ...func(*postgram.Config)) *env {
	t.Helper()
	ctx := context.Background()
	st := open(t)
	emb := postgramtest.NewEmbedder(Dims)
	cfg := postgram.Config{Store: st, Embedder: emb}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := postgram.New(ctx, cfg)
	if err != nil {
		t.Fatalf("postgram.New: %v", err)
	}
	return &env{t: t, ctx: ctx, store: st, emb: emb, c: c}
}

// client opens another client on the same store.
func (e *env) client(mod ...func(*postgram.Config)) *postgram.Client {
	e.t.Helper()
	cfg := postgram.Config{Store: e.store, Embedder: e.emb}
	for _, m := range mod {
		m(&cfg)
	}
	c, err := postgram.New(e.ctx, cfg)
	if err != nil {
		e.t.Fatalf("postgram.New: %v", err)
	}
	return c
}

func (e *env) store1(in postgram.StoreInput) *postgram.Entity {
	e.t.Helper()
	return mustStore(e.t, e.c, in)
}

func mustStore(t *testing.T, c *postgram.Client, in postgram.StoreInput) *postgram.Entity {
	t.Helper()
	if in.Type == "" {
		in.Type = postgram.TypeMemory
	}
	ent, err := c.Store(context.Background(), in)
	if err != nil {
		t.Fatalf("Store(%q): %v", in.Content, err)
	}
	return ent
}

func (e *env) enrich() postgram.EnrichStats {
	e.t.Helper()
	st, err := e.admin().EnrichPending(e.ctx)
	if err != nil {
		e.t.Fatalf("EnrichPending: %v", err)
	}
	return st
}

func (e *env) search(req postgram.SearchRequest) *postgram.SearchResponse {
	e.t.Helper()
	return mustSearch(e.t, e.c, req)
}

func mustSearch(t *testing.T, c *postgram.Client, req postgram.SearchRequest) *postgram.SearchResponse {
	t.Helper()
	r, err := c.Search(context.Background(), req)
	if err != nil {
		t.Fatalf("Search(%q): %v", req.Query, err)
	}
	return r
}

func ids(r *postgram.SearchResponse) []uuid.UUID {
	out := make([]uuid.UUID, len(r.Results))
	for i, x := range r.Results {
		out[i] = x.Entity.ID
	}
	return out
}

func has(list []uuid.UUID, id uuid.UUID) bool {
	for _, x := range list {
		if x == id {
			return true
		}
	}
	return false
}

func ptr[T any](v T) *T { return &v }

func wantErr(t *testing.T, err, target error, field string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("err = %v, want %v", err, target)
	}
	if field != "" && postgram.FieldOf(err) != field {
		t.Fatalf("err %q names field %q, want %q", err, postgram.FieldOf(err), field)
	}
}

func testEntityCRUD(t *testing.T, open Opener) {
	e := newEnv(t, open)
	in := postgram.StoreInput{
		Type: postgram.TypeDocument, Content: "Quarterly planning notes for the Atlas project.",
		Visibility: postgram.VisibilityWork, Owner: "ana", Tags: []string{"planning", "atlas", "planning"},
		Source: "notes/q3.md", Metadata: map[string]any{"path": "notes/q3.md", "n": 3},
	}
	got := e.store1(in)
	if got.Version != 1 || got.Status != postgram.StatusActive || got.EnrichmentStatus != postgram.StagePending {
		t.Fatalf("new entity: version %d status %s enrichment %s", got.Version, got.Status, got.EnrichmentStatus)
	}
	if len(got.Tags) != 2 {
		t.Fatalf("tags should be de-duplicated: %v", got.Tags)
	}
	back, err := e.c.Recall(e.ctx, got.ID)
	if err != nil {
		t.Fatalf("Recall: %v", err)
	}
	if back.Content != in.Content || back.Owner != "ana" || back.Visibility != postgram.VisibilityWork ||
		back.Metadata["path"] != "notes/q3.md" || back.Metadata["n"] != float64(3) || !back.CreatedAt.Equal(got.CreatedAt) {
		t.Fatalf("Recall returned %+v", back)
	}
	newContent := "Quarterly planning notes, revised."
	up, err := e.c.Update(e.ctx, got.ID, postgram.UpdateInput{Version: 1, Content: &newContent,
		Tags: &[]string{"revised"}, Metadata: map[string]any{"n": nil, "reviewed": true}})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if up.Version != 2 || up.Content != newContent || up.Tags[0] != "revised" {
		t.Fatalf("Update returned %+v", up)
	}
	if _, ok := up.Metadata["n"]; ok || up.Metadata["path"] != "notes/q3.md" || up.Metadata["reviewed"] != true {
		t.Fatalf("metadata should be shallow-merged with nil deleting: %v", up.Metadata)
	}
	back, _ = e.c.Recall(e.ctx, got.ID)
	if back.Version != 2 || back.Content != newContent {
		t.Fatalf("Recall after update: %+v", back)
	}
	if _, err := e.c.Recall(e.ctx, uuid.New()); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("Recall of unknown id: %v", err)
	}
	task := e.store1(postgram.StoreInput{Type: postgram.TypeTask, Content: "buy milk"})
	if task.Status != postgram.StatusInbox {
		t.Fatalf("task default status = %s, want inbox", task.Status)
	}
	mem := e.store1(postgram.StoreInput{Content: "the user prefers tea"})
	if mem.MemoryRole() != postgram.RoleDurableMemory {
		t.Fatalf("memory default role = %q", mem.MemoryRole())
	}
}

func testUpdateConflict(t *testing.T, open Opener) {
	e := newEnv(t, open)
	ent := e.store1(postgram.StoreInput{Content: "original"})
	a := "first writer"
	if _, err := e.c.Update(e.ctx, ent.ID, postgram.UpdateInput{Version: 1, Content: &a}); err != nil {
		t.Fatal(err)
	}
	b := "second writer"
	_, err := e.c.Update(e.ctx, ent.ID, postgram.UpdateInput{Version: 1, Content: &b})
	var ce *postgram.ConflictError
	if !errors.As(err, &ce) || !errors.Is(err, postgram.ErrConflict) {
		t.Fatalf("stale update: %v", err)
	}
	if ce.Current == nil || ce.Current.Version != 2 || ce.Current.Content != a {
		t.Fatalf("conflict should carry the current entity, got %+v", ce.Current)
	}
	// Concurrent updates with the same version: exactly one wins.
	var wg sync.WaitGroup
	var wins, conflicts int
	var mu sync.Mutex
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := fmt.Sprintf("racer %d", i)
			_, err := e.c.Update(e.ctx, ent.ID, postgram.UpdateInput{Version: 2, Content: &s})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				wins++
			case errors.Is(err, postgram.ErrConflict):
				conflicts++
			default:
				t.Errorf("racer: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins != 1 || conflicts != 7 {
		t.Fatalf("racing updates: %d wins, %d conflicts; want 1 and 7", wins, conflicts)
	}
	if _, err := e.c.Update(e.ctx, uuid.New(), postgram.UpdateInput{Version: 1, Content: &a}); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("update of unknown id: %v", err)
	}
}

func testValidation(t *testing.T, open Opener) {
	e := newEnv(t, open)
	big := make([]byte, postgram.MaxContentBytes+1)
	for i := range big {
		big[i] = 'a'
	}
	cases := []struct {
		in    postgram.StoreInput
		field string
	}{
		{postgram.StoreInput{Type: "memory", Content: ""}, "content"},
		{postgram.StoreInput{Type: "memory", Content: " \n\t "}, "content"},
		{postgram.StoreInput{Type: "memory", Content: string(big)}, "content"},
		{postgram.StoreInput{Type: "memory", Content: "bad \xff utf8"}, "content"},
		{postgram.StoreInput{Type: "note", Content: "x"}, "type"},
		{postgram.StoreInput{Type: "memory", Content: "x", Visibility: "public"}, "visibility"},
		{postgram.StoreInput{Type: "memory", Content: "x", Status: "deleted"}, "status"},
		{postgram.StoreInput{Type: "memory", Content: "x", Tags: []string{"ok", " "}}, "tags[1]"},
		{postgram.StoreInput{Type: "memory", Content: "x", Metadata: map[string]any{"memory_role": "scratch"}}, "metadata.memory_role"},
		{postgram.StoreInput{Type: "memory", Content: "x", Metadata: map[string]any{"k": "a\x00b"}}, "metadata"},
	}
	for _, c := range cases {
		_, err := e.c.Store(e.ctx, c.in)
		wantErr(t, err, postgram.ErrInvalidArgument, c.field)
	}
	ent := e.store1(postgram.StoreInput{Content: "valid"})
	_, err := e.c.Update(e.ctx, ent.ID, postgram.UpdateInput{Version: 0})
	wantErr(t, err, postgram.ErrInvalidArgument, "version")
	_, err = e.c.Update(e.ctx, ent.ID, postgram.UpdateInput{Version: 1, Visibility: ptr(postgram.Visibility("x"))})
	wantErr(t, err, postgram.ErrInvalidArgument, "visibility")
	_, err = e.c.List(e.ctx, postgram.ListOptions{Limit: -1})
	wantErr(t, err, postgram.ErrInvalidArgument, "limit")
	_, err = e.c.List(e.ctx, postgram.ListOptions{Limit: 1_000_000})
	wantErr(t, err, postgram.ErrInvalidArgument, "limit")
	_, err = e.c.List(e.ctx, postgram.ListOptions{Types: []postgram.EntityType{"bogus"}})
	wantErr(t, err, postgram.ErrInvalidArgument, "type")
	_, err = e.c.Search(e.ctx, postgram.SearchRequest{Query: "   "})
	wantErr(t, err, postgram.ErrInvalidArgument, "query")
	_, err = e.c.Search(e.ctx, postgram.SearchRequest{Query: "x", Threshold: ptr(1.5)})
	wantErr(t, err, postgram.ErrInvalidArgument, "threshold")
	_, err = e.c.Search(e.ctx, postgram.SearchRequest{Query: "x", Threshold: ptr(-0.1)})
	wantErr(t, err, postgram.ErrInvalidArgument, "threshold")
	_, err = e.c.Search(e.ctx, postgram.SearchRequest{Query: "x", Limit: 100000})
	wantErr(t, err, postgram.ErrInvalidArgument, "limit")
	_, err = e.c.Search(e.ctx, postgram.SearchRequest{Query: "x", Limit: -3})
	wantErr(t, err, postgram.ErrInvalidArgument, "limit")
	_, err = e.c.Search(e.ctx, postgram.SearchRequest{Query: "x", Strategy: "ivf"})
	wantErr(t, err, postgram.ErrInvalidArgument, "strategy")
	_, err = postgram.ParseID("id", "not-a-uuid")
	wantErr(t, err, postgram.ErrInvalidArgument, "id")
	_, err = e.c.QueueStatus(e.ctx, 101)
	wantErr(t, err, postgram.ErrInvalidArgument, "failure_limit")
}

func testSoftDelete(t *testing.T, open Opener) {
	e := newEnv(t, open)
	ent := e.store1(postgram.StoreInput{Content: "ephemeral zanzibar fact"})
	del, err := e.c.Delete(e.ctx, ent.ID)
	if err != nil {
		t.Fatal(err)
	}
	if del.Status != postgram.StatusArchived || del.Version != 2 {
		t.Fatalf("deleted entity: %+v", del)
	}
	if _, err := e.c.Delete(e.ctx, ent.ID); err != nil {
		t.Fatalf("deleting twice should succeed: %v", err)
	}
	back, err := e.c.Recall(e.ctx, ent.ID)
	if err != nil || back.Status != postgram.StatusArchived {
		t.Fatalf("archived entity is still recallable: %v %+v", err, back)
	}
	page, _ := e.c.List(e.ctx, postgram.ListOptions{})
	if page.Total != 0 {
		t.Fatalf("archived entities are hidden from list by default, got %d", page.Total)
	}
	page, _ = e.c.List(e.ctx, postgram.ListOptions{IncludeArchived: true})
	if page.Total != 1 {
		t.Fatalf("include_archived lists it, got %d", page.Total)
	}
	if r := e.search(postgram.SearchRequest{Query: "zanzibar"}); len(r.Results) != 0 {
		t.Fatalf("archived entity found by search: %v", ids(r))
	}
	if r := e.search(postgram.SearchRequest{Query: "zanzibar", IncludeArchived: true}); len(r.Results) != 1 {
		t.Fatalf("include_archived search: %v", ids(r))
	}
	if _, err := e.c.Delete(e.ctx, uuid.New()); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("delete unknown: %v", err)
	}
}

func testBulkArchive(t *testing.T, open Opener) {
	e := newEnv(t, open)
	a := e.store1(postgram.StoreInput{Content: "a"})
	b := e.store1(postgram.StoreInput{Content: "b"})
	res, err := e.c.BulkArchive(e.ctx, []string{a.ID.String(), "nope", uuid.NewString(), b.ID.String()})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Error != nil || res[3].Error != nil {
		t.Fatalf("valid ids failed: %v %v", res[0].Error, res[3].Error)
	}
	wantErr(t, res[1].Error, postgram.ErrInvalidArgument, "ids[1]")
	wantErr(t, res[2].Error, postgram.ErrNotFound, "")
	tooMany := make([]string, postgram.MaxBulkIDs+1)
	_, err = e.c.BulkArchive(e.ctx, tooMany)
	wantErr(t, err, postgram.ErrInvalidArgument, "ids")
	_, err = e.c.BulkArchive(e.ctx, nil)
	wantErr(t, err, postgram.ErrInvalidArgument, "ids")
}

func testList(t *testing.T, open Opener) {
	e := newEnv(t, open)
	var made []*postgram.Entity
	for i := 0; i < 12; i++ {
		in := postgram.StoreInput{Content: fmt.Sprintf("item %d", i), Owner: "ana", Tags: []string{"all"}}
		if i%2 == 0 {
			in.Type = postgram.TypeDocument
			in.Tags = append(in.Tags, "even")
		} else {
			in.Type = postgram.TypeMemory
			in.Visibility = postgram.VisibilityPersonal
		}
		if i%3 == 0 {
			in.Owner = "bo"
		}
		made = append(made, e.store1(in))
	}
	page, err := e.c.List(e.ctx, postgram.ListOptions{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 12 || len(page.Items) != 5 || page.Limit != 5 {
		t.Fatalf("page: total %d items %d", page.Total, len(page.Items))
	}
	if page.Items[0].ID != made[11].ID {
		t.Fatalf("list is newest first: got %q", page.Items[0].Content)
	}
	page, _ = e.c.List(e.ctx, postgram.ListOptions{Limit: 5, Offset: 10})
	if len(page.Items) != 2 || page.Total != 12 {
		t.Fatalf("last page: %d items, total %d", len(page.Items), page.Total)
	}
	page, _ = e.c.List(e.ctx, postgram.ListOptions{Offset: 50})
	if len(page.Items) != 0 || page.Total != 12 {
		t.Fatalf("past the end: %d items, total %d", len(page.Items), page.Total)
	}
	check := func(name string, o postgram.ListOptions, want int) {
		t.Helper()
		p, err := e.c.List(e.ctx, o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Total != want || len(p.Items) != want {
			t.Fatalf("%s: total %d items %d, want %d", name, p.Total, len(p.Items), want)
		}
	}
	check("type", postgram.ListOptions{Types: []postgram.EntityType{postgram.TypeDocument}}, 6)
	check("tags", postgram.ListOptions{Tags: []string{"even", "all"}}, 6)
	check("owner", postgram.ListOptions{Owner: "bo"}, 4)
	check("visibility", postgram.ListOptions{Visibilities: []postgram.Visibility{postgram.VisibilityPersonal}}, 6)
	check("role", postgram.ListOptions{MemoryRole: postgram.RoleDurableMemory}, 6)
	check("status", postgram.ListOptions{Statuses: []postgram.Status{postgram.StatusActive}}, 12)
	check("combined", postgram.ListOptions{Types: []postgram.EntityType{postgram.TypeDocument}, Owner: "bo"}, 2)
}

func testWorkspaceIsolation(t *testing.T, open Opener) {
	e := newEnv(t, open)
	other := e.client(func(c *postgram.Config) { c.Workspace = "tenant-b" })
	secret := e.store1(postgram.StoreInput{Content: "workspace alpha secret kumquat"})
	mine := mustStore(t, other, postgram.StoreInput{Content: "workspace beta note kumquat"})
	e.enrich()
	if _, err := adminOf(t, other).EnrichPending(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.Recall(e.ctx, secret.ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("recall across workspaces: %v", err)
	}
	c := "overwritten"
	if _, err := other.Update(e.ctx, secret.ID, postgram.UpdateInput{Version: 1, Content: &c}); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("update across workspaces: %v", err)
	}
	if _, err := other.Delete(e.ctx, secret.ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("delete across workspaces: %v", err)
	}
	res, _ := other.BulkArchive(e.ctx, []string{secret.ID.String()})
	if !errors.Is(res[0].Error, postgram.ErrNotFound) {
		t.Fatalf("bulk archive across workspaces: %v", res[0].Error)
	}
	page, _ := other.List(e.ctx, postgram.ListOptions{IncludeArchived: true})
	if page.Total != 1 || page.Items[0].ID != mine.ID {
		t.Fatalf("list crosses workspaces: %d items", page.Total)
	}
	r := mustSearch(t, other, postgram.SearchRequest{Query: "kumquat secret alpha", Threshold: ptr(0.0)})
	if has(ids(r), secret.ID) || !has(ids(r), mine.ID) {
		t.Fatalf("search crosses workspaces: %v", ids(r))
	}
	back, _ := e.c.Recall(e.ctx, secret.ID)
	if back.Content != secret.Content || back.Status != postgram.StatusActive {
		t.Fatalf("the other workspace changed our entity: %+v", back)
	}
	q, _ := other.QueueStatus(e.ctx, 0)
	if q.Embedding.Completed != 1 {
		t.Fatalf("queue counts cross workspaces: %+v", q.Embedding)
	}
}

func testPrincipal(t *testing.T, open Opener) {
	e := newEnv(t, open)
	work := e.store1(postgram.StoreInput{Content: "work plan walrus", Visibility: postgram.VisibilityWork})
	personal := e.store1(postgram.StoreInput{Content: "personal diary walrus", Visibility: postgram.VisibilityPersonal})
	person := e.store1(postgram.StoreInput{Type: postgram.TypePerson, Content: "Walrus Wally, a person"})
	ro := e.admin().As(postgram.Principal{KeyID: "k1", ClientID: "c1", Scopes: []postgram.Scope{postgram.ScopeRead},
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityPersonal, postgram.VisibilityShared}})
	if _, err := ro.Store(e.ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "x"}); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("store without write scope: %v", err)
	}
	if _, err := ro.Delete(e.ctx, personal.ID); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("delete without delete scope: %v", err)
	}
	if _, err := ro.Recall(e.ctx, work.ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("recall of a hidden visibility: %v", err)
	}
	page, _ := ro.List(e.ctx, postgram.ListOptions{})
	if page.Total != 2 {
		t.Fatalf("list with visibility limits: %d", page.Total)
	}
	r := mustSearch(t, ro, postgram.SearchRequest{Query: "walrus"})
	if has(ids(r), work.ID) || !has(ids(r), personal.ID) {
		t.Fatalf("search with visibility limits: %v", ids(r))
	}
	typed := e.admin().As(postgram.Principal{Scopes: postgram.AllScopes, AllowedTypes: []postgram.EntityType{postgram.TypePerson}})
	r = mustSearch(t, typed, postgram.SearchRequest{Query: "walrus"})
	if len(r.Results) != 1 || r.Results[0].Entity.ID != person.ID {
		t.Fatalf("search with type limits: %v", ids(r))
	}
	if _, err := typed.Store(e.ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "x"}); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("store of a disallowed type: %v", err)
	}
	p, _ := typed.List(e.ctx, postgram.ListOptions{Types: []postgram.EntityType{postgram.TypeMemory}})
	if p.Total != 0 {
		t.Fatalf("list of a disallowed type: %d", p.Total)
	}
	// Session context is visible only to the client that wrote it.
	a := e.admin().As(postgram.Principal{ClientID: "agent-a", Scopes: postgram.AllScopes})
	b := e.admin().As(postgram.Principal{ClientID: "agent-b", Scopes: postgram.AllScopes})
	sc := mustStore(t, a, postgram.StoreInput{Content: "session context about narwhals",
		Metadata: map[string]any{"memory_role": "session_context"}})
	if _, err := b.Recall(e.ctx, sc.ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("session context leaked to another client via recall: %v", err)
	}
	if r := mustSearch(t, b, postgram.SearchRequest{Query: "narwhals"}); len(r.Results) != 0 {
		t.Fatalf("session context leaked via search: %v", ids(r))
	}
	if r := mustSearch(t, a, postgram.SearchRequest{Query: "narwhals"}); len(r.Results) != 1 {
		t.Fatalf("own session context not found: %v", ids(r))
	}
	if p, _ := b.List(e.ctx, postgram.ListOptions{MemoryRole: postgram.RoleSessionContext}); p.Total != 0 {
		t.Fatalf("session context leaked via list")
	}
}

func testKeywordImmediately(t *testing.T, open Opener) {
	e := newEnv(t, open)
	e.emb.Fail(fmt.Errorf("provider down: %w", postgram.ErrUnavailable))
	ent := e.store1(postgram.StoreInput{Content: "Incident ABC-1234: the flux capacitor overheated"})
	r := e.search(postgram.SearchRequest{Query: "ABC-1234"})
	if len(r.Results) != 1 || r.Results[0].Entity.ID != ent.ID {
		t.Fatalf("a new entity must be findable by keyword as soon as Store returns: %v", ids(r))
	}
	if r.Results[0].KeywordRank != 1 || r.Results[0].VectorRank != 0 {
		t.Fatalf("ranks: %+v", r.Results[0])
	}
	if len(r.Degraded) != 1 || r.Degraded[0].Component != "vector" {
		t.Fatalf("degraded: %+v", r.Degraded)
	}
}

// seedRanking selects the seed's ranking, whose contract (RRF scores, the
// coverage rule) some tests check exactly.
func seedRanking(c *postgram.Config) { c.Search.Ranking = postgram.RankingSeed }

func testKeywordTerms(t *testing.T, open Opener) {
	e := newEnv(t, open, seedRanking)
	e.emb.Fail(errors.New("keyword-only test"))
	abc := e.store1(postgram.StoreInput{Content: "Ticket ABC-1234 tracks the login bug"}).ID
	abcOther := e.store1(postgram.StoreInput{Content: "ABC and 1234 appear separately here"}).ID
	mail := e.store1(postgram.StoreInput{Content: "Send an e-mail to the team"}).ID
	six := e.store1(postgram.StoreInput{Content: "alpha bravo charlie"}).ID
	two := e.store1(postgram.StoreInput{Content: "alpha bravo only"}).ID
	stop := e.store1(postgram.StoreInput{Content: "the of and"}).ID
	check := func(q string, want, notWant []uuid.UUID) {
		t.Helper()
		r := e.search(postgram.SearchRequest{Query: q})
		got := ids(r)
		for _, w := range want {
			if !has(got, w) {
				t.Errorf("%q: missing %v in %v", q, w, got)
			}
		}
		for _, w := range notWant {
			if has(got, w) {
				t.Errorf("%q: unexpected %v", q, w)
			}
		}
	}
	// A compound identifier's lexemes are ANDed: both docs contain abc and
	// 1234 but only the first contains the compound lexeme.
	check("ABC-1234", []uuid.UUID{abc}, []uuid.UUID{abcOther})
	check("e-mail", []uuid.UUID{mail}, nil)
	// 3 of 6 terms passes the coverage rule, 2 of 6 does not (no vectors).
	check("alpha bravo charlie delta echo foxtrot", []uuid.UUID{six}, []uuid.UUID{two})
	// Stopwords are dropped in multi-term queries.
	check("the alpha", []uuid.UUID{six, two}, []uuid.UUID{stop})
	// A single stopword term is kept.
	check("the", []uuid.UUID{stop}, nil)
	// An all-stopword multi-term query has no keyword terms.
	r := e.search(postgram.SearchRequest{Query: "the of and"})
	if len(r.Stats.Terms) != 0 || len(r.Results) != 0 {
		t.Fatalf("all-stopword query: terms %v results %v", r.Stats.Terms, ids(r))
	}
	// A pasted 300-term query keeps 24 terms and still finds a match.
	q := "alpha bravo charlie"
	for i := 0; i < 297; i++ {
		q += fmt.Sprintf(" filler%d", i)
	}
	r = e.search(postgram.SearchRequest{Query: q})
	if len(r.Stats.Terms) != 24 || r.Stats.TruncatedTerms != 276 {
		t.Fatalf("pasted query: %d terms kept, %d truncated", len(r.Stats.Terms), r.Stats.TruncatedTerms)
	}
	if len(r.Results) != 0 {
		// 3 of 24 terms is below the 12 required and there is no vector.
		t.Fatalf("pasted query: coverage rule should exclude %v", ids(r))
	}
}

// testKeywordTermsV2 checks ranking v2's reading of keyword terms: the
// same term rules as the seed (compound identifiers, stopwords), with more
// of the query covered ranking higher instead of a coverage cut-off, and an
// inflected or misspelt form of a word the workspace holds finding it.
func testKeywordTermsV2(t *testing.T, open Opener) {
	e := newEnv(t, open)
	e.emb.Fail(errors.New("keyword-only test"))
	abc := e.store1(postgram.StoreInput{Content: "Ticket ABC-1234 tracks the login bug"}).ID
	abcOther := e.store1(postgram.StoreInput{Content: "ABC and 1234 appear separately here"}).ID
	six := e.store1(postgram.StoreInput{Content: "alpha bravo charlie"}).ID
	two := e.store1(postgram.StoreInput{Content: "alpha bravo only"}).ID
	stop := e.store1(postgram.StoreInput{Content: "the of and"}).ID
	dash := e.store1(postgram.StoreInput{Content: "The latency dashboard for the checkout service"}).ID
	name := e.store1(postgram.StoreInput{Content: "Notes from the weekly sync", Metadata: map[string]any{"name": "Whitfield"}}).ID
	first := func(q string) (uuid.UUID, []uuid.UUID) {
		t.Helper()
		r := e.search(postgram.SearchRequest{Query: q})
		if r.Stats.Ranking != postgram.RankingV2 {
			t.Fatalf("%q: ranking %q, want v2 (the default)", q, r.Stats.Ranking)
		}
		got := ids(r)
		if len(got) == 0 {
			t.Fatalf("%q: no results", q)
		}
		return got[0], got
	}
	if top, got := first("ABC-1234"); top != abc || has(got, abcOther) {
		t.Errorf("ABC-1234: got %v, want only %v", got, abc)
	}
	if top, got := first("alpha bravo charlie delta echo foxtrot"); top != six || !has(got, two) {
		t.Errorf("more covered terms should rank first: got %v, want %v then %v", got, six, two)
	}
	if _, got := first("the alpha"); has(got, stop) {
		t.Errorf("the alpha: the stopword matched %v", stop)
	}
	if _, got := first("the"); !has(got, stop) {
		t.Errorf("a single stopword is kept: got %v", got)
	}
	if top, _ := first("dashboards"); top != dash {
		t.Errorf("inflected form: got %v, want %v", top, dash)
	}
	if top, _ := first("latnecy"); top != dash {
		t.Errorf("misspelt word: got %v, want %v", top, dash)
	}
	if top, _ := first("Whitfield"); top != name {
		t.Errorf("a name only in metadata: got %v, want %v", top, name)
	}
}

// testExpansionsVisibleOnly: ranking v2 finds typo and inflection
// candidates in the workspace's statistics, which count every document;
// stats.expansions names only those a result the caller may read holds,
// so a key learns no word of a document it cannot see.
func testExpansionsVisibleOnly(t *testing.T, open Opener) {
	e := newEnv(t, open)
	e.emb.Fail(errors.New("keyword-only test"))
	e.store1(postgram.StoreInput{Content: "Codename zephyrine for the merger", Visibility: postgram.VisibilityPersonal})
	e.store1(postgram.StoreInput{Content: "Weekly notes about dashboards", Visibility: postgram.VisibilityShared})
	key := e.admin().As(postgram.Principal{KeyID: "k-shared", ClientID: "shared", Scopes: []postgram.Scope{postgram.ScopeRead},
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
	for _, c := range []struct {
		who    *postgram.Client
		expand bool
	}{{e.c, true}, {key, false}} {
		r, err := c.who.Search(e.ctx, postgram.SearchRequest{Query: "zephyrin dashboard"})
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(r.Stats.Expansions)
		if strings.Contains(got, "zephyrine") != c.expand {
			t.Errorf("expansions %s: zephyrine listed %v, want %v", got, !c.expand, c.expand)
		}
		if !strings.Contains(got, "dashboards") {
			t.Errorf("expansions %s: the visible inflection is missing", got)
		}
	}
}

func testKeywordPool(t *testing.T, open Opener) {
	e := newEnv(t, open)
	e.emb.Fail(errors.New("keyword-only test"))
	// 210 chunks contain "common"; 5 contain "rare"; 3 contain both.
	for i := 0; i < 210; i++ {
		c := fmt.Sprintf("common filler document %d", i)
		if i < 3 {
			c += " rare"
		}
		e.store1(postgram.StoreInput{Content: c})
	}
	for i := 0; i < 2; i++ {
		e.store1(postgram.StoreInput{Content: fmt.Sprintf("rare standalone %d, rare again and rare once more", i)})
	}
	r := e.search(postgram.SearchRequest{Query: "common", Limit: 5})
	if r.Stats.KeywordProbe != "and" || r.Stats.KeywordPool != 200 {
		t.Fatalf("single saturating term: probe %s pool %d", r.Stats.KeywordProbe, r.Stats.KeywordPool)
	}
	r = e.search(postgram.SearchRequest{Query: "rare standalone", Limit: 20})
	if r.Stats.KeywordProbe != "or" || r.Stats.KeywordPool != 5 {
		t.Fatalf("small union: probe %s pool %d", r.Stats.KeywordProbe, r.Stats.KeywordPool)
	}
	r = e.search(postgram.SearchRequest{Query: "common rare", Limit: 20})
	if r.Stats.KeywordProbe != "per_term" || r.Stats.KeywordPool != 200 {
		t.Fatalf("saturated union: probe %s pool %d", r.Stats.KeywordProbe, r.Stats.KeywordPool)
	}
	// Rare-term hits must be in the pool, and the 3 conjunction hits rank first.
	rare := 0
	for i, x := range r.Results {
		if i < 3 && !containsWord(x.ChunkContent, "rare") {
			t.Fatalf("conjunction hits should rank first: #%d is %q", i+1, x.ChunkContent)
		}
		if containsWord(x.ChunkContent, "rare") {
			rare++
		}
	}
	if rare != 5 {
		t.Fatalf("per-term fallback should include all 5 rare chunks, got %d", rare)
	}
}

func containsWord(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i:i+len(w)] == w && (i == 0 || s[i-1] == ' ') && (i+len(w) == len(s) || s[i+len(w)] == ' ') {
			return true
		}
	}
	return false
}

func testHybridSearch(t *testing.T, open Opener) {
	e := newEnv(t, open, seedRanking)
	docs := []string{
		"PostgreSQL tuning guide: shared buffers, work mem and autovacuum settings",
		"Recipe for sourdough bread with a long cold fermentation",
		"Kubernetes deployment notes for the payments service",
		"Decision: we use pgvector with HNSW indexes for embeddings",
		"Meeting with Ana about the quarterly roadmap and hiring",
	}
	var ents []*postgram.Entity
	for _, d := range docs {
		ents = append(ents, e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: d}))
	}
	st := e.enrich()
	if st.Entities != len(docs) || st.Failed != 0 {
		t.Fatalf("enrich: %+v", st)
	}
	r := e.search(postgram.SearchRequest{Query: "pgvector HNSW embeddings decision"})
	if len(r.Results) == 0 || r.Results[0].Entity.ID != ents[3].ID {
		t.Fatalf("hybrid top result: %v", ids(r))
	}
	top := r.Results[0]
	if top.VectorRank != 1 || top.KeywordRank != 1 {
		t.Fatalf("top result should lead both branches: %+v", top)
	}
	if want := 2.0 / 61; top.Score != want || top.RecencyScore != want {
		t.Fatalf("score = %v (recency %v), want %v", top.Score, top.RecencyScore, want)
	}
	if top.Similarity == nil || *top.Similarity <= 0.3 || *top.Similarity > 1.0001 {
		t.Fatalf("similarity = %v", top.Similarity)
	}
	if len(r.Degraded) != 0 || r.Stats.VectorPlan == "none" {
		t.Fatalf("unexpected degradation: %+v %+v", r.Degraded, r.Stats)
	}
	for i := 1; i < len(r.Results); i++ {
		if r.Results[i].RecencyScore > r.Results[i-1].RecencyScore {
			t.Fatalf("results out of order at %d", i)
		}
	}
	// A vector-only match above the threshold is eligible.
	r = e.search(postgram.SearchRequest{Query: "sourdough bread fermentation recipe", Threshold: ptr(0.2)})
	if len(r.Results) == 0 || r.Results[0].Entity.ID != ents[1].ID {
		t.Fatalf("paraphrase: %v", ids(r))
	}
	// A threshold of 1 leaves only keyword-eligible candidates.
	r = e.search(postgram.SearchRequest{Query: "kubernetes", Threshold: ptr(1.0)})
	if len(r.Results) != 1 || r.Results[0].Entity.ID != ents[2].ID {
		t.Fatalf("threshold 1: %v", ids(r))
	}
}

func testVectorStrategies(t *testing.T, open Opener) {
	e := newEnv(t, open)
	for i := 0; i < 40; i++ {
		tags := []string{"bulk"}
		if i%10 == 0 {
			tags = []string{"narrow"}
		}
		e.store1(postgram.StoreInput{Content: fmt.Sprintf("vector strategy sample number %d about topic %d", i, i%7), Tags: tags})
	}
	e.enrich()
	base := postgram.SearchRequest{Query: "sample about topic 3", Limit: 10, Threshold: ptr(0.0)}
	var sets [][]uuid.UUID
	for _, s := range []postgram.Strategy{postgram.StrategyExact, postgram.StrategyHNSW, postgram.StrategyAuto} {
		req := base
		req.Strategy = s
		r := e.search(req)
		if len(r.Results) != 10 {
			t.Fatalf("%s: %d results", s, len(r.Results))
		}
		sets = append(sets, ids(r))
	}
	// A narrow filtered subset: the ANN scan cannot fill the target, so it
	// must fall back to exact ranking and still return every match.
	req := base
	req.Strategy = postgram.StrategyHNSW
	req.Tags = []string{"narrow"}
	r := e.search(req)
	if len(r.Results) != 4 {
		t.Fatalf("narrow subset: %d results (plan %s), want 4", len(r.Results), r.Stats.VectorPlan)
	}
	for _, x := range r.Results {
		if x.Entity.Tags[0] != "narrow" {
			t.Fatalf("filter ignored: %v", x.Entity.Tags)
		}
	}
}

func testSearchDegraded(t *testing.T, open Opener) {
	e := newEnv(t, open)
	ent := e.store1(postgram.StoreInput{Content: "resilient keyword search about otters"})
	e.enrich()
	e.emb.Fail(fmt.Errorf("connection refused: %w", postgram.ErrUnavailable))
	r := e.search(postgram.SearchRequest{Query: "otters resilient and new"})
	if len(r.Results) != 1 || r.Results[0].Entity.ID != ent.ID {
		t.Fatalf("degraded search: %v", ids(r))
	}
	if len(r.Degraded) != 1 || r.Degraded[0].Component != "vector" || r.Degraded[0].Reason == "" {
		t.Fatalf("degraded marker: %+v", r.Degraded)
	}
	h, err := e.admin().Health(e.ctx)
	if err != nil || h.Status != "degraded" || h.Embedding.State != "failing" {
		t.Fatalf("health during outage: %+v %v", h, err)
	}
	// Writes still succeed during the outage and are not lost.
	later := e.store1(postgram.StoreInput{Content: "written during the outage"})
	st, err := e.admin().EnrichPending(e.ctx)
	if err != nil || st.Failed != 1 {
		t.Fatalf("enrich during outage: %+v %v", st, err)
	}
	back, _ := e.c.Recall(e.ctx, later.ID)
	if back.EnrichmentStatus != postgram.StageFailed || back.EnrichmentError == "" {
		t.Fatalf("failure should be recorded: %+v", back)
	}
	// Without any embedder, search is keyword-only and says why.
	bare := e.client(func(c *postgram.Config) { c.Embedder = nil })
	r = mustSearch(t, bare, postgram.SearchRequest{Query: "otters"})
	if len(r.Results) != 1 || len(r.Degraded) != 1 {
		t.Fatalf("no-embedder search: %v %+v", ids(r), r.Degraded)
	}
}

func testSearchOptions(t *testing.T, open Opener) {
	e := newEnv(t, open)
	long := "Opening paragraph about llamas.\n\n"
	for i := 0; i < 40; i++ {
		long += "Filler sentence number " + fmt.Sprint(i) + " that pads the document out considerably. "
	}
	long += "\n\nClosing paragraph mentions the secret word quetzal."
	ent := e.store1(postgram.StoreInput{Type: postgram.TypeDocument, Content: long, Tags: []string{"zoo"}})
	e.store1(postgram.StoreInput{Type: postgram.TypeMemory, Content: "quetzal memory", Tags: []string{"bird"}})
	e.enrich()
	r := e.search(postgram.SearchRequest{Query: "quetzal", Types: []postgram.EntityType{postgram.TypeDocument}, IncludeContent: ptr(false)})
	if len(r.Results) != 1 || r.Results[0].Entity.ID != ent.ID {
		t.Fatalf("type filter: %v", ids(r))
	}
	x := r.Results[0]
	if x.Entity.Content != "" || !containsWord(x.ChunkContent, "quetzal.") && !containsWord(x.ChunkContent, "quetzal") {
		t.Fatalf("include_content false should return only the matched chunk: content %d bytes, chunk %q", len(x.Entity.Content), x.ChunkContent)
	}
	if len(x.ChunkContent) >= len(long) {
		t.Fatal("the matched chunk should be a part of the document")
	}
	r = e.search(postgram.SearchRequest{Query: "quetzal", Tags: []string{"bird"}})
	if len(r.Results) != 1 || r.Results[0].Entity.Type != postgram.TypeMemory || r.Results[0].Entity.Content == "" {
		t.Fatalf("tag filter: %v", ids(r))
	}
	r = e.search(postgram.SearchRequest{Query: "quetzal", Limit: 1})
	if len(r.Results) != 1 {
		t.Fatalf("limit 1: %d", len(r.Results))
	}
	r = e.search(postgram.SearchRequest{Query: "quetzal", RecencyWeight: 1})
	for _, x := range r.Results {
		if x.RecencyScore > x.Score || x.RecencyScore < x.Score*0.99 {
			t.Fatalf("fresh entities keep nearly their whole score: %v vs %v", x.RecencyScore, x.Score)
		}
	}
}

func testEnrichment(t *testing.T, open Opener) {
	e := newEnv(t, open, func(c *postgram.Config) { c.Worker.EmbedBatch = 16; c.Chunking.Size = 200; c.Chunking.Overlap = 20 })
	total := 0
	for i := 0; i < 20; i++ {
		content := ""
		for j := 0; j <= i%4; j++ {
			content += fmt.Sprintf("Paragraph %d of entity %d talks about enrichment batching and workers at length. ", j, i)
			content += "More words to push this paragraph past the chunk size so it splits.\n\n"
		}
		e.store1(postgram.StoreInput{Content: content})
	}
	q, err := e.c.QueueStatus(e.ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if q.Embedding.Pending != 20 || q.Embedding.OldestPendingSecs == nil {
		t.Fatalf("queue before: %+v", q.Embedding)
	}
	st := e.enrich()
	total = st.Chunks
	if st.Entities != 20 || st.Failed != 0 {
		t.Fatalf("enrich: %+v", st)
	}
	// Batching: chunks of many entities share provider calls.
	if wantMax := (total+15)/16 + 1; st.Calls > wantMax {
		t.Fatalf("%d provider calls for %d chunks with batch 16 (claim batches of 32 entities): want at most %d", st.Calls, total, wantMax)
	}
	if int(e.emb.Texts()) != total {
		t.Fatalf("embedded %d texts for %d chunks: each chunk exactly once", e.emb.Texts(), total)
	}
	q, _ = e.c.QueueStatus(e.ctx, 10)
	if q.Embedding.Pending != 0 || q.Embedding.Completed != 20 || q.Embedding.OldestPendingSecs != nil {
		t.Fatalf("queue after: %+v", q.Embedding)
	}
	if again := e.enrich(); again.Entities != 0 || again.Calls != 0 {
		t.Fatalf("second pass should find nothing: %+v", again)
	}
}

func testEnrichmentRetry(t *testing.T, open Opener) {
	e := newEnv(t, open, func(c *postgram.Config) { c.Worker.RetryBackoff = 400 * time.Millisecond })
	ent := e.store1(postgram.StoreInput{Content: "retry me"})
	e.emb.Fail(fmt.Errorf("HTTP 500 from provider: %w", postgram.ErrUnavailable))
	for attempt := 1; attempt <= 4; attempt++ {
		st, err := e.admin().EnrichPending(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if st.Failed != 1 {
			t.Fatalf("attempt %d: %+v", attempt, st)
		}
		// Not due yet: an immediate second pass must not retry.
		if st2, _ := e.admin().EnrichPending(e.ctx); st2.Failed != 0 {
			t.Fatalf("attempt %d retried before its backoff", attempt)
		}
		back, _ := e.c.Recall(e.ctx, ent.ID)
		if back.EnrichmentAttempts != attempt || back.EnrichmentStatus != postgram.StageFailed ||
			back.EnrichmentError == "" {
			t.Fatalf("after attempt %d: %+v", attempt, back)
		}
		q, _ := e.c.QueueStatus(e.ctx, 5)
		wantEligible := 1
		if attempt == 4 {
			wantEligible = 0
		}
		if q.Embedding.Failed != 1 || q.Embedding.RetryEligible != wantEligible || len(q.Failures) != 1 || q.Failures[0].Kind != "embedding" {
			t.Fatalf("queue after attempt %d: %+v %+v", attempt, q.Embedding, q.Failures)
		}
		time.Sleep(450 * time.Millisecond)
	}
	// Attempts are exhausted: no further retries even when the provider recovers.
	e.emb.Recover()
	if st, _ := e.admin().EnrichPending(e.ctx); st.Entities != 0 || st.Failed != 0 {
		t.Fatalf("exhausted entity retried: %+v", st)
	}
	// Editing the content re-queues it with fresh attempts.
	c := "retry me, edited"
	if _, err := e.c.Update(e.ctx, ent.ID, postgram.UpdateInput{Version: 1, Content: &c}); err != nil {
		t.Fatal(err)
	}
	if st := e.enrich(); st.Entities != 1 {
		t.Fatalf("edited entity not re-embedded: %+v", st)
	}
	back, _ := e.c.Recall(e.ctx, ent.ID)
	if back.EnrichmentStatus != postgram.StageCompleted || back.EnrichmentError != "" || back.EnrichmentAttempts != 0 {
		t.Fatalf("after recovery: %+v", back)
	}
}

func testEnrichmentRechunk(t *testing.T, open Opener) {
	e := newEnv(t, open)
	ent := e.store1(postgram.StoreInput{Content: "the old content mentions aardvarks"})
	e.enrich()
	c := "the new content mentions pangolins"
	up, err := e.c.Update(e.ctx, ent.ID, postgram.UpdateInput{Version: 1, Content: &c})
	if err != nil {
		t.Fatal(err)
	}
	if up.EnrichmentStatus != postgram.StagePending {
		t.Fatalf("content change must re-queue: %s", up.EnrichmentStatus)
	}
	if r := e.search(postgram.SearchRequest{Query: "aardvarks", Threshold: ptr(1.0)}); len(r.Results) != 0 {
		t.Fatalf("old chunks must be gone: %v", ids(r))
	}
	if r := e.search(postgram.SearchRequest{Query: "pangolins"}); len(r.Results) != 1 {
		t.Fatalf("new chunks must be findable at once: %v", ids(r))
	}
	e.enrich()
	r := e.search(postgram.SearchRequest{Query: "pangolins"})
	if len(r.Results) != 1 || r.Results[0].VectorRank != 1 {
		t.Fatalf("re-embedded: %+v", r.Results)
	}
	// A tags-only update keeps the embedding.
	if _, err := e.c.Update(e.ctx, ent.ID, postgram.UpdateInput{Version: 2, Tags: &[]string{"x"}}); err != nil {
		t.Fatal(err)
	}
	back, _ := e.c.Recall(e.ctx, ent.ID)
	if back.EnrichmentStatus != postgram.StageCompleted {
		t.Fatalf("a tags-only update must not re-queue: %s", back.EnrichmentStatus)
	}
}

func testConcurrentWorkers(t *testing.T, open Opener) {
	e := newEnv(t, open, func(c *postgram.Config) { c.Worker.ClaimBatch = 4 })
	const n = 60
	for i := 0; i < n; i++ {
		e.store1(postgram.StoreInput{Content: fmt.Sprintf("concurrent worker item %d", i)})
	}
	other := e.client(func(c *postgram.Config) { c.Worker.ClaimBatch = 4 })
	var wg sync.WaitGroup
	stats := make([]postgram.EnrichStats, 4)
	for i := range stats {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := e.c
			if i%2 == 1 {
				c = other
			}
			st, err := adminOf(t, c).EnrichPending(e.ctx)
			if err != nil {
				t.Errorf("worker %d: %v", i, err)
			}
			stats[i] = st
		}()
	}
	wg.Wait()
	sum := 0
	for _, s := range stats {
		sum += s.Entities
	}
	if sum != n {
		t.Fatalf("workers embedded %d entities in total, want exactly %d", sum, n)
	}
	if e.emb.Texts() != n {
		t.Fatalf("provider saw %d texts for %d single-chunk entities: some were claimed twice", e.emb.Texts(), n)
	}
}

func testWorkerStartStop(t *testing.T, open Opener) {
	e := newEnv(t, open, func(c *postgram.Config) { c.Worker.PollInterval = time.Hour })
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	if err := e.c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Start(ctx); err == nil {
		t.Fatal("second Start should fail")
	}
	ent := e.store1(postgram.StoreInput{Content: "wake the worker promptly"})
	deadline := time.Now().Add(5 * time.Second)
	for {
		back, _ := e.c.Recall(e.ctx, ent.ID)
		if back.EnrichmentStatus == postgram.StageCompleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker did not embed a new entity within 5s (poll interval is 1h, so it must be woken)")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A write through another client in the same workspace (as another
	// process would) wakes the worker too where the store can notify.
	other := e.client()
	ent2 := mustStore(t, other, postgram.StoreInput{Content: "written by another client"})
	if _, ok := e.store.(driver.Notifier); ok {
		deadline = time.Now().Add(5 * time.Second)
		for {
			back, _ := e.c.Recall(e.ctx, ent2.ID)
			if back.EnrichmentStatus == postgram.StageCompleted {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("a write from another client did not wake the worker")
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	stopCtx, stopCancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer stopCancel()
	if err := e.c.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	if err := e.c.Stop(stopCtx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

func testQueryCache(t *testing.T, open Opener) {
	e := newEnv(t, open)
	e.store1(postgram.StoreInput{Content: "cache me if you can"})
	e.enrich()
	before := e.emb.Calls()
	r := e.search(postgram.SearchRequest{Query: "cache lookup"})
	if r.Stats.QueryEmbedding != postgram.FromProvider || e.emb.Calls() != before+1 {
		t.Fatalf("cold query: %s, %d calls", r.Stats.QueryEmbedding, e.emb.Calls()-before)
	}
	r = e.search(postgram.SearchRequest{Query: "cache lookup"})
	if r.Stats.QueryEmbedding != postgram.FromMemoryCache || e.emb.Calls() != before+1 {
		t.Fatalf("repeat query: %s", r.Stats.QueryEmbedding)
	}
	// A fresh process (new client, empty LRU) hits the persisted cache.
	fresh := e.client()
	r = mustSearch(t, fresh, postgram.SearchRequest{Query: "cache lookup"})
	if r.Stats.QueryEmbedding != postgram.FromStoreCache || e.emb.Calls() != before+1 {
		t.Fatalf("persisted cache: %s", r.Stats.QueryEmbedding)
	}
	// A different secret changes the digest: the old rows do not match.
	keyed := e.client(func(c *postgram.Config) { c.QueryCache.Secret = []byte("s3cret") })
	r = mustSearch(t, keyed, postgram.SearchRequest{Query: "cache lookup"})
	if r.Stats.QueryEmbedding != postgram.FromProvider {
		t.Fatalf("keyed cache should miss unkeyed rows: %s", r.Stats.QueryEmbedding)
	}
	// Rows are per client: another client's persisted cache is separate.
	other := adminOf(t, e.client()).As(postgram.Principal{ClientID: "other", Scopes: postgram.AllScopes})
	r = mustSearch(t, other, postgram.SearchRequest{Query: "per client"})
	if r.Stats.QueryEmbedding != postgram.FromProvider {
		t.Fatal("new query for another client should call the provider")
	}
	// Retention: keep at most N rows per client.
	small := e.client(func(c *postgram.Config) { c.QueryCache.MaxRowsPerClient = 1 })
	n, err := adminOf(t, small).PruneQueryCache(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 { // the unkeyed client "" has 2 rows (plain and keyed digests)
		t.Fatalf("pruned %d rows, want 1", n)
	}
}

func testModelMismatch(t *testing.T, open Opener) {
	e := newEnv(t, open)
	_, err := postgram.New(e.ctx, postgram.Config{Store: e.store, Embedder: postgramtest.NewEmbedder(Dims + 1)})
	if !errors.Is(err, postgram.ErrModelMismatch) {
		t.Fatalf("opening with other dimensions: %v", err)
	}
	if msg := err.Error(); !containsAll(msg, "pgm-admin embeddings migrate", fmt.Sprint(Dims), fmt.Sprint(Dims+1)) {
		t.Fatalf("the error should tell the operator what to run: %s", msg)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		found := false
		for i := 0; i+len(sub) <= len(s); i++ {
			if s[i:i+len(sub)] == sub {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func testAPIKeys(t *testing.T, open Opener) {
	e := newEnv(t, open)
	token, key, err := e.admin().CreateKey(e.ctx, postgram.KeySpec{Name: "agent", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite},
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
	if err != nil {
		t.Fatal(err)
	}
	if len(token) < len(postgram.KeyPrefix)+43 || token[:4] != "pgm-" || key.ClientID != "agent" || key.Prefix != token[:10] {
		t.Fatalf("key %q / %+v", token, key)
	}
	scoped, err := e.admin().Authenticate(e.ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	p := scoped.Principal()
	if p == nil || p.KeyID != key.ID.String() || p.ClientID != "agent" || !p.Has(postgram.ScopeWrite) || p.Has(postgram.ScopeDelete) {
		t.Fatalf("principal %+v", p)
	}
	if _, err := scoped.Store(e.ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "x", Visibility: postgram.VisibilityWork}); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("write outside allowed visibilities: %v", err)
	}
	flipped := token[:len(token)-1] + "A"
	if token[len(token)-1] == 'A' {
		flipped = token[:len(token)-1] + "B"
	}
	for _, bad := range []string{"", "pgm-", "Bearer x", token + "x", flipped, "pgm-" + string(make([]byte, 300))} {
		if _, err := e.admin().Authenticate(e.ctx, bad); !errors.Is(err, postgram.ErrUnauthorized) {
			t.Fatalf("Authenticate(%q) = %v", bad, err)
		}
	}
	if _, err := scoped.Admin(); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("a key may not create keys: %v", err)
	}
	_, _, err = e.admin().CreateKey(e.ctx, postgram.KeySpec{Name: "bad", Scopes: []postgram.Scope{"admin"}})
	wantErr(t, err, postgram.ErrInvalidArgument, "scopes[0]")
	_, _, err = e.admin().CreateKey(e.ctx, postgram.KeySpec{Name: " "})
	wantErr(t, err, postgram.ErrInvalidArgument, "name")
	keys, err := e.admin().ListKeys(e.ctx)
	if err != nil || len(keys) != 1 || keys[0].ID != key.ID {
		t.Fatalf("ListKeys: %v %+v", err, keys)
	}
	if err := e.admin().RevokeKey(e.ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin().Authenticate(e.ctx, token); !errors.Is(err, postgram.ErrUnauthorized) {
		t.Fatalf("revoked key accepted: %v", err)
	}
	if err := e.admin().RevokeKey(e.ctx, uuid.New()); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}
	other := e.client(func(c *postgram.Config) { c.Workspace = "elsewhere" })
	t2, _, err := e.admin().CreateKey(e.ctx, postgram.KeySpec{Name: "home"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := adminOf(t, other).Authenticate(e.ctx, t2); !errors.Is(err, postgram.ErrUnauthorized) {
		t.Fatalf("a key works only in its own workspace: %v", err)
	}
	peppered := e.client(func(c *postgram.Config) { c.KeyPepper = []byte("pepper") })
	if _, err := adminOf(t, peppered).Authenticate(e.ctx, t2); !errors.Is(err, postgram.ErrUnauthorized) {
		t.Fatalf("a different pepper must not verify: %v", err)
	}
}

// testKeyRevocationAcrossClients: two clients on one store stand for two
// server replicas. Both cache a verified key; revoking it through one makes
// the other refuse it too.
func testKeyRevocationAcrossClients(t *testing.T, open Opener) {
	e := newEnv(t, open)
	replicaB := e.client()
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	for _, c := range []*postgram.Client{e.c, replicaB} {
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer c.Stop(context.Background())
	}
	token, key, err := e.admin().CreateKey(e.ctx, postgram.KeySpec{Name: "shared", Scopes: postgram.AllScopes})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*postgram.Client{e.c, replicaB} {
		for i := 0; i < 3; i++ {
			if _, err := adminOf(t, c).Authenticate(e.ctx, token); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.admin().RevokeKey(e.ctx, key.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.admin().Authenticate(e.ctx, token); !errors.Is(err, postgram.ErrUnauthorized) {
		t.Fatalf("the revoking replica accepted the key: %v", err)
	}
	if _, ok := e.store.(driver.Notifier); !ok {
		// Without a change feed, keys are cached only by a KeyVersioner
		// store's version, which every call checks: the other replica
		// must refuse the key at once.
		if _, err := adminOf(t, replicaB).Authenticate(e.ctx, token); !errors.Is(err, postgram.ErrUnauthorized) {
			t.Fatalf("the other replica accepted the key: %v", err)
		}
		return
	}
	// The revocation reaches the other replica through the change feed;
	// allow for its delivery latency and report it.
	start := time.Now()
	for {
		_, err := adminOf(t, replicaB).Authenticate(e.ctx, token)
		if errors.Is(err, postgram.ErrUnauthorized) {
			t.Logf("revocation reached the other replica after %v", time.Since(start))
			break
		}
		if time.Since(start) > 2*time.Second {
			t.Fatalf("the other replica still accepts a revoked key after 2s: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
}

func testAudit(t *testing.T, open Opener) {
	e := newEnv(t, open)
	_, key, err := e.admin().CreateKey(e.ctx, postgram.KeySpec{Name: "auditor", Scopes: postgram.AllScopes})
	if err != nil {
		t.Fatal(err)
	}
	as := e.admin().As(postgram.KeyPrincipal(key))
	ent := mustStore(t, as, postgram.StoreInput{Content: "audited"})
	c := "audited again"
	if _, err := as.Update(e.ctx, ent.ID, postgram.UpdateInput{Version: 1, Content: &c}); err != nil {
		t.Fatal(err)
	}
	if _, err := as.Delete(e.ctx, ent.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.admin().RecordAudit(e.ctx, nil, "admin.sql", map[string]any{"statement": "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	all, err := e.admin().Audit(e.ctx, postgram.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, a := range all {
		ops = append(ops, a.Operation)
	}
	want := []string{"admin.sql", "entity.delete", "entity.update", "entity.store", "key.create"}
	if fmt.Sprint(ops) != fmt.Sprint(want) {
		t.Fatalf("audit operations newest first = %v, want %v", ops, want)
	}
	byKey, _ := e.admin().Audit(e.ctx, postgram.AuditFilter{KeyID: key.ID.String()})
	if len(byKey) != 3 || byKey[0].ClientID != "auditor" || byKey[2].EntityID != ent.ID.String() {
		t.Fatalf("audit by key: %+v", byKey)
	}
	byOp, _ := e.admin().Audit(e.ctx, postgram.AuditFilter{Operation: "entity.update", Since: time.Now().Add(-time.Hour)})
	if len(byOp) != 1 || byOp[0].Details["content_changed"] != true {
		t.Fatalf("audit by operation: %+v", byOp)
	}
	if none, _ := e.admin().Audit(e.ctx, postgram.AuditFilter{Until: time.Now().Add(-time.Hour)}); len(none) != 0 {
		t.Fatalf("audit until an hour ago: %d entries", len(none))
	}
	if _, err := as.Admin(); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("a key may not read the audit log: %v", err)
	}
}

// adminOf returns the operator API of an unscoped client.
func adminOf(t testing.TB, c *postgram.Client) *postgram.Admin {
	t.Helper()
	a, err := c.Admin()
	if err != nil {
		t.Fatalf("admin: %v", err)
	}
	return a
}

// admin returns the operator API of the environment's client.
func (e *env) admin() *postgram.Admin { return adminOf(e.t, e.c) }
