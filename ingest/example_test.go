package ingest_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/ingest/raw"
	"github.com/postgram-go/postgram/providers/hashing"
	"github.com/postgram-go/postgram/storage/sqlite"
)

// Example ingests a Markdown file through a job, waits for it and finds
// its section with search. The service runs the jobs (Run) next to the
// client's background work (Start); the raw store keeps the original bytes.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "postgram-ingest-example-")
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
	client, err := postgram.New(ctx, postgram.Config{Store: store, Embedder: hashing.New(256)})
	if err != nil {
		log.Fatal(err)
	}
	admin, err := client.Admin()
	if err != nil {
		log.Fatal(err)
	}
	rs, err := raw.Open("", dir, 0) // raw/ under the data directory
	if err != nil {
		log.Fatal(err)
	}
	svc, err := ingest.New(admin, ingest.Config{Raw: rs})
	if err != nil {
		log.Fatal(err)
	}
	run, stop := context.WithCancel(ctx)
	defer stop()
	if err := client.Start(run); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	go svc.Run(run)

	doc := "# Handbook\n\n## Travel\n\nTrain tickets over 200 euros need a manager's approval.\n"
	job, err := svc.Submit(ctx, client, ingest.Input{Body: strings.NewReader(doc), Filename: "handbook.md"})
	if err != nil {
		log.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	job, err = svc.Wait(wait, client, uuid.MustParse(job.ID))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.Status, job.Title)

	res, err := client.Search(ctx, postgram.SearchRequest{Query: "train tickets approval"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Results[0].Section)
	// Output:
	// done Handbook
	// Handbook › Travel
}
