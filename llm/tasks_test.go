package llm

import (
	"github.com/postgram-go/postgram/driver"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

// Compile-time checks that the LLM tasks implement the interfaces the
// library calls.
var (
	_ Groomer   = (*ModelGroomer)(nil)
	_ EdgeJudge = (*ModelJudge)(nil)
)

// taskLLM answers GenerateJSON with canned answers, in order (the
// last one repeats), and records every request.
type taskLLM struct {
	mu      sync.Mutex
	answers []taskScript
	reqs    []Request
}

type taskScript struct {
	raw string
	err error
}

func taskLLMAnswering(raw ...string) *taskLLM {
	l := &taskLLM{}
	for _, r := range raw {
		l.answers = append(l.answers, taskScript{raw: r})
	}
	return l
}

func taskLLMFailing(err error) *taskLLM { return &taskLLM{answers: []taskScript{{err: err}}} }

func (l *taskLLM) GenerateJSON(_ context.Context, req Request) (json.RawMessage, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs = append(l.reqs, req)
	if len(l.answers) == 0 {
		return nil, fmt.Errorf("%w: no scripted answer", driver.ErrLLMFailed)
	}
	a := l.answers[0]
	if len(l.answers) > 1 {
		l.answers = l.answers[1:]
	}
	if a.err != nil {
		return nil, a.err
	}
	return json.RawMessage(a.raw), nil
}

func (l *taskLLM) Info() Info { return Info{Provider: "scripted", Model: "canned-1"} }

func (l *taskLLM) requests() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.reqs)
}

func (l *taskLLM) lastRequest(t *testing.T) Request {
	t.Helper()
	reqs := l.requests()
	if len(reqs) == 0 {
		t.Fatal("the LLM was not asked")
	}
	return reqs[len(reqs)-1]
}

// wantTaskLLMFailed checks that err wraps ErrLLMFailed, and only it, and
// names field.
func wantTaskLLMFailed(t *testing.T, err error, field string) {
	t.Helper()
	if !errors.Is(err, driver.ErrLLMFailed) {
		t.Fatalf("err = %v; want one wrapping ErrLLMFailed", err)
	}
	if errors.Is(err, driver.ErrInvalidArgument) {
		t.Errorf("err = %v also wraps ErrInvalidArgument; every error wraps exactly one sentinel", err)
	}
	if !strings.Contains(err.Error(), field) {
		t.Errorf("err = %q; want it to name %q", err, field)
	}
}

var (
	taskSession = SessionCandidate{ID: uuid.New(), Content: "User prefers tabs over spaces in Go code. Also: build is running.",
		Topic: "editor setup", SessionID: "s-1", Tags: []string{"prefs"}, UpdatedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	taskDurable = DurableCandidate{ID: uuid.New(), Content: "We just moved the API to port 8081 yesterday.",
		Tags: []string{"infra"}, Metadata: map[string]any{"topic": "api"}, UpdatedAt: time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)}
	taskClaim = EdgeClaim{Relation: "assigned_to", SourceName: "Ship v2", SourceType: driver.TypeTask,
		TargetName: "Ada", TargetType: driver.TypePerson, Content: "Ada will ship v2 by Friday."}
)

func TestLLMGroomerPromote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
		want PromotionDecision
	}{
		{"promote", `{"promote": true, "content": "  The user prefers tabs over spaces in Go code.\n", "tags": [" go ", "style", "go"], "reason": "A stable preference."}`,
			PromotionDecision{Promote: true, Content: "The user prefers tabs over spaces in Go code.", Tags: []string{"go", "style"}, Reason: "A stable preference."}},
		{"promote without tags", `{"promote": true, "content": "Deploys go through Argo CD.", "tags": [], "reason": ""}`,
			PromotionDecision{Promote: true, Content: "Deploys go through Argo CD.", Tags: []string{}}},
		{"decline drops content and tags", `{"promote": false, "content": "leftover", "tags": ["x"], "reason": "Only status updates."}`,
			PromotionDecision{Reason: "Only status updates."}},
		{"decline with empty content", `{"promote": false, "content": "", "tags": [], "reason": "Chatter."}`,
			PromotionDecision{Reason: "Chatter."}},
		{"unknown fields ignored", `{"promote": false, "content": "", "tags": [], "reason": "r", "extra": 1}`,
			PromotionDecision{Reason: "r"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			llm := taskLLMAnswering(tt.raw)
			got, err := NewGroomer(llm).PromoteSessionContext(t.Context(), taskSession)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("decision (-want +got):\n%s", d)
			}
			req := llm.lastRequest(t)
			for _, s := range []string{taskSession.Content, "Topic: editor setup", "Tags: prefs", "2026-03-01"} {
				if !strings.Contains(req.Prompt, s) {
					t.Errorf("prompt lacks %q:\n%s", s, req.Prompt)
				}
			}
			if strings.Contains(req.Prompt, "s-1") {
				t.Errorf("prompt shows the session id, inviting references to the session:\n%s", req.Prompt)
			}
		})
	}
}

