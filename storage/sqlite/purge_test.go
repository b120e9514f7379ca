package sqlite_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/storagetest"
)

// TestPurgeLeavesNoTrace purges a document whose content (and an earlier
// version of it) held a unique word and greps the database file and its
// WAL for the word.
func TestPurgeLeavesNoTrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "postgram.db")
	st := openAt(t, path)
	c := newClient(t, st, postgramtest.NewEmbedder(storagetest.Dims))
	ctx := t.Context()
	id := storagetest.PurgeFixture(t, c)
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	// A search loads the in-memory indexes with the content.
	if r, err := c.Search(ctx, postgram.SearchRequest{Query: storagetest.PurgeCanary}); err != nil || len(r.Results) == 0 {
		t.Fatalf("search before purge: %+v %v", r, err)
	}
	canary := []byte(storagetest.PurgeCanary)
	found := func() []string {
		var in []string
		for _, f := range []string{path, path + "-wal", path + "-journal"} {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			if bytes.Contains(b, canary) {
				in = append(in, filepath.Base(f))
			}
		}
		return in
	}
	if len(found()) == 0 {
		t.Fatal("the canary is not in the files before the purge: the test proves nothing")
	}
	res, err := postgramtest.Admin(t, c).Purge(ctx, postgram.PurgeRequest{IDs: []uuid.UUID{id}})
	if err != nil || res.Entities != 1 || !res.Scrubbed {
		t.Fatalf("purge: %+v %v", res, err)
	}
	if in := found(); len(in) != 0 {
		t.Fatalf("the purged content is still in %v", in)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() != 0 {
		t.Fatalf("the WAL holds %d bytes after the purge", fi.Size())
	}
	// The store still works: writes, search.
	e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "after the purge"})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Search(ctx, postgram.SearchRequest{Query: "purge"}); err != nil || len(r.Results) != 1 || r.Results[0].Entity.ID != e.ID {
		t.Fatalf("search after purge: %+v %v", r, err)
	}
	if r, err := c.Search(ctx, postgram.SearchRequest{Query: storagetest.PurgeCanary}); err != nil || len(r.Results) != 0 {
		t.Fatalf("the purged content is still found: %+v %v", r, err)
	}
}
