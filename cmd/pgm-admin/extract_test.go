package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/transport/apierror"
)

// fakeChat is an OpenAI-compatible chat-completions server: extraction
// prompts get a fixed graph, edge-verdict prompts reject "owns".
type fakeChat struct {
	mu    sync.Mutex
	calls map[string]int // by schema name
}

func (f *fakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model          string `json:"model"`
		Messages       []struct{ Role, Content string }
		ResponseFormat struct {
			JSONSchema struct {
				Name string `json:"name"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/chat/completions" || json.Unmarshal(body, &req) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	name := req.ResponseFormat.JSONSchema.Name
	f.mu.Lock()
	f.calls[name+"/"+req.Model]++
	f.mu.Unlock()
	prompt := ""
	for _, m := range req.Messages {
		prompt += m.Content
	}
	var answer any
	switch name {
	case "graph_extraction":
		answer = map[string]any{
			"entities": []map[string]any{{"name": "Vega", "type": "project"}, {"name": "Nadia", "type": "person"}},
			"relations": []map[string]any{
				{"source": "SELF", "target": "Vega", "relation": "part_of", "confidence": 0.9},
				{"source": "Nadia", "target": "Vega", "relation": "owns", "confidence": 0.8},
			},
		}
		if !strings.Contains(prompt, "Vega planning") {
			answer = map[string]any{"entities": []any{}, "relations": []any{}}
		}
	case "edge_verdict":
		valid := !strings.Contains(prompt, "—owns→")
		answer = map[string]any{"valid": valid, "confidence": 0.9, "reason": fmt.Sprintf("judged valid=%v", valid)}
	default:
		http.Error(w, `{"error":{"message":"unknown schema"}}`, http.StatusBadRequest)
		return
	}
	content, _ := json.Marshal(answer)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "chatcmpl-test", "object": "chat.completion", "model": req.Model,
		"choices": []map[string]any{{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": string(content)}}},
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
	})
}

// TestExtractionAdmin drives reextract, improve-graph and validate-edges
// with the extraction model configured through the environment, as an
// operator would, against an OpenAI-compatible server.
func TestExtractionAdmin(t *testing.T) {
	t.Parallel()
	chat := &fakeChat{calls: map[string]int{}}
	srv := httptest.NewServer(chat)
	defer srv.Close()
	vars := map[string]string{"POSTGRAM_DATA_DIR": t.TempDir(), "LOG_LEVEL": "error",
		"EXTRACTION_ENABLED": "true", "EXTRACTION_PROVIDER": "openai-compatible",
		"EXTRACTION_BASE_URL": srv.URL + "/v1", "EXTRACTION_MODEL": "local-model"}
	mustAdmin(t, vars, "", "migrate")
	ctx := context.Background()
	// The server's worker, in process: the same configuration.
	c, st := serverClient(t, vars, postgramtest.NewEmbedder(32))
	store := func(typ postgram.EntityType, content string) uuid.UUID {
		e, err := c.Store(ctx, postgram.StoreInput{Type: typ, Content: content})
		if err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	store(postgram.TypeProject, "Vega")
	nadia := store(postgram.TypePerson, "Nadia")
	doc := store(postgram.TypeDocument, "Vega planning: Nadia owns the roadmap.")
	quiet := store(postgram.TypeDocument, "nothing to see here")
	if _, err := postgramtest.Admin(t, c).EnrichPending(ctx); err != nil {
		t.Fatal(err)
	}
	x, err := postgramtest.Admin(t, c).ExtractPending(ctx)
	if err != nil || x.Edges != 2 || x.Failed != 0 {
		t.Fatalf("extraction through the configured model: %v %+v", err, x)
	}
	if n := edgeCount(t, vars, postgram.EdgeSourceLLM); n != 2 {
		t.Fatalf("%d llm edges, want 2", n)
	}

	// reextract: scope required; dry run lists; --clean-edges needs --yes.
	if _, errs, code := admin(t, vars, "", "reextract"); code != apierror.ExitUsage || !strings.Contains(errs, "--all") {
		t.Fatalf("reextract without scope: %d %s", code, errs)
	}
	out := mustAdmin(t, vars, "", "reextract", "--type", "document", "--no-edges-only", "--dry-run")
	if !strings.Contains(out, quiet.String()) || strings.Contains(out, doc.String()) || !strings.Contains(out, "would queue 1 entities") {
		t.Fatalf("reextract --no-edges-only --dry-run:\n%s", out)
	}
	if _, errs, code := admin(t, vars, "", "reextract", "--id", doc.String(), "--clean-edges"); code != apierror.ExitUsage || !strings.Contains(errs, "--yes") {
		t.Fatalf("--clean-edges without --yes: %d %s", code, errs)
	}
	out = mustAdmin(t, vars, "", "reextract", "--id", doc.String(), "--clean-edges", "--yes")
	if !strings.Contains(out, "queued 1 entities") || !strings.Contains(out, "deleted 2 llm-extraction edges") {
		t.Fatalf("reextract --clean-edges:\n%s", out)
	}
	if n := edgeCount(t, vars, postgram.EdgeSourceLLM); n != 0 {
		t.Fatalf("--clean-edges left %d edges", n)
	}
	if x, err := postgramtest.Admin(t, c).ExtractPending(ctx); err != nil || x.Entities != 1 || x.Edges != 2 {
		t.Fatalf("worker after reextract: %v %+v", err, x)
	}

	// improve-graph stores the model per row; the worker uses it, then clears it.
	if _, errs, code := admin(t, vars, "", "improve-graph", "--all"); code != apierror.ExitUsage || !strings.Contains(errs, "--provider") {
		t.Fatalf("improve-graph without a model: %d %s", code, errs)
	}
	out = mustAdmin(t, vars, "", "improve-graph", "--id", doc.String(), "--model", "bigger-model")
	if !strings.Contains(out, "queued 1 entities for extraction with bigger-model") {
		t.Fatalf("improve-graph:\n%s", out)
	}
	if x, err := postgramtest.Admin(t, c).ExtractPending(ctx); err != nil || x.Entities != 1 {
		t.Fatalf("worker after improve-graph: %v %+v", err, x)
	}
	chat.mu.Lock()
	bigger := chat.calls["graph_extraction/bigger-model"]
	chat.mu.Unlock()
	if bigger != 1 {
		t.Fatalf("the override model was asked %d times: %v", bigger, chat.calls)
	}
	var rows struct {
		Rows []map[string]any `json:"rows"`
	}
	out = mustAdmin(t, vars, "", "sql", "--json", "SELECT count(*) AS n FROM edges WHERE model = 'bigger-model'")
	if err := json.Unmarshal([]byte(out), &rows); err != nil || rows.Rows[0]["n"].(float64) != 2 {
		t.Fatalf("edges by the override model: %v %s", err, out)
	}

	// validate-edges: removing needs --yes; the judge rejects "owns"; a
	// manual edge is never judged.
	if _, err := c.Link(ctx, postgram.LinkInput{SourceID: nadia, TargetID: doc, Relation: "owns"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, errs, code := admin(t, vars, "", "validate-edges"); code != apierror.ExitUsage || !strings.Contains(errs, "--yes") {
		t.Fatalf("validate-edges without --yes: %d %s", code, errs)
	}
	out = mustAdmin(t, vars, "", "validate-edges", "--dry-run")
	if !strings.Contains(out, "judged 2 edges: kept 1, would remove 1") {
		t.Fatalf("validate-edges --dry-run:\n%s", out)
	}
	out = mustAdmin(t, vars, "", "validate-edges", "--yes")
	if !strings.Contains(out, "judged 2 edges: kept 1, removed 1") {
		t.Fatalf("validate-edges:\n%s", out)
	}
	if n := edgeCount(t, vars, postgram.EdgeSourceLLM); n != 1 {
		t.Fatalf("%d llm edges after validation, want 1", n)
	}
	if n := edgeCount(t, vars, postgram.EdgeSourceManual); n != 1 {
		t.Fatalf("the manual edge was touched: %d", n)
	}
	out = mustAdmin(t, vars, "", "validate-edges", "--yes")
	if !strings.Contains(out, "judged 0 edges") || !strings.Contains(out, "1 skipped") {
		t.Fatalf("validate-edges again within the window:\n%s", out)
	}

	// Without EXTRACTION_ENABLED validate-edges says what to configure.
	off := map[string]string{"POSTGRAM_DATA_DIR": vars["POSTGRAM_DATA_DIR"], "LOG_LEVEL": "error"}
	if _, errs, code := admin(t, off, "", "validate-edges", "--dry-run"); code != apierror.ExitUsage || !strings.Contains(errs, "EXTRACTION_ENABLED") {
		t.Fatalf("validate-edges without a model: %d %s", code, errs)
	}
	// A bad variable names itself.
	bad := map[string]string{"POSTGRAM_DATA_DIR": vars["POSTGRAM_DATA_DIR"], "EXTRACTION_MEMORY_MODE": "everything"}
	if _, errs, code := admin(t, bad, "", "reextract", "--all"); code != apierror.ExitUsage || !strings.Contains(errs, "EXTRACTION_MEMORY_MODE") {
		t.Fatalf("bad EXTRACTION_MEMORY_MODE: %d %s", code, errs)
	}
}
