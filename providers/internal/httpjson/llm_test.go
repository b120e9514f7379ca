package httpjson

import "testing"

func TestJSONAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{name: "plain", in: ` {"a":1} `, want: `{"a":1}`, ok: true},
		{name: "fence", in: "```json\n{\"a\":1}\n```", want: `{"a":1}`, ok: true},
		{name: "bare fence", in: "```\n{\"a\":1}\n```", want: `{"a":1}`, ok: true},
		{name: "think block", in: "<think>\nThe user wants JSON.\n</think>\n\n{\"a\":1}", want: `{"a":1}`, ok: true},
		{name: "think block then fence", in: "<think>x</think>```json\n{\"a\":1}\n```", want: `{"a":1}`, ok: true},
		{name: "unclosed think", in: "<think>still thinking", ok: false},
		{name: "empty", in: "  ", ok: false},
		{name: "prose", in: "Sorry, I can't.", ok: false},
		{name: "truncated", in: `{"a":[1,`, ok: false},
	}
	for _, tt := range tests {
		got, ok := JSONAnswer(tt.in)
		if ok != tt.ok || string(got) != tt.want {
			t.Errorf("%s: JSONAnswer(%q) = %s, %v; want %s, %v", tt.name, tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
