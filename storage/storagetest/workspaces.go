package storagetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/workspaces"
)

// testWorkspaces drives many workspaces of one store through a
// workspaces.Directory: create, list with statistics, keys that find their
// own workspace and no other, per-workspace workers, and a delete that
// takes everything of one workspace and nothing of another.
func testWorkspaces(t *testing.T, open Opener) {
	e := newEnv(t, open)
	ctx := e.ctx
	dir, err := workspaces.Open(ctx, workspaces.Config{Client: postgram.Config{Store: e.store, Embedder: e.emb}})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	acme, err := dir.Create(ctx, "acme")
	if err != nil {
		t.Fatalf("create acme: %v", err)
	}
	bravo, err := dir.Create(ctx, "bravo")
	if err != nil {
		t.Fatalf("create bravo: %v", err)
	}
	if _, err := dir.Create(ctx, "acme"); !errors.Is(err, postgram.ErrConflict) {
		t.Errorf("creating acme twice: %v, want ErrConflict", err)
	}
	var fe *postgram.FieldError
	if _, err := dir.Create(ctx, "no spaces/here"); !errors.As(err, &fe) || fe.Field != "workspace" {
		t.Errorf("an invalid name: %v, want a validation error naming workspace", err)
	}

	tokA, _, err := acme.Admin.CreateKey(ctx, postgram.KeySpec{Name: "a", Scopes: postgram.AllScopes})
	if err != nil {
		t.Fatal(err)
	}
	tokB, _, err := bravo.Admin.CreateKey(ctx, postgram.KeySpec{Name: "b", Scopes: postgram.AllScopes})
	if err != nil {
		t.Fatal(err)
	}
	a, err := dir.Authenticate(ctx, tokA)
	if err != nil || a.Workspace() != "acme" {
		t.Fatalf("acme's key: %v in %v", err, a)
	}
	b, err := dir.Authenticate(ctx, tokB)
	if err != nil || b.Workspace() != "bravo" {
		t.Fatalf("bravo's key: %v", err)
	}
	if _, err := dir.Authenticate(ctx, postgram.KeyPrefix+"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, postgram.ErrUnauthorized) {
		t.Errorf("an unknown key: %v, want ErrUnauthorized", err)
	}
	// A key created through a plain client enters its workspace too.
	charlie := e.client(func(c *postgram.Config) { c.Workspace = "charlie" })
	if _, _, err := adminOf(t, charlie).CreateKey(ctx, postgram.KeySpec{Name: "c"}); err != nil {
		t.Fatal(err)
	}

	ea := mustStore(t, a, postgram.StoreInput{Content: "acme zebra ledger"})
	eb := mustStore(t, b, postgram.StoreInput{Content: "bravo zebra ledger"})
	for _, c := range []*postgram.Client{a, b} {
		r := mustSearch(t, c, postgram.SearchRequest{Query: "zebra ledger"})
		want := ea.ID
		if c == b {
			want = eb.ID
		}
		if got := ids(r); len(got) != 1 || got[0] != want {
			t.Errorf("%s's search: %v, want only its own %s", c.Workspace(), got, want)
		}
	}
	if _, err := a.Recall(ctx, eb.ID); !errors.Is(err, postgram.ErrNotFound) {
		t.Errorf("acme's key reads bravo's entity: %v", err)
	}
	if _, err := b.Update(ctx, ea.ID, postgram.UpdateInput{Version: 1, Content: ptr("taken")}); !errors.Is(err, postgram.ErrNotFound) {
		t.Errorf("bravo's key updates acme's entity: %v", err)
	}

	// Started, each workspace's own worker embeds its entities.
	if err := dir.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		sa, _ := acme.Admin.Stats(ctx)
		sb, _ := bravo.Admin.Stats(ctx)
		if sa.EmbeddedChunks == 1 && sb.EmbeddedChunks == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the workspaces' workers did not embed: acme %+v bravo %+v", sa, sb)
		}
		time.Sleep(20 * time.Millisecond)
	}

	infos, err := dir.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]workspaces.Info{}
	for _, in := range infos {
		got[in.Name] = in
	}
	for _, name := range []string{"acme", "bravo", "charlie"} {
		if _, ok := got[name]; !ok {
			t.Errorf("List: %s missing from %v", name, infos)
		}
	}
	if s := got["acme"].Stats; s.Entities != 1 || s.Keys != 1 || !got["acme"].Open || got["acme"].CreatedAt.IsZero() {
		t.Errorf("acme's entry: %+v", got["acme"])
	}

	n, err := dir.Delete(ctx, "acme")
	if err != nil {
		t.Fatalf("delete acme: %v", err)
	}
	if n.Entities != 1 || n.Chunks != 1 || n.Keys != 1 || n.AuditRows == 0 {
		t.Errorf("delete acme counted %+v", n)
	}
	if _, err := dir.Authenticate(ctx, tokA); !errors.Is(err, postgram.ErrUnauthorized) {
		t.Errorf("a deleted workspace's key: %v, want ErrUnauthorized", err)
	}
	if st, err := e.store.Stats(ctx, "acme"); err != nil || st.Entities != 0 || st.Chunks != 0 || st.Keys != 0 || st.AuditEntries != 0 {
		t.Errorf("acme after delete: %+v %v", st, err)
	}
	if _, err := dir.Delete(ctx, "acme"); !errors.Is(err, postgram.ErrNotFound) {
		t.Errorf("deleting acme twice: %v, want ErrNotFound", err)
	}
	if _, err := dir.Delete(ctx, "never-made"); !errors.Is(err, postgram.ErrNotFound) {
		t.Errorf("deleting an unknown workspace: %v, want ErrNotFound", err)
	}
	// Bravo is untouched.
	if b2, err := dir.Authenticate(ctx, tokB); err != nil {
		t.Errorf("bravo's key after acme's delete: %v", err)
	} else if got := ids(mustSearch(t, b2, postgram.SearchRequest{Query: "zebra ledger"})); len(got) != 1 || got[0] != eb.ID {
		t.Errorf("bravo's search after acme's delete: %v", got)
	}
	if st, err := bravo.Admin.Stats(ctx); err != nil || st.Entities != 1 || st.EmbeddedChunks != 1 || st.Keys != 1 {
		t.Errorf("bravo after acme's delete: %+v %v", st, err)
	}
	infos, err = dir.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.Name == "acme" {
			t.Errorf("acme is still listed: %v", infos)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := dir.Stop(sctx); err != nil {
		t.Errorf("stop: %v", err)
	}

	// The store's own answers.
	ws := e.store.(driver.WorkspaceStorage)
	if err := ws.CreateWorkspace(ctx, "bravo", time.Now()); !errors.Is(err, driver.ErrConflict) {
		t.Errorf("CreateWorkspace of an existing one: %v", err)
	}
	if _, err := ws.KeyWorkspace(ctx, []byte("no such digest")); !errors.Is(err, driver.ErrNotFound) {
		t.Errorf("KeyWorkspace of an unknown digest: %v", err)
	}
}
