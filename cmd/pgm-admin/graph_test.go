package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/transport/apierror"
)

// TestGraphAdmin runs link-neighbors and prune-edges against the embedded
// store, embedded beforehand as the server's worker would.
func TestGraphAdmin(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"POSTGRAM_DATA_DIR": t.TempDir(), "LOG_LEVEL": "error"}
	mustAdmin(t, vars, "", "migrate")
	ctx := context.Background()
	c, st := serverClient(t, vars, postgramtest.NewEmbedder(64))
	store := func(typ postgram.EntityType, content string) uuid.UUID {
		e, err := c.Store(ctx, postgram.StoreInput{Type: typ, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	a := store(postgram.TypeDocument, "walrus colony migration along the arctic coast in early spring")
	b := store(postgram.TypeDocument, "walrus colony migration along the arctic coast in late spring")
	m := store(postgram.TypeMemory, "walrus colony migration along the arctic coast in spring")
	far := store(postgram.TypeDocument, "quarterly budget spreadsheet for the finance team")
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	// An LLM edge of low confidence and a manual one, for prune-edges.
	now := time.Now().UTC()
	origin := far
	if _, err := st.UpsertEdges(ctx, c.Workspace(), []postgram.Edge{{ID: uuid.New(), SourceID: far, TargetID: a, Relation: "cites",
		Confidence: 0.3, Source: postgram.EdgeSourceLLM, Metadata: map[string]any{}, OriginID: &origin, CreatedAt: now, UpdatedAt: now}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Link(ctx, postgram.LinkInput{SourceID: far, TargetID: b, Relation: "cites", Confidence: ptr(0.2)}); err != nil {
		t.Fatal(err)
	}
	st.Close()

	if _, errs, code := admin(t, vars, "", "link-neighbors"); code != apierror.ExitUsage || !strings.Contains(errs, "--all") {
		t.Fatalf("link-neighbors without scope: %d %s", code, errs)
	}
	out := mustAdmin(t, vars, "", "link-neighbors", "--type", "document", "--min-similarity", "0.5", "--dry-run")
	if !strings.Contains(out, a.String()) || !strings.Contains(out, "would link 2 with 4 edges") {
		t.Fatalf("dry run:\n%s", out)
	}
	if n := edgeCount(t, vars, "semantic-neighbor"); n != 0 {
		t.Fatalf("dry run wrote %d edges", n)
	}
	out = mustAdmin(t, vars, "", "link-neighbors", "--all", "--min-similarity", "0.5")
	if !strings.Contains(out, "4 entities: linked") {
		t.Fatalf("link-neighbors --all:\n%s", out)
	}
	first := edgeCount(t, vars, "semantic-neighbor")
	if first == 0 {
		t.Fatalf("no neighbour edges")
	}
	mustAdmin(t, vars, "", "link-neighbors", "--all", "--min-similarity", "0.5")
	if again := edgeCount(t, vars, "semantic-neighbor"); again != first {
		t.Fatalf("re-run changed the neighbour edges: %d then %d", first, again)
	}
	var js struct {
		EntityID  uuid.UUID               `json:"entity_id"`
		Neighbors []postgram.NeighborLink `json:"neighbors"`
	}
	line := strings.SplitN(mustAdmin(t, vars, "", "--json", "link-neighbors", "--id", m.String(), "--min-similarity", "0.5", "--dry-run"), "\n", 2)[0]
	if err := json.Unmarshal([]byte(line), &js); err != nil || js.EntityID != m {
		t.Fatalf("--json row %q: %v", line, err)
	}

	// prune-edges: --yes needed; only LLM edges by default.
	if _, errs, code := admin(t, vars, "", "prune-edges", "--below", "0.5"); code != apierror.ExitUsage || !strings.Contains(errs, "--yes") {
		t.Fatalf("prune without --yes: %d %s", code, errs)
	}
	if out := mustAdmin(t, vars, "", "prune-edges", "--below", "0.5", "--dry-run"); !strings.Contains(out, "would delete 1 edges") {
		t.Fatalf("prune dry run:\n%s", out)
	}
	if out := mustAdmin(t, vars, "", "prune-edges", "--below", "0.5", "--yes"); !strings.Contains(out, "deleted 1 edges") {
		t.Fatalf("prune:\n%s", out)
	}
	if edgeCount(t, vars, "llm-extraction") != 0 || edgeCount(t, vars, "manual") != 1 {
		t.Fatalf("prune touched the wrong edges")
	}
	if _, _, code := admin(t, vars, "", "prune-edges", "--below", "2", "--yes"); code != apierror.ExitUsage {
		t.Fatalf("prune --below 2: exit %d", code)
	}
}

func edgeCount(t *testing.T, vars map[string]string, source string) int {
	t.Helper()
	var rows struct {
		Rows []map[string]any `json:"rows"`
	}
	out := mustAdmin(t, vars, "", "sql", "--json", "SELECT count(*) AS n FROM edges WHERE source = '"+source+"'")
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatal(err)
	}
	return int(rows.Rows[0]["n"].(float64))
}

func ptr[T any](v T) *T { return &v }
