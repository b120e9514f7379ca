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
		"sync notes: 3 files, created=3 updated=0 unchanged=0 deleted=0",
		`search "tomatoes": 1 result(s)` + "\n    - document garden.md:",
		"sync notes: 2 files, created=0 updated=1 unchanged=1 deleted=1",
		`search "basil": 1 result(s)` + "\n    - document garden.md:",
		`search "Lisbon tram": 0 result(s)`,
		"status travel/lisbon.md   deleted",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
