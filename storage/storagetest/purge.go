package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/syncproto"
)

// PurgeCanary is a word the purge tests store only in the purged content,
// so that a backend's test can look for it in the store's files or rows
// afterwards (PurgeFixture).
const PurgeCanary = "zqxpurgecanary"

// PurgeFixture stores, through c, a synced document whose content (and an
// earlier version of it) holds PurgeCanary, with a manual edge, a derived
// edge it originated between two other entities, and a persisted query
// embedding; it returns the document's id. Purging that id must leave no
// trace of PurgeCanary in the store.
func PurgeFixture(t *testing.T, c *postgram.Client) uuid.UUID {
	t.Helper()
	ctx := t.Context()
	st := adminOf(t, c).Storage()
	body := "# Secret plan\n\nThe " + PurgeCanary + " launch code is " + PurgeCanary + "x42.\n"
	if _, err := c.Sync().Upload(ctx, syncproto.UploadRequest{Repo: "notes", Files: []syncproto.UploadFile{upFile("secret.md", body)}}); err != nil {
		t.Fatal(err)
	}
	// A second version: the first one's rows are replaced.
	body2 := body + "\nRevised: " + PurgeCanary + " again.\n"
	if _, err := c.Sync().Upload(ctx, syncproto.UploadRequest{Repo: "notes", Files: []syncproto.UploadFile{upFile("secret.md", body2)}}); err != nil {
		t.Fatal(err)
	}
	doc := repoDocs(t, c, true)["secret.md"]
	if doc == nil {
		t.Fatal("the synced document is missing")
	}
	b := mustStore(t, c, postgram.StoreInput{Type: postgram.TypePerson, Content: "Bob, who keeps things"})
	d := mustStore(t, c, postgram.StoreInput{Type: postgram.TypeProject, Content: "Project Delta"})
	mustLink(t, c, doc.ID, b.ID, "involves")
	origin := doc.ID
	now := time.Now().UTC()
	if _, err := st.UpsertEdges(ctx, c.Workspace(), []postgram.Edge{{ID: uuid.New(), SourceID: b.ID, TargetID: d.ID,
		Relation: "works_on", Confidence: 0.7, Source: postgram.EdgeSourceLLM, OriginID: &origin, CreatedAt: now, UpdatedAt: now}}, nil); err != nil {
		t.Fatal(err)
	}
	models, err := st.ListModels(ctx)
	if err != nil || len(models) == 0 {
		t.Fatalf("models: %v %v", models, err)
	}
	if err := st.PutQueryEmbedding(ctx, c.Workspace(), "", models[0].ID, []byte("purge-query-key"), make([]float32, Dims)); err != nil {
		t.Fatal(err)
	}
	return doc.ID
}

