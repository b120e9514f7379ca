package driver

import (
	"reflect"
	"slices"
	"testing"
)

// TestFilterViewEqual: Equal compares every field of FilterView (a field it
// missed would let the in-memory indexes reuse a vector result across a
// change that a filter sees): a new field must be added there and here.
func TestFilterViewEqual(t *testing.T) {
	t.Parallel()
	if n := reflect.TypeOf(FilterView{}).NumField(); n != 8 {
		t.Fatalf("FilterView has %d fields; Equal compares 8", n)
	}
	base := FilterView{Type: "memory", Status: "active", Visibility: "shared", Owner: "o", Tags: []string{"a"},
		MemoryRole: "r", ClientID: "c", UpdatedAt: 1}
	for i, change := range []func(v *FilterView){
		func(v *FilterView) { v.Type = "task" },
		func(v *FilterView) { v.Status = "archived" },
		func(v *FilterView) { v.Visibility = "personal" },
		func(v *FilterView) { v.Owner = "p" },
		func(v *FilterView) { v.Tags = []string{"b"} },
		func(v *FilterView) { v.MemoryRole = "s" },
		func(v *FilterView) { v.ClientID = "d" },
		func(v *FilterView) { v.UpdatedAt = 2 },
	} {
		v := base
		v.Tags = slices.Clone(base.Tags)
		change(&v)
		if base.Equal(&v) {
			t.Errorf("change %d: views reported equal", i)
		}
	}
	if same := base; !base.Equal(&same) {
		t.Error("a view differs from itself")
	}
}