func TestLLMGroomerPromoteRejects(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, raw, field string }{
		{"malformed JSON", `{"promote": true,`, "memory_promotion"},
		{"not an object", `["promote"]`, "JSON object"},
		{"empty", ``, "JSON object"},
		{"missing promote", `{"content": "x", "tags": [], "reason": "r"}`, "promote is missing"},
		{"promote wrong type", `{"promote": "yes", "content": "x", "tags": [], "reason": "r"}`, "promote is not a boolean"},
		{"promote null", `{"promote": null, "content": "x", "tags": [], "reason": "r"}`, "promote is null"},
		{"missing content", `{"promote": true, "tags": [], "reason": "r"}`, "content is missing"},
		{"content wrong type", `{"promote": true, "content": 7, "tags": [], "reason": "r"}`, "content is not a string"},
		{"empty content with promote", `{"promote": true, "content": " \n ", "tags": [], "reason": "r"}`, "content"},
		{"NUL in content", `{"promote": true, "content": "a\u0000b", "tags": [], "reason": "r"}`, "content"},
		{"missing tags", `{"promote": true, "content": "x", "reason": "r"}`, "tags is missing"},
		{"tags not an array", `{"promote": true, "content": "x", "tags": "go", "reason": "r"}`, "tags is not an array"},
		{"tag not a string", `{"promote": true, "content": "x", "tags": ["go", 3], "reason": "r"}`, "tags[1] is not a string"},
		{"tag null", `{"promote": true, "content": "x", "tags": [null], "reason": "r"}`, "tags[0] is not a string"},
		{"empty tag", `{"promote": true, "content": "x", "tags": ["go", " "], "reason": "r"}`, "tags[1]"},
		{"too many tags", `{"promote": true, "content": "x", "tags": ["a","b","c","d","e","f"], "reason": "r"}`, "tags has 6 entries"},
		{"missing reason", `{"promote": false, "content": "", "tags": []}`, "reason is missing"},
		{"reason wrong type", `{"promote": false, "content": "", "tags": [], "reason": false}`, "reason is not a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewGroomer(taskLLMAnswering(tt.raw)).PromoteSessionContext(t.Context(), taskSession)
			wantTaskLLMFailed(t, err, tt.field)
		})
	}
	t.Run("content over the limit", func(t *testing.T) {
		t.Parallel()
		raw, _ := json.Marshal(map[string]any{"promote": true, "content": strings.Repeat("x", driver.MaxContentBytes+1), "tags": []string{}, "reason": "r"})
		_, err := NewGroomer(taskLLMAnswering(string(raw))).PromoteSessionContext(t.Context(), taskSession)
		wantTaskLLMFailed(t, err, "content")
	})
}

