package workspaces_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/hashing"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/workspaces"
)

// Example serves two tenants from one store: each key finds its own
// workspace, and a search there never sees the other's entities.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "postgram-workspaces-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "postgram.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	d, err := workspaces.Open(ctx, workspaces.Config{Client: postgram.Config{Store: store, Embedder: hashing.New(64)}})
	if err != nil {
		log.Fatal(err)
	}
	keys := map[string]string{}
	for _, name := range []string{"acme", "globex"} {
		w, err := d.Create(ctx, name)
		if err != nil {
			log.Fatal(err)
		}
		keys[name], _, err = w.Admin.CreateKey(ctx, postgram.KeySpec{Name: name + "-agent", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
		if err != nil {
			log.Fatal(err)
		}
	}

	// A request carries only its key: the directory finds the workspace.
	acme, err := d.Authenticate(ctx, keys["acme"])
	if err != nil {
		log.Fatal(err)
	}
	if _, err := acme.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "Acme's launch is on Friday"}); err != nil {
		log.Fatal(err)
	}
	globex, err := d.Authenticate(ctx, keys["globex"])
	if err != nil {
		log.Fatal(err)
	}
	for _, c := range []*postgram.Client{acme, globex} {
		res, err := c.Search(ctx, postgram.SearchRequest{Query: "launch Friday"})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(c.Workspace(), len(res.Results))
	}
	infos, err := d.List(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, in := range infos {
		fmt.Println(in.Name, in.Stats.Entities, in.Stats.Keys)
	}
	// Output:
	// acme 1
	// globex 0
	// acme 1 1
	// globex 0 1
}
