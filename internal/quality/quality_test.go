package quality

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseErrorsNameTheLine(t *testing.T) {
	t.Parallel()
	ent := `{"kind":"entity","key":"a","type":"memory","content":"x"}`
	q := func(rel string) string {
		return `{"kind":"query","id":"q1","text":"x","category":"c","relevant":` + rel + `}`
	}
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", "no queries"},
		{"only entities", ent, "no queries"},
		{"bad json", "{", "f:1:"},
		{"unknown kind", `{"kind":"thing"}`, `f:1: kind "thing"`},
		{"no kind", `{"key":"a"}`, "f:1: kind is missing"},
		{"unknown field", `{"kind":"query","id":"q","text":"x","category":"c","relevant":{"a":1},"extra":1}`, `f:1: json: unknown field "extra"`},
		{"grade too high", ent + "\n" + q(`{"a":3}`), `f:2: query "q1": grade 3 for "a" is outside 0–2`},
		{"negative grade", ent + "\n" + q(`{"a":-1}`), `f:2: query "q1": grade -1`},
		{"no positive", ent + "\n" + q(`{"a":0}`), `f:2: query "q1": no entity has a grade above 0`},
		{"unknown entity", ent + "\n\n" + q(`{"b":2}`), `f:3: query "q1": relevant names "b", which is not an entity key`},
		{"missing relevant", `{"kind":"query","id":"q1","text":"x","category":"c"}`, `f:1: query "q1": relevant is missing`},
		{"duplicate query", q(`{"a":1}`) + "\n" + q(`{"a":1}`), `f:2: query id "q1" repeats line 1`},
		{"duplicate entity", ent + "\n" + ent, `f:2: entity key "a" repeats line 1`},
		{"bad split", `{"kind":"query","id":"q","text":"x","category":"c","split":"test","relevant":{"a":1}}`, `split "test"`},
		{"empty text", `{"kind":"query","id":"q","text":" ","category":"c","relevant":{"a":1}}`, `text is empty`},
		{"entity without content", `{"kind":"entity","key":"a","type":"memory","content":""}`, `f:1: entity "a": content is empty`},
		{"mixed fields", `{"kind":"entity","key":"a","type":"memory","content":"x","text":"q"}`, `has query fields`},
	}
	for _, c := range cases {
		_, err := Parse(strings.NewReader(c.in), "f")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Parse error = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestParseSkipsCommentsAndDefaultsSplit(t *testing.T) {
	t.Parallel()
	in := "# header\n\n" + `{"kind":"entity","key":"a","type":"memory","content":"x"}` + "\n" +
		`{"kind":"query","id":"q1","text":"x","category":"c","relevant":{"a":2}}` + "\n" +
		`{"kind":"query","id":"q2","text":"y","category":"d","split":"heldout","relevant":{"a":1}}`
	set, err := Parse(strings.NewReader(in), "f")
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{set.Queries[0].Split, set.Queries[1].Split}; !cmp.Equal(got, []string{"dev", "heldout"}) {
		t.Errorf("splits = %v", got)
	}
	if set.Queries[1].Line != 5 || set.EntityLine["a"] != 3 {
		t.Errorf("lines: query %d, entity %d", set.Queries[1].Line, set.EntityLine["a"])
	}
	if got := set.Categories(); !cmp.Equal(got, []string{"c", "d"}) {
		t.Errorf("categories = %v", got)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestScore(t *testing.T) {
	t.Parallel()
	rel := map[string]int{"a": 2, "b": 1, "c": 1, "z": 0}
	// Ideal: a, b, c.
	idcg := 3/math.Log2(2) + 1/math.Log2(3) + 1/math.Log2(4)
	cases := []struct {
		ranked []string
		want   Scores
	}{
		{[]string{"a", "b", "c"}, Scores{NDCG5: 1, MRR10: 1, Recall10: 1, Hit1: 1}},
		{[]string{"b", "a"}, Scores{NDCG5: (1/math.Log2(2) + 3/math.Log2(3)) / idcg, MRR10: 1, Recall10: 2.0 / 3}},
		{[]string{"x", "z", "x", "c"}, Scores{NDCG5: (1 / math.Log2(4)) / idcg, MRR10: 1.0 / 3, Recall10: 1.0 / 3}},
		{nil, Scores{}},
		// Beyond 5: no nDCG gain; beyond 10: nothing.
		{[]string{"1", "2", "3", "4", "5", "a", "6", "7", "8", "9", "b"}, Scores{MRR10: 1.0 / 6, Recall10: 1.0 / 3}},
	}
	for _, c := range cases {
		got := Score(c.ranked, rel)
		if !near(got.NDCG5, c.want.NDCG5) || !near(got.MRR10, c.want.MRR10) || !near(got.Recall10, c.want.Recall10) || got.Hit1 != c.want.Hit1 {
			t.Errorf("Score(%v) = %+v, want %+v", c.ranked, got, c.want)
		}
	}
}

func TestRunAndFloors(t *testing.T) {
	t.Parallel()
	in := `{"kind":"query","id":"q1","text":"one","category":"c","relevant":{"a":2}}
{"kind":"query","id":"q2","text":"two","category":"d","split":"heldout","relevant":{"b":2}}
{"kind":"query","id":"q3","text":"three","category":"d","split":"heldout","relevant":{"id-c":2}}`
	set, err := Parse(strings.NewReader(in), "f")
	if err != nil {
		t.Fatal(err)
	}
	answers := map[string][]Result{
		"one":   {{Names: []string{"a"}}},
		"two":   {{Names: []string{"x"}}, {Names: []string{"b"}}},
		"three": {{Names: []string{"key-c", "id-c"}}}, // labelled by id
	}
	search := func(_ context.Context, q Query) ([]Result, error) { return answers[q.Text], nil }
	rep, err := Run(context.Background(), set, SplitHeldOut, search)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Overall.Queries != 2 || len(rep.Categories) != 1 || rep.Categories[0].Category != "d" {
		t.Fatalf("report = %+v", rep)
	}
	if rep.Queries[1].Scores.NDCG5 != 1 || rep.Queries[1].Top[0].Key != "id-c" {
		t.Errorf("id-labelled query: %+v", rep.Queries[1])
	}
	if w := rep.Worst(1); w[0].ID != "q2" {
		t.Errorf("worst = %s, want q2", w[0].ID)
	}
	floors, err := ParseFloors("ndcg5=0.9, each.hit1=0.6")
	if err != nil {
		t.Fatal(err)
	}
	got := rep.Check(floors)
	want := []string{"ndcg5 overall 0.815 < 0.900", "hit1 in d 0.500 < 0.600"}
	if !cmp.Equal(got, want) {
		t.Errorf("Check = %q, want %q", got, want)
	}
	for _, bad := range []string{"", "ndcg5", "ndcg=0.5", "ndcg5=2", "ndcg5=x"} {
		if _, err := ParseFloors(bad); err == nil {
			t.Errorf("ParseFloors(%q) accepted", bad)
		}
	}
	if _, err := Run(context.Background(), set, "nope", search); err == nil {
		t.Error("Run of an empty split succeeded")
	}
}