func TestLLMGroomerReview(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
		want DurableReview
	}{
		{"keep", `{"outcome": "keep", "reason": "Specific.", "suggestion": "", "superseded_by": ""}`,
			DurableReview{Outcome: OutcomeKeep, Reason: "Specific."}},
		{"needs grooming", `{"outcome": "needs_grooming", "reason": "Relative date.", "suggestion": " The API listens on port 8081. ", "superseded_by": "x"}`,
			DurableReview{Outcome: OutcomeNeedsGrooming, Reason: "Relative date.", Suggestion: "The API listens on port 8081."}},
		{"archive drops stray fields", `{"outcome": "archive", "reason": "Obsolete.", "suggestion": "something", "superseded_by": "other"}`,
			DurableReview{Outcome: OutcomeArchive, Reason: "Obsolete."}},
		{"superseded", `{"outcome": "superseded", "reason": "Reversed.", "suggestion": "", "superseded_by": "  Port   decision 2026 "}`,
			DurableReview{Outcome: OutcomeSuperseded, Reason: "Reversed.", SupersededBy: "Port decision 2026"}},
		{"superseded by unknown", `{"outcome": "superseded", "reason": "Reversed.", "suggestion": "", "superseded_by": ""}`,
			DurableReview{Outcome: OutcomeSuperseded, Reason: "Reversed."}},
		{"outcome case and space", `{"outcome": " KEEP ", "reason": "ok", "suggestion": "", "superseded_by": ""}`,
			DurableReview{Outcome: OutcomeKeep, Reason: "ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			llm := taskLLMAnswering(tt.raw)
			got, err := NewGroomer(llm).ReviewDurable(t.Context(), taskDurable)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("review (-want +got):\n%s", d)
			}
			req := llm.lastRequest(t)
			for _, s := range []string{taskDurable.Content, "Topic: api", "Tags: infra", "2025-01-02"} {
				if !strings.Contains(req.Prompt, s) {
					t.Errorf("prompt lacks %q:\n%s", s, req.Prompt)
				}
			}
		})
	}
	t.Run("over-long suggestion dropped", func(t *testing.T) {
		t.Parallel()
		raw, _ := json.Marshal(map[string]any{"outcome": "needs_grooming", "reason": "r",
			"suggestion": strings.Repeat("y", maxGroomSuggestion+1), "superseded_by": ""})
		got, err := NewGroomer(taskLLMAnswering(string(raw))).ReviewDurable(t.Context(), taskDurable)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(DurableReview{Outcome: OutcomeNeedsGrooming, Reason: "r"}, got); d != "" {
			t.Errorf("review (-want +got):\n%s", d)
		}
	})
}

func TestLLMGroomerReviewRejects(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, raw, field string }{
		{"malformed JSON", `{"outcome": "keep"`, "memory_review"},
		{"missing outcome", `{"reason": "r", "suggestion": "", "superseded_by": ""}`, "outcome is missing"},
		{"outcome wrong type", `{"outcome": 1, "reason": "r", "suggestion": "", "superseded_by": ""}`, "outcome is not a string"},
		{"outcome not in enum", `{"outcome": "delete", "reason": "r", "suggestion": "", "superseded_by": ""}`, `outcome "delete"`},
		{"outcome empty", `{"outcome": "", "reason": "r", "suggestion": "", "superseded_by": ""}`, `outcome ""`},
		{"missing reason", `{"outcome": "keep", "suggestion": "", "superseded_by": ""}`, "reason is missing"},
		{"missing suggestion", `{"outcome": "keep", "reason": "r", "superseded_by": ""}`, "suggestion is missing"},
		{"suggestion wrong type", `{"outcome": "needs_grooming", "reason": "r", "suggestion": ["a"], "superseded_by": ""}`, "suggestion is not a string"},
		{"NUL in suggestion", `{"outcome": "needs_grooming", "reason": "r", "suggestion": "a\u0000", "superseded_by": ""}`, "suggestion"},
		{"missing superseded_by", `{"outcome": "keep", "reason": "r", "suggestion": ""}`, "superseded_by is missing"},
		{"superseded_by too long", `{"outcome": "superseded", "reason": "r", "suggestion": "", "superseded_by": "` + strings.Repeat("z", 201) + `"}`, "superseded_by"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewGroomer(taskLLMAnswering(tt.raw)).ReviewDurable(t.Context(), taskDurable)
			wantTaskLLMFailed(t, err, tt.field)
		})
	}
}

