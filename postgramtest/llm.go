package postgramtest

import (
	"github.com/postgram-go/postgram/llm"

	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/postgram-go/postgram"
)

// ScriptedLLM is a postgram.LLM that answers from a script instead of a
// model: the first rule whose marker occurs in the prompt (longest marker
// first) gives the answer. Put it behind postgram.NewLLMExtractor to test
// relation extraction with the library's real prompt and answer checks.
type ScriptedLLM struct {
	mu       sync.Mutex
	rules    map[string]scriptAnswer
	fallback string
	calls    []llm.Request
	info     llm.Info
}

type scriptAnswer struct {
	json string
	err  error
}

// NewScriptedLLM returns a scripted LLM that identifies itself as
// provider "scripted", model "script-1", and answers prompts matching no
// rule with fallback (an empty extraction when fallback is "").
func NewScriptedLLM(fallback string) *ScriptedLLM {
	if fallback == "" {
		fallback = `{"entities":[],"relations":[]}`
	}
	return &ScriptedLLM{rules: map[string]scriptAnswer{}, fallback: fallback,
		info: llm.Info{Provider: "scripted", Model: "script-1"}}
}

// WithInfo changes the provider and model the LLM reports.
func (s *ScriptedLLM) WithInfo(provider, model string) *ScriptedLLM {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.info = llm.Info{Provider: provider, Model: model}
	return s
}

// On answers prompts containing marker with answer (JSON text, returned
// as is, so malformed answers can be scripted too).
func (s *ScriptedLLM) On(marker, answer string) *ScriptedLLM {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules[marker] = scriptAnswer{json: answer}
	return s
}

// OnValue answers prompts containing marker with v encoded as JSON.
func (s *ScriptedLLM) OnValue(marker string, v any) *ScriptedLLM {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("postgramtest: OnValue: %v", err))
	}
	return s.On(marker, string(b))
}

// Fail makes prompts containing marker fail with err.
func (s *ScriptedLLM) Fail(marker string, err error) *ScriptedLLM {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules[marker] = scriptAnswer{err: err}
	return s
}

// Forget removes the rule for marker.
func (s *ScriptedLLM) Forget(marker string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rules, marker)
}

// Calls returns the requests received so far.
func (s *ScriptedLLM) Calls() []llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]llm.Request(nil), s.calls...)
}

// Info implements postgram.LLM.
func (s *ScriptedLLM) Info() llm.Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

// GenerateJSON implements postgram.LLM.
func (s *ScriptedLLM) GenerateJSON(ctx context.Context, req llm.Request) (json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", postgram.ErrUnavailable, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, req)
	markers := make([]string, 0, len(s.rules))
	for m := range s.rules {
		markers = append(markers, m)
	}
	sort.Slice(markers, func(i, j int) bool {
		if len(markers[i]) != len(markers[j]) {
			return len(markers[i]) > len(markers[j])
		}
		return markers[i] < markers[j]
	})
	for _, m := range markers {
		if strings.Contains(req.Prompt, m) {
			a := s.rules[m]
			if a.err != nil {
				return nil, a.err
			}
			return json.RawMessage(a.json), nil
		}
	}
	return json.RawMessage(s.fallback), nil
}
