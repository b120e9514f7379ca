package toon

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// numberEqual compares json.Numbers by exact numeric value, so "1e3",
// "1000" and "1000.0" are equal, as are "-0" and "0".
var numberEqual = cmp.Comparer(sameNumber)

func sameNumber(a, b json.Number) bool {
	ra, ok1 := numberRat(a)
	rb, ok2 := numberRat(b)
	if !ok1 || !ok2 {
		return a == b
	}
	return ra.Cmp(rb) == 0
}

// numberRat converts n to a big.Rat. Literals are first expanded by
// canonicalNumber (itself tested against fixed cases) because big.Rat
// computes 10^exp eagerly, which never finishes for inputs like 0e999999999.
func numberRat(n json.Number) (*big.Rat, bool) {
	s, ok := canonicalNumber(string(n))
	if !ok {
		return nil, false
	}
	return new(big.Rat).SetString(s)
}

// modelEqual is a linear-time deep equality for model values (Object,
// map[string]any, []any, json.Number compared by value, and comparable
// primitives). The fuzz targets use it because cmp takes exponential time on
// the deeply nested values fuzzing produces.
func modelEqual(a, b any) bool {
	switch x := a.(type) {
	case Object:
		y, ok := b.(Object)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i].Key != y[i].Key || !modelEqual(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !modelEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !modelEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && sameNumber(x, y)
	}
	return a == b
}

// plain converts Objects into map[string]any, recursively, to compare with
// values decoded by encoding/json.
func plain(v any) any {
	switch x := v.(type) {
	case Object:
		m := make(map[string]any, len(x))
		for _, mem := range x {
			m[mem.Key] = plain(mem.Value)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

// inexactNumbers reports whether v holds a number that Marshal cannot
// write exactly (see maxNumberPadding).
func inexactNumbers(v any) bool {
	switch x := v.(type) {
	case json.Number:
		_, ok := canonicalNumber(string(x))
		return !ok
	case Object:
		for _, m := range x {
			if inexactNumbers(m.Value) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if inexactNumbers(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if inexactNumbers(e) {
				return true
			}
		}
	}
	return false
}

// checkLayout verifies the whitespace invariants of encoder output.
func checkLayout(t *testing.T, out []byte) {
	t.Helper()
	s := string(out)
	if strings.HasSuffix(s, "\n") {
		t.Errorf("output ends with a newline: %q", s)
	}
	for i, l := range strings.Split(s, "\n") {
		if s == "" {
			break
		}
		if l == "" || strings.HasSuffix(l, " ") {
			t.Errorf("line %d is empty or has trailing spaces: %q", i+1, l)
		}
		indent := len(l) - len(strings.TrimLeft(l, " "))
		if indent%2 != 0 {
			t.Errorf("line %d has odd indentation: %q", i+1, l)
		}
	}
}

// mustJSON decodes a JSON document with numbers as json.Number.
func mustJSON(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("bad test JSON %q: %v", s, err)
	}
	return v
}

// tabularOrder returns v with the rows of every array that Marshal writes
// in tabular form reordered to the first row's key order, which is the
// order Unmarshal gives them.
func tabularOrder(v any) any {
	switch x := v.(type) {
	case Object:
		out := make(Object, len(x))
		for i, m := range x {
			out[i] = Member{m.Key, tabularOrder(m.Value)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = tabularOrder(e)
		}
		if fields := tabularFields(out); fields != nil {
			for i, e := range out {
				row := e.(Object)
				ordered := make(Object, len(fields))
				for j, f := range fields {
					val, _ := row.Get(f.Key)
					ordered[j] = Member{f.Key, val}
				}
				out[i] = ordered
			}
		}
		return out
	}
	return v
}
