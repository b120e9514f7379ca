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
		"GET /hello as \"\" → 200 OK\n  hello from my own service\n",
		"POST /knowledge/api/entities as \"session-alice\" → 201 Created\n  stored a memory (visibility personal, client_id alice)\n",
		"POST /knowledge/api/search as \"session-guest\" → 200 OK\n  1 result(s); \"The office wifi password",
		"POST /knowledge/api/search as \"session-alice\" → 200 OK\n  1 result(s); \"Salary review notes for the team.\"\n",
		"POST /knowledge/api/search as \"session-guest\" → 200 OK\n  0 result(s)\n",
		"POST /knowledge/api/entities as \"session-guest\" → 403 Forbidden\n  error FORBIDDEN:",
		"POST /knowledge/api/search as \"\" → 401 Unauthorized\n  error UNAUTHORIZED:",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
