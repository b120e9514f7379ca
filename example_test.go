package postgram_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
)

// Example stores a memory, finds it by keyword at once, embeds it and finds
// it again with hybrid search. It runs against the test cluster
// (scripts/test.sh sets POSTGRAM_TEST_DATABASE_URL); in your program, use
// your DATABASE_URL and a real embedder such as providers/openai.
func Example() {
	ctx := context.Background()
	dsn := exampleDatabase(ctx)

	store, err := postgres.Open(ctx, postgres.Config{URL: dsn})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	client, err := postgram.New(ctx, postgram.Config{
		Store:    store,
		Embedder: postgramtest.NewEmbedder(256), // e.g. openai.New(openai.Config{APIKey: key})
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

// exampleDatabase makes an empty schema in the test cluster and returns a
// DSN that uses it.
func exampleDatabase(ctx context.Context) string {
	base := os.Getenv("POSTGRAM_TEST_DATABASE_URL")
	if base == "" {
		log.Fatal("POSTGRAM_TEST_DATABASE_URL is not set: run scripts/test.sh")
	}
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS example_quickstart CASCADE; CREATE SCHEMA example_quickstart"); err != nil {
		log.Fatal(err)
	}
	return base + "&search_path=example_quickstart,public"
}