func TestLLMGroomerRewrite(t *testing.T) {
	t.Parallel()
	llm := taskLLMAnswering(`{"content": "  The API listens on port 8081 (since January 2025).  "}`)
	got, err := NewGroomer(llm).RewriteDurable(t.Context(), taskDurable, "Relative date\nand first person.")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff("The API listens on port 8081 (since January 2025).", got); d != "" {
		t.Errorf("content (-want +got):\n%s", d)
	}
	req := llm.lastRequest(t)
	for _, s := range []string{taskDurable.Content, "Review's reason: Relative date and first person."} {
		if !strings.Contains(req.Prompt, s) {
			t.Errorf("prompt lacks %q:\n%s", s, req.Prompt)
		}
	}

	for _, tt := range []struct{ name, raw, field string }{
		{"malformed JSON", `content`, "memory_rewrite"},
		{"missing content", `{}`, "content is missing"},
		{"content wrong type", `{"content": {"text": "x"}}`, "content is not a string"},
		{"empty content", `{"content": "   "}`, "content"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewGroomer(taskLLMAnswering(tt.raw)).RewriteDurable(t.Context(), taskDurable, "vague")
			wantTaskLLMFailed(t, err, tt.field)
		})
	}
}

func TestLLMJudge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		raw  string
		want EdgeVerdict
	}{
		{"valid", `{"valid": true, "confidence": 0.9, "reason": " Stated. "}`, EdgeVerdict{Valid: true, Confidence: 0.9, Reason: "Stated."}},
		{"invalid", `{"valid": false, "confidence": 0, "reason": "Not mentioned."}`, EdgeVerdict{Confidence: 0, Reason: "Not mentioned."}},
		{"bounds", `{"valid": true, "confidence": 1, "reason": ""}`, EdgeVerdict{Valid: true, Confidence: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			llm := taskLLMAnswering(tt.raw)
			got, err := NewJudge(llm).JudgeEdge(t.Context(), taskClaim)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("verdict (-want +got):\n%s", d)
			}
			req := llm.lastRequest(t)
			for _, s := range []string{"Ship v2 (task) —assigned_to→ Ada (person)", taskClaim.Content} {
				if !strings.Contains(req.Prompt, s) {
					t.Errorf("prompt lacks %q:\n%s", s, req.Prompt)
				}
			}
		})
	}
}

func TestLLMJudgeRejects(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, raw, field string }{
		{"malformed JSON", `{"valid": tru}`, "edge_verdict"},
		{"missing valid", `{"confidence": 0.5, "reason": "r"}`, "valid is missing"},
		{"valid wrong type", `{"valid": "true", "confidence": 0.5, "reason": "r"}`, "valid is not a boolean"},
		{"missing confidence", `{"valid": true, "reason": "r"}`, "confidence is missing"},
		{"confidence wrong type", `{"valid": true, "confidence": "high", "reason": "r"}`, "confidence is not a number"},
		{"confidence above 1", `{"valid": true, "confidence": 1.5, "reason": "r"}`, "confidence 1.5"},
		{"confidence below 0", `{"valid": true, "confidence": -0.1, "reason": "r"}`, "confidence -0.1"},
		{"missing reason", `{"valid": true, "confidence": 0.5}`, "reason is missing"},
		{"reason null", `{"valid": true, "confidence": 0.5, "reason": null}`, "reason is null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewJudge(taskLLMAnswering(tt.raw)).JudgeEdge(t.Context(), taskClaim)
			wantTaskLLMFailed(t, err, tt.field)
		})
	}
}

// runLLMTasks calls each LLM task once with llm, returning the errors.
func runLLMTasks(ctx context.Context, llm Model) map[string]error {
	g, j := NewGroomer(llm), NewJudge(llm)
	_, perr := g.PromoteSessionContext(ctx, taskSession)
	_, verr := g.ReviewDurable(ctx, taskDurable)
	_, rerr := g.RewriteDurable(ctx, taskDurable, "vague")
	_, jerr := j.JudgeEdge(ctx, taskClaim)
	return map[string]error{"promote": perr, "review": verr, "rewrite": rerr, "judge": jerr}
}

func TestLLMTasksPassLLMErrorsThrough(t *testing.T) {
	t.Parallel()
	for _, sentinel := range []error{driver.ErrUnavailable, driver.ErrRateLimited, driver.ErrLLMFailed, context.Canceled} {
		t.Run(sentinel.Error(), func(t *testing.T) {
			t.Parallel()
			cause := fmt.Errorf("provider: %w", sentinel)
			for task, err := range runLLMTasks(t.Context(), taskLLMFailing(cause)) {
				if !errors.Is(err, sentinel) || !errors.Is(err, cause) {
					t.Errorf("%s: err = %v; want %v passed through", task, err, cause)
				}
			}
		})
	}
}