func testPurge(t *testing.T, open Opener) {
	e := newEnv(t, open)
	if _, ok := e.store.(driver.PurgeStorage); !ok {
		t.Fatalf("%s does not implement driver.PurgeStorage", e.store.Name())
	}
	id := PurgeFixture(t, e.c)
	if _, err := e.admin().EnrichPending(e.ctx); err != nil {
		t.Fatal(err)
	}
	models, err := e.store.ListModels(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws := e.c.Workspace()
	keep := e.store1(postgram.StoreInput{Type: postgram.TypeMemory, Content: "an unrelated memory"})
	before, err := e.admin().Audit(e.ctx, postgram.AuditFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}

	// Only an admin purges.
	user := e.admin().As(postgram.Principal{KeyID: "k", ClientID: "x", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite, postgram.ScopeDelete}})
	if _, err := user.Admin(); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("a key purged: %v", err)
	}
	if _, err := e.admin().Purge(e.ctx, postgram.PurgeRequest{}); !errors.Is(err, postgram.ErrInvalidArgument) {
		t.Fatalf("a purge selecting nothing: %v", err)
	}
	// A dry run changes nothing.
	res, err := e.admin().Purge(e.ctx, postgram.PurgeRequest{IDs: []uuid.UUID{id, uuid.New()}, DryRun: true})
	if err != nil || !res.DryRun || len(res.IDs) != 1 || res.IDs[0] != id {
		t.Fatalf("dry run: %+v %v", res, err)
	}
	if _, err := e.c.Recall(e.ctx, id); err != nil {
		t.Fatalf("the dry run purged: %v", err)
	}

	res, err = e.admin().Purge(e.ctx, postgram.PurgeRequest{IDs: []uuid.UUID{id}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Entities != 1 || res.Chunks < 1 || res.Edges != 2 || res.SyncFiles != 1 || res.QueryEmbeddings != 1 || !res.Scrubbed {
		t.Fatalf("purge counts: %+v", res)
	}
	if _, err := e.store.GetEntity(e.ctx, ws, id); !errors.Is(err, postgram.ErrNotFound) {
		t.Fatalf("the purged entity remains: %v", err)
	}
	if edges, err := e.store.FindEdges(e.ctx, ws, driver.EdgeQuery{}); err != nil || len(edges) != 0 {
		t.Fatalf("edges after purge: %+v %v", edges, err)
	}
	if states, err := e.store.SyncStates(e.ctx, ws, "notes", nil, nil); err != nil || len(states) != 0 {
		t.Fatalf("sync state after purge: %+v %v", states, err)
	}
	if _, ok, err := e.store.GetQueryEmbedding(e.ctx, ws, "", models[0].ID, []byte("purge-query-key")); ok || err != nil {
		t.Fatalf("query cache after purge: %v %v", ok, err)
	}
	sr, err := e.c.Search(e.ctx, postgram.SearchRequest{Query: PurgeCanary})
	if err != nil || len(sr.Results) != 0 {
		t.Fatalf("search finds the purged content: %+v %v", sr, err)
	}
	if _, err := e.c.Recall(e.ctx, keep.ID); err != nil {
		t.Fatalf("an unrelated entity went: %v", err)
	}
	// The audit log keeps every earlier entry and names the purge by id
	// and counts.
	after, err := e.admin().Audit(e.ctx, postgram.AuditFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before)+1 || after[0].Operation != "admin.purge" {
		t.Fatalf("audit after purge: %d entries (before %d), newest %+v", len(after), len(before), after[0])
	}
	ids, _ := after[0].Details["ids"].([]any)
	if len(ids) != 1 || ids[0] != id.String() || toInt(after[0].Details["entities"]) != 1 || toInt(after[0].Details["chunks"]) != res.Chunks {
		t.Fatalf("purge audit details: %+v", after[0].Details)
	}
	// Purging again finds nothing.
	if res, err := e.admin().Purge(e.ctx, postgram.PurgeRequest{IDs: []uuid.UUID{id}}); err != nil || res.Entities != 0 {
		t.Fatalf("second purge: %+v %v", res, err)
	}

	// --archived-before and --type select; they combine.
	old := e.store1(postgram.StoreInput{Type: postgram.TypeMemory, Content: "archived memory"})
	oldTask := e.store1(postgram.StoreInput{Type: postgram.TypeTask, Content: "archived task"})
	task := e.store1(postgram.StoreInput{Type: postgram.TypeTask, Content: "active task"})
	for _, x := range []uuid.UUID{old.ID, oldTask.ID} {
		if _, err := e.c.Delete(e.ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Millisecond)
	cut := time.Now()
	res, err = e.admin().Purge(e.ctx, postgram.PurgeRequest{ArchivedBefore: cut, Type: postgram.TypeTask, NoScrub: true})
	if err != nil || res.Entities != 1 || res.IDs[0] != oldTask.ID || res.Scrubbed {
		t.Fatalf("archived tasks: %+v %v", res, err)
	}
	res, err = e.admin().Purge(e.ctx, postgram.PurgeRequest{ArchivedBefore: cut, DryRun: true})
	if err != nil || len(res.IDs) != 1 || res.IDs[0] != old.ID {
		t.Fatalf("archived dry run: %+v %v", res, err)
	}
	// Another workspace's task and query cache are untouched.
	other := e.client(func(c *postgram.Config) { c.Workspace = "other" })
	otherTask := mustStore(t, other, postgram.StoreInput{Type: postgram.TypeTask, Content: "another workspace's task"})
	if err := e.store.PutQueryEmbedding(e.ctx, "other", "", models[0].ID, []byte("other-key"), make([]float32, Dims)); err != nil {
		t.Fatal(err)
	}
	res, err = e.admin().Purge(e.ctx, postgram.PurgeRequest{Type: postgram.TypeTask})
	if err != nil || res.Entities != 1 || res.IDs[0] != task.ID {
		t.Fatalf("tasks: %+v %v", res, err)
	}
	if _, err := e.store.GetEntity(e.ctx, "other", otherTask.ID); err != nil {
		t.Fatalf("a purge reached another workspace: %v", err)
	}
	if _, ok, err := e.store.GetQueryEmbedding(e.ctx, "other", "", models[0].ID, []byte("other-key")); !ok || err != nil {
		t.Fatalf("a purge emptied another workspace's query cache: %v %v", ok, err)
	}
	for _, x := range []uuid.UUID{old.ID, keep.ID} {
		if _, err := e.store.GetEntity(e.ctx, ws, x); err != nil {
			t.Fatalf("%s went: %v", x, err)
		}
	}
}

func toInt(v any) int {
	switch n := v.(type) {
	case float64:
		return int(n)
	case int:
		return n
	case int64:
		return int(n)
	}
	return -1
}
