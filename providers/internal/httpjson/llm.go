package httpjson

import (
	"encoding/json"
	"strings"
)

// JSONAnswer extracts the JSON object an LLM answered with from its text:
// surrounding whitespace, a leading <think>...</think> block (reasoning
// models served without a reasoning parser) and a Markdown code fence
// (```json ... ```), which some OpenAI-compatible servers add even in JSON
// mode, are removed. ok is false when what remains is not one
// syntactically valid JSON value.
func JSONAnswer(text string) (json.RawMessage, bool) {
	s := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(s, "<think>"); ok {
		if _, after, found := strings.Cut(rest, "</think>"); found {
			s = strings.TrimSpace(after)
		}
	}
	if strings.HasPrefix(s, "```") {
		s = strings.TrimPrefix(s, "```")
		if i := strings.IndexByte(s, '\n'); i >= 0 && !strings.ContainsAny(s[:i], "{[") {
			s = s[i+1:]
		}
		s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
	}
	if s == "" || !json.Valid([]byte(s)) {
		return nil, false
	}
	return json.RawMessage(s), true
}

// Excerpt returns the start of an answer for an error message.
func Excerpt(s string) string { return clean(s) }