// TestLLMTasksRequests checks what every task asks: a system prompt, a
// bounded answer and a schema OpenAI strict mode accepts.
func TestLLMTasksRequests(t *testing.T) {
	t.Parallel()
	llm := taskLLMAnswering(
		`{"promote": false, "content": "", "tags": [], "reason": "r"}`,
		`{"outcome": "keep", "reason": "r", "suggestion": "", "superseded_by": ""}`,
		`{"content": "c"}`,
		`{"valid": true, "confidence": 1, "reason": "r"}`,
	)
	for task, err := range runLLMTasks(t.Context(), llm) {
		if err != nil {
			t.Errorf("%s: %v", task, err)
		}
	}
	reqs := llm.requests()
	var names []string
	nameRE := regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	for _, req := range reqs {
		names = append(names, req.SchemaName)
		if !nameRE.MatchString(req.SchemaName) {
			t.Errorf("schema name %q: want letters, digits, '_' and '-'", req.SchemaName)
		}
		if strings.TrimSpace(req.System) == "" || strings.TrimSpace(req.Prompt) == "" {
			t.Errorf("%s: empty system prompt or prompt", req.SchemaName)
		}
		if req.MaxTokens <= 0 {
			t.Errorf("%s: MaxTokens %d; want a bound", req.SchemaName, req.MaxTokens)
		}
		if _, err := json.Marshal(req.Schema); err != nil {
			t.Errorf("%s: schema is not JSON: %v", req.SchemaName, err)
		}
		checkTaskStrictSchema(t, req.SchemaName, req.Schema)
	}
	if d := cmp.Diff([]string{"memory_promotion", "memory_review", "memory_rewrite", "edge_verdict"}, names); d != "" {
		t.Errorf("schema names (-want +got):\n%s", d)
	}
	// The review's outcome enum is exactly the library's outcomes.
	outcome := reqs[1].Schema["properties"].(map[string]any)["outcome"].(map[string]any)
	if d := cmp.Diff([]any{OutcomeKeep, OutcomeNeedsGrooming, OutcomeArchive, OutcomeSuperseded}, outcome["enum"]); d != "" {
		t.Errorf("outcome enum (-want +got):\n%s", d)
	}
}

// checkTaskStrictSchema walks a JSON Schema: every object must require all
// its properties and forbid others (OpenAI strict mode).
func checkTaskStrictSchema(t *testing.T, path string, s map[string]any) {
	t.Helper()
	if s["type"] == "object" {
		props, ok := s["properties"].(map[string]any)
		if !ok || len(props) == 0 {
			t.Errorf("%s: object without properties", path)
		}
		if s["additionalProperties"] != false {
			t.Errorf("%s: additionalProperties = %v; want false", path, s["additionalProperties"])
		}
		req, _ := s["required"].([]any)
		var got []string
		for _, r := range req {
			got = append(got, r.(string))
		}
		want := make([]string, 0, len(props))
		for k := range props {
			want = append(want, k)
		}
		slices.Sort(got)
		slices.Sort(want)
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("%s: required (-properties +required):\n%s", path, d)
		}
		for k, p := range props {
			sub, ok := p.(map[string]any)
			if !ok {
				t.Errorf("%s.%s: not a schema", path, k)
				continue
			}
			checkTaskStrictSchema(t, path+"."+k, sub)
		}
	}
	if s["type"] == nil {
		t.Errorf("%s: no type", path)
	}
	if items, ok := s["items"].(map[string]any); ok {
		checkTaskStrictSchema(t, path+"[]", items)
	}
}

