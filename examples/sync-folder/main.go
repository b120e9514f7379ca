// Sync-folder shows Markdown folder sync (what `pgm sync` does) from Go:
// syncproto.Sync walks a folder, diffs its SHA-256 manifest with the store,
// uploads new and changed files in batches and finalizes (files that left
// the folder are archived). Here *postgram.Sync, the client's sync API, is
// the transport; `pgm sync` uses the same protocol over HTTP.
//
// The example writes three notes into a temporary folder, syncs them,
// changes one, deletes one, syncs again and searches after each step. It
// runs on the embedded SQLite store in a temporary directory with the
// offline hashing embedder, so it needs no service and no network:
//
//	go run ./examples/sync-folder
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/hashing"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/syncproto"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "postgram-sync-folder-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	store, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "postgram.db")})
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	client, err := postgram.New(ctx, postgram.Config{Store: store, Embedder: hashing.New(256)})
	if err != nil {
		return fmt.Errorf("new client: %w", err)
	}

	notes := filepath.Join(dir, "notes")
	write := func(name, content string) error {
		p := filepath.Join(notes, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(content), 0o644)
	}
	for name, content := range map[string]string{
		"garden.md":        "# Garden\n\nPlant the tomatoes after the last frost in May.\n",
		"travel/lisbon.md": "# Lisbon\n\nTram 28 is crowded; walk up to the castle early.\n",
		"recipes/ramen.md": "# Ramen\n\nSimmer the broth for six hours with kombu.\n",
	} {
		if err := write(name, content); err != nil {
			return err
		}
	}

	sync := func() error {
		sum, err := syncproto.Sync(ctx, client.Sync(), notes, syncproto.Options{Repo: "notes"})
		if err != nil {
			return fmt.Errorf("sync: %w", err)
		}
		fmt.Fprintf(out, "sync %s: %d files, created=%d updated=%d unchanged=%d deleted=%d\n",
			sum.Repo, sum.Files, sum.Created, sum.Updated, sum.Unchanged, sum.Deleted)
		return nil
	}
	search := func(query string) error {
		res, err := client.Search(ctx, postgram.SearchRequest{Query: query, Limit: 3})
		if err != nil {
			return fmt.Errorf("search: %w", err)
		}
		fmt.Fprintf(out, "  search %q: %d result(s)\n", query, len(res.Results))
		for _, r := range res.Results {
			// Synced documents carry their repo, path, title and sha in metadata.
			fmt.Fprintf(out, "    - %s %v: %q\n", r.Entity.Type, r.Entity.Metadata["path"], r.Entity.Content)
		}
		return nil
	}

	if err := sync(); err != nil {
		return err
	}
	if err := search("tomatoes"); err != nil {
		return err
	}

	// Change one note, delete another, and sync again.
	if err := write("garden.md", "# Garden\n\nPlant the tomatoes and basil after the last frost in May.\n"); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(notes, "travel", "lisbon.md")); err != nil {
		return err
	}
	fmt.Fprintln(out, "changed garden.md, deleted travel/lisbon.md")
	if err := sync(); err != nil {
		return err
	}
	if err := search("basil"); err != nil {
		return err
	}
	if err := search("Lisbon tram"); err != nil { // archived: no longer found
		return err
	}

	// The server's view of the folder: one row per file ever synced.
	status, err := client.Sync().Status(ctx, "notes")
	if err != nil {
		return fmt.Errorf("sync status: %w", err)
	}
	for _, f := range status.Files {
		fmt.Fprintf(out, "status %-18s %s\n", f.Path, f.SyncStatus)
	}
	return nil
}
