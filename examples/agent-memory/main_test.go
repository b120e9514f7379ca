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
		`search "release Tuesday" as planner: 2 result(s)`,
		`search "release Tuesday" as reviewer: 1 result(s)`,
		"groom dry_run: eligible=1 archived=0",
		"groom archive: eligible=1 archived=1",
		"  - archived: Working on the release checklist",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// After grooming the planner's last search finds only durable memory.
	if !strings.HasSuffix(out.String(), "as planner: 1 result(s)\n  - [durable_memory] Decision: the release branch is cut every second Tuesday.\n") {
		t.Errorf("final search should find only the durable memory:\n%s", out.String())
	}
}