func TestLLMTasksBoundContent(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", maxTaskContent) + "TAIL-SHOULD-NOT-BE-SENT"
	kept := "<<<\n" + strings.Repeat("é", maxTaskContent) + "\n>>>"

	checkPrompt := func(t *testing.T, llm *taskLLM) {
		t.Helper()
		p := llm.lastRequest(t).Prompt
		if strings.Contains(p, "TAIL") {
			t.Error("the prompt carries content past the bound")
		}
		if !strings.Contains(p, kept) {
			t.Errorf("the prompt lacks the first %d runes of the content", maxTaskContent)
		}
	}
	t.Run("promote", func(t *testing.T) {
		t.Parallel()
		llm := taskLLMAnswering(`{"promote": false, "content": "", "tags": [], "reason": "r"}`)
		c := taskSession
		c.Content = long
		if _, err := NewGroomer(llm).PromoteSessionContext(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		checkPrompt(t, llm)
	})
	t.Run("review drops a suggestion made from part of the memory", func(t *testing.T) {
		t.Parallel()
		llm := taskLLMAnswering(`{"outcome": "needs_grooming", "reason": "r", "suggestion": "partial", "superseded_by": ""}`)
		c := taskDurable
		c.Content = long
		rv, err := NewGroomer(llm).ReviewDurable(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		checkPrompt(t, llm)
		if d := cmp.Diff(DurableReview{Outcome: OutcomeNeedsGrooming, Reason: "r"}, rv); d != "" {
			t.Errorf("review (-want +got):\n%s", d)
		}
	})
	t.Run("judge", func(t *testing.T) {
		t.Parallel()
		llm := taskLLMAnswering(`{"valid": true, "confidence": 0.5, "reason": "r"}`)
		c := taskClaim
		c.Content = long
		if _, err := NewJudge(llm).JudgeEdge(t.Context(), c); err != nil {
			t.Fatal(err)
		}
		checkPrompt(t, llm)
	})
	t.Run("rewrite refuses rather than drop the tail", func(t *testing.T) {
		t.Parallel()
		llm := taskLLMAnswering(`{"content": "c"}`)
		c := taskDurable
		c.Content = long
		_, err := NewGroomer(llm).RewriteDurable(t.Context(), c, "vague")
		if !errors.Is(err, driver.ErrInvalidArgument) || driver.FieldOf(err) != "content" {
			t.Errorf("err = %v; want ErrInvalidArgument naming content", err)
		}
		if n := len(llm.requests()); n != 0 {
			t.Errorf("the LLM was asked %d times; want none", n)
		}
	})
	t.Run("content at the bound is sent whole", func(t *testing.T) {
		t.Parallel()
		llm := taskLLMAnswering(`{"content": "c"}`)
		c := taskDurable
		c.Content = strings.Repeat("é", maxTaskContent)
		if _, err := NewGroomer(llm).RewriteDurable(t.Context(), c, "vague"); err != nil {
			t.Fatal(err)
		}
		checkPrompt(t, llm)
		if p := llm.lastRequest(t).Prompt; strings.Contains(p, "was cut") {
			t.Error("the prompt says content at the bound was cut")
		}
	})
}

func TestLLMTasksInfo(t *testing.T) {
	t.Parallel()
	llm := taskLLMAnswering()
	got := []ExtractorInfo{NewGroomer(llm).Info(), NewJudge(llm).Info()}
	want := []ExtractorInfo{
		{Provider: "scripted", Model: "canned-1", PromptVersion: GroomPromptVersion},
		{Provider: "scripted", Model: "canned-1", PromptVersion: JudgePromptVersion},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("info (-want +got):\n%s", d)
	}
	if NewGroomer(llm).Model() != Model(llm) || NewJudge(llm).Model() != Model(llm) {
		t.Error("LLM() does not return the model asked")
	}
}

// TestLLMJudgeConcurrent shares one judge between
// goroutines (run with -race).
func TestLLMJudgeConcurrent(t *testing.T) {
	t.Parallel()
	llm := taskLLMAnswering(`{"valid": true, "confidence": 0.5, "reason": "r"}`)
	j := NewJudge(llm)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := j.JudgeEdge(t.Context(), taskClaim); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := len(llm.requests()); n != 8 {
		t.Errorf("%d requests; want 8", n)
	}
}

// ExampleNewLLMJudge judges one extracted edge. Any LLM works; a real
// program passes a provider such as providers/openai.
func ExampleNewJudge() {
	llm := taskLLMAnswering(`{"valid": true, "confidence": 0.92, "reason": "The text says Ada will ship v2."}`)
	judge := NewJudge(llm)
	v, err := judge.JudgeEdge(context.Background(), EdgeClaim{
		Relation: "assigned_to", SourceName: "Ship v2", SourceType: driver.TypeTask,
		TargetName: "Ada", TargetType: driver.TypePerson, Content: "Ada will ship v2 by Friday.",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(v.Valid, v.Confidence, v.Reason)
	// Output: true 0.92 The text says Ada will ship v2.
}
