package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	if err := run(context.Background(), &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	for _, want := range []string{
		"(tag_counts among them: true)",
		// The writer sees its personal decision; the reader, limited to
		// shared entities, does not.
		`tag_counts as writer: {"counts":{"decision":2,"incident":1}}`,
		`tag_counts as reader: {"counts":{"decision":1,"incident":1}}`,
		`"code":"VALIDATION"`,
		`"field":"tags"`,
		`store as reader: {"error":{"code":"FORBIDDEN"`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
