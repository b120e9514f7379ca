package rest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
)

type searchResult struct {
	Entity       map[string]any `json:"entity"`
	ChunkContent string         `json:"chunk_content"`
	Similarity   *float64       `json:"similarity"`
	Score        float64        `json:"score"`
	RecencyScore float64        `json:"recency_score"`
	Edges        map[string]any `json:"edges"`
	Related      []any          `json:"related"`
}

type searchResponse struct {
	Results  []searchResult   `json:"results"`
	Degraded []map[string]any `json:"degraded"`
	Stats    map[string]any   `json:"stats"`
	Raw      map[string]any   `json:"-"`
}

func (e *env) search(token string, body any) (searchResponse, *response) {
	e.t.Helper()
	r := e.do("POST", "/api/search", token, body).want(http.StatusOK)
	var out searchResponse
	r.decode(&out)
	out.Raw = r.object()
	return out, r
}

func TestSearch(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pg := e.store(e.admin, map[string]any{"type": "memory", "content": "Decision PGM-42: we use pgvector HNSW indexes for embeddings.", "tags": []string{"decision"}})
	e.store(e.admin, map[string]any{"type": "document", "content": "The cafeteria serves lasagna on Tuesdays."})
	task := e.store(e.admin, map[string]any{"type": "task", "content": "Tune pgvector HNSW ef_search for recall."})
	e.enrich()

	out, r := e.search(e.admin, map[string]any{"query": "pgvector HNSW"})
	if len(out.Results) != 2 {
		t.Fatalf("results: %s", r.Body)
	}
	for _, k := range []string{"results", "stats"} {
		if _, ok := out.Raw[k]; !ok {
			t.Errorf("search response lacks %q", k)
		}
	}
	if _, ok := out.Raw["degraded"]; ok {
		t.Errorf("degraded present on a healthy search: %s", r.Body)
	}
	res := out.Results[0]
	checkEntityShape(t, res.Entity)
	if res.ChunkContent == "" || res.Similarity == nil || res.Score <= 0 || res.RecencyScore <= 0 {
		t.Errorf("result fields: %+v", res)
	}
	raw := out.Raw["results"].([]any)[0].(map[string]any)
	for _, k := range []string{"entity", "chunk_content", "similarity", "score", "recency_score"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("result lacks %q: %v", k, keysOf(raw))
		}
	}
	if res.Entity["content"] == "" {
		t.Error("include_content defaults to true")
	}
	for _, k := range []string{"terms", "keyword_probe", "vector_plan"} {
		if _, ok := out.Stats[k]; !ok {
			t.Errorf("stats lacks %q: %v", k, out.Stats)
		}
	}

	// include_content=false: only the matched chunk.
	out, _ = e.search(e.admin, map[string]any{"query": "pgvector HNSW", "include_content": false})
	if len(out.Results) != 2 {
		t.Fatalf("include_content=false results %d", len(out.Results))
	}
	for _, r := range out.Results {
		if r.Entity["content"] != "" || r.ChunkContent == "" {
			t.Errorf("include_content=false: content %q chunk %q", r.Entity["content"], r.ChunkContent)
		}
	}

	// type as a string and as an array; tags; limit.
	out, _ = e.search(e.admin, map[string]any{"query": "pgvector HNSW", "type": "task"})
	if len(out.Results) != 1 || out.Results[0].Entity["id"] != task.ID.String() {
		t.Errorf("type string: %+v", out.Results)
	}
	out, _ = e.search(e.admin, map[string]any{"query": "pgvector HNSW", "type": []string{"memory", "document"}})
	if len(out.Results) != 1 || out.Results[0].Entity["id"] != pg.ID.String() {
		t.Errorf("type array: %+v", out.Results)
	}
	out, _ = e.search(e.admin, map[string]any{"query": "pgvector HNSW", "tags": []string{"decision"}})
	if len(out.Results) != 1 || out.Results[0].Entity["id"] != pg.ID.String() {
		t.Errorf("tags: %+v", out.Results)
	}
	out, _ = e.search(e.admin, map[string]any{"query": "pgvector HNSW", "limit": 1, "threshold": 0.1,
		"recency_weight": 0.5, "expand_graph": true, "include_archived": true, "strategy": "exact",
		"visibility": "shared", "owner": "", "memory_role": ""})
	if len(out.Results) != 1 {
		t.Errorf("limit 1: %d results", len(out.Results))
	}

	// Results is [] (not null) when nothing matches.
	_, r = e.search(e.admin, map[string]any{"query": "zeppelin"})
	if !strings.Contains(string(r.Body), `"results":[]`) {
		t.Errorf("no match: %s", r.Body)
	}

	// Library validation surfaces as VALIDATION naming the field.
	e.do("POST", "/api/search", e.admin, map[string]any{"query": "  "}).wantError(http.StatusBadRequest, apierror.Validation, "query", "")
	e.do("POST", "/api/search", e.admin, map[string]any{"query": "x", "limit": 1000}).wantError(http.StatusBadRequest, apierror.Validation, "limit", "")
	e.do("POST", "/api/search", e.admin, map[string]any{"query": "x", "threshold": 2}).wantError(http.StatusBadRequest, apierror.Validation, "threshold", "")
	e.do("POST", "/api/search", e.admin, map[string]any{"query": "x", "strategy": "psychic"}).wantError(http.StatusBadRequest, apierror.Validation, "strategy", "")
	e.do("POST", "/api/search", e.admin, map[string]any{"query": "x", "type": "gizmo"}).wantError(http.StatusBadRequest, apierror.Validation, "type", "")
	e.do("POST", "/api/search", e.admin, map[string]any{"query": "x", "type": 3}).wantError(http.StatusBadRequest, apierror.Validation, "type", "string or an array")
	e.do("POST", "/api/search", e.admin, map[string]any{"query": "x", "visibility": []any{"work", 1}}).wantError(http.StatusBadRequest, apierror.Validation, "visibility", "")
	e.do("POST", "/api/search", e.admin, map[string]any{"query": "x", "include_content": "no"}).wantError(http.StatusBadRequest, apierror.Validation, "include_content", "boolean")
}

