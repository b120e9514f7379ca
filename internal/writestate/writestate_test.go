package writestate

import (
	"testing"
	"time"
)

func TestTracker(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tr := &Tracker{Hold: time.Minute, Now: func() time.Time { return now }}
	if ro, _ := tr.ReadOnly(); ro {
		t.Fatal("a new tracker reports read-only")
	}
	tr.Failed("disk full")
	if ro, why := tr.ReadOnly(); !ro || why != "disk full" {
		t.Fatalf("after a failure: %v %q", ro, why)
	}
	tr.Succeeded()
	if ro, _ := tr.ReadOnly(); ro {
		t.Fatal("a committed write must clear the state")
	}
	tr.Failed("disk full")
	now = now.Add(59 * time.Second)
	if ro, _ := tr.ReadOnly(); !ro {
		t.Fatal("within the hold")
	}
	now = now.Add(time.Second)
	if ro, _ := tr.ReadOnly(); ro {
		t.Fatal("past the hold without a newer failure")
	}
}
