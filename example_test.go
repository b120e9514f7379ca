package postgram_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/hashing"
	"github.com/postgram-go/postgram/storage/sqlite"
)

// Example stores a memory, finds it by keyword at once, embeds it and finds
// it again with hybrid search. It runs on the embedded SQLite store in a
// temporary directory with the offline hashing embedder: in your program,
// keep the file (or use storage/postgres) and pick a real embedder such as
// providers/openai.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "postgram-example-")
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

	client, err := postgram.New(ctx, postgram.Config{
		Store:    store,
		Embedder: hashing.New(256), // e.g. openai.New(openai.Config{APIKey: key})
	})
	if err != nil {
		log.Fatal(err)
	}

	mem, err := client.Store(ctx, postgram.StoreInput{
		Type:    postgram.TypeMemory,
		Content: "Decision PGM-42: we use pgvector HNSW indexes for embeddings.",
		Tags:    []string{"decision"},
	})
	if err != nil {
		log.Fatal(err)
	}

	// Keyword search finds it the moment Store returns.
	res, err := client.Search(ctx, postgram.SearchRequest{Query: "PGM-42"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(res.Results), res.Results[0].Entity.ID == mem.ID, mem.EnrichmentStatus)

	// Embed synchronously (a server runs client.Start(ctx) instead): an
	// operator's act, on the Admin of the unscoped client.
	admin, err := client.Admin()
	if err != nil {
		log.Fatal(err)
	}
	if _, err := admin.EnrichPending(ctx); err != nil {
		log.Fatal(err)
	}
	res, err = client.Search(ctx, postgram.SearchRequest{Query: "which index do we use for embeddings?"})
	if err != nil {
		log.Fatal(err)
	}
	top := res.Results[0]
	fmt.Println(top.Entity.ID == mem.ID, top.VectorRank, top.KeywordRank)
	// Output:
	// 1 true pending
	// true 1 1
}