func TestSearchDegraded(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.store(e.admin, map[string]any{"type": "memory", "content": "The ABC-1234 incident was caused by a full disk."})
	e.emb.Fail(fmt.Errorf("provider down: %w", postgram.ErrUnavailable))

	out, r := e.search(e.admin, map[string]any{"query": "ABC-1234 incident"})
	if len(out.Results) != 1 {
		t.Fatalf("keyword branch should still answer: %s", r.Body)
	}
	if len(out.Degraded) != 1 || out.Degraded[0]["component"] != "vector" || !strings.Contains(out.Degraded[0]["reason"].(string), "provider down") {
		t.Errorf("degraded: %v", out.Degraded)
	}
	if out.Results[0].Similarity != nil {
		t.Errorf("similarity without vectors: %v", *out.Results[0].Similarity)
	}

	// Health reports the failing provider as degraded with 200, by its
	// state only: the open endpoint never shows the provider's text,
	// which can echo user content.
	hr := e.do("GET", "/health", "", nil).want(http.StatusOK)
	h := hr.object()
	emb := h["embedding"].(map[string]any)
	if h["status"] != "degraded" || emb["state"] != "failing" {
		t.Errorf("health: %v", h)
	}
	if _, ok := emb["error"]; ok || strings.Contains(string(hr.Body), "provider down") {
		t.Errorf("the open health endpoint shows the provider's error text: %s", hr.Body)
	}
}

// TestSearchExplainAndRanking: explain adds each result's components for
// both rankings; an unknown ranking is a validation error naming the field.
func TestSearchExplainAndRanking(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.store(e.admin, map[string]any{"type": "project", "content": "Project Lighthouse is the data team's retention work."})
	e.store(e.admin, map[string]any{"type": "memory", "content": "Lighthouse demos happen on Thursdays and dashboards get deployed."})
	e.enrich()

	out, r := e.search(e.admin, map[string]any{"query": "Lighthuose dashboard", "explain": true})
	if len(out.Results) == 0 {
		t.Fatalf("no results: %s", r.Body)
	}
	if out.Stats["ranking"] != "v2" {
		t.Errorf("stats.ranking = %v, want v2", out.Stats["ranking"])
	}
	x, _ := out.Stats["expansions"].(map[string]any)
	if fmt.Sprint(x["Lighthuose"]) != "[lighthouse (typo)]" || fmt.Sprint(x["dashboard"]) != "[dashboards (inflection)]" {
		t.Errorf("stats.expansions = %v", out.Stats["expansions"])
	}
	raw := out.Raw["results"].([]any)[0].(map[string]any)
	ex, ok := raw["explain"].(map[string]any)
	if !ok || ex["ranking"] != "v2" || ex["terms"] == nil || ex["keyword_part"] == nil {
		t.Fatalf("explain of the first result: %v", raw["explain"])
	}
	if !strings.Contains(fmt.Sprint(ex["terms"]), "lighthouse (typo") {
		t.Errorf("explain.terms does not show the typo correction: %v", ex["terms"])
	}

	out, r = e.search(e.admin, map[string]any{"query": "Lighthouse", "explain": true, "ranking": "seed"})
	raw = out.Raw["results"].([]any)[0].(map[string]any)
	if ex, _ := raw["explain"].(map[string]any); ex["ranking"] != "seed" || out.Stats["ranking"] != "seed" {
		t.Errorf("seed ranking explain: %s", r.Body)
	}
	// Without explain, no explanation.
	out, _ = e.search(e.admin, map[string]any{"query": "Lighthouse"})
	if _, has := out.Raw["results"].([]any)[0].(map[string]any)["explain"]; has {
		t.Error("explain present without explain: true")
	}
	e.do("POST", "/api/search", e.admin, map[string]any{"query": "x", "ranking": "best"}).wantError(http.StatusBadRequest, apierror.Validation, "ranking", "best")
}
