package main

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
)

// keepGroomer promotes every session context it sees and reviews every
// durable memory as archive.
type keepGroomer struct{}

func (keepGroomer) PromoteSessionContext(_ context.Context, c llm.SessionCandidate) (llm.PromotionDecision, error) {
	return llm.PromotionDecision{Promote: true, Content: "Durable: " + c.Content, Reason: "useful"}, nil
}

func (keepGroomer) ReviewDurable(context.Context, llm.DurableCandidate) (llm.DurableReview, error) {
	return llm.DurableReview{Outcome: llm.OutcomeArchive, Reason: "stale"}, nil
}

func (keepGroomer) RewriteDurable(context.Context, llm.DurableCandidate, string) (string, error) {
	return "", nil
}

func TestMemoryAdmin(t *testing.T) {
	// Not parallel: it swaps the package's groomer, and puts the real one
	// back (parallel tests, which run after it, use it).
	prev := groomer
	groomer = func(*app) llm.Groomer { return keepGroomer{} }
	t.Cleanup(func() { groomer = prev })
	vars := map[string]string{"POSTGRAM_DATA_DIR": t.TempDir(), "LOG_LEVEL": "error"}
	mustAdmin(t, vars, "", "migrate")
	ctx := context.Background()
	c, st := serverClient(t, vars, nil)
	for _, client := range []string{"a", "b"} {
		v := postgramtest.Admin(t, c).As(postgram.Principal{ClientID: client, Scopes: postgram.AllScopes})
		if _, err := v.StoreSessionContext(ctx, postgram.SessionContextInput{Content: client + " decided X", Topic: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	_, errs, code := admin(t, vars, "", "memory", "groom", "--all-clients", "--older-than", "0d")
	if code != 2 || !strings.Contains(errs, "--yes") {
		t.Fatalf("groom without --yes: %d %s", code, errs)
	}
	_, errs, code = admin(t, vars, "", "memory", "groom", "--older-than", "0d", "--dry-run")
	if code != 2 || !strings.Contains(errs, "--all-clients") {
		t.Fatalf("groom without a scope: %d %s", code, errs)
	}
	_, errs, code = admin(t, vars, "", "memory", "groom", "--all-clients", "--older-than", "7x", "--dry-run")
	if code != 2 || !strings.Contains(errs, "older_than") {
		t.Fatalf("groom 7x: %d %s", code, errs)
	}
	out := mustAdmin(t, vars, "", "--json", "memory", "groom", "--all-clients", "--older-than", "0d", "--dry-run")
	var res postgram.GroomResult
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Eligible != 2 || len(res.Scopes) != 2 || res.Archived != 0 {
		t.Fatalf("dry run: %v %s", err, out)
	}
	out = mustAdmin(t, vars, "", "memory", "groom", "--client-id", "a", "--older-than", "0d", "--mode", "promote", "--yes")
	if !strings.Contains(out, "1 eligible, 1 archived, 1 promoted") {
		t.Fatalf("promote a: %s", out)
	}
	out = mustAdmin(t, vars, "", "--json", "memory", "groom", "--all-clients", "--older-than", "0d", "--mode", "archive", "--yes")
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Eligible != 1 || res.Archived != 1 || res.Items[0].ClientID != "b" {
		t.Fatalf("archive all: %v %s", err, out)
	}
	// Durable grooming: the promoted memory (durable, fresh) is reviewed with 0d.
	out = mustAdmin(t, vars, "", "memory", "groom-durable", "--older-than", "0d", "--dry-run")
	if !strings.Contains(out, "1 eligible, 0 archived") {
		t.Fatalf("groom-durable dry run: %s", out)
	}
	out = mustAdmin(t, vars, "", "memory", "groom-durable", "--older-than", "0d", "--yes")
	if !strings.Contains(out, "1 marked") {
		t.Fatalf("groom-durable mark: %s", out)
	}
	out = mustAdmin(t, vars, "", "memory", "apply-durable-grooming", "--dry-run")
	if !strings.Contains(out, "1 eligible, 0 archived") {
		t.Fatalf("apply dry run: %s", out)
	}
	out = mustAdmin(t, vars, "", "memory", "apply-durable-grooming", "--yes")
	if !strings.Contains(out, "1 eligible, 1 archived") {
		t.Fatalf("apply: %s", out)
	}
}
