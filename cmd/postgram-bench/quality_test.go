package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/internal/quality"
)

// qualityFloors are the search-quality targets the held-out split must
// meet (issue 13): nDCG@5 ≥ 0.85 overall and ≥ 0.70 in every category,
// and no category below the seed ranking.
const qualityFloors = "ndcg5=0.85,each.ndcg5=0.70"

// TestQualityFloors runs the shipped benchmark on both backends with the
// bag-of-words embedder and fails when ranking v2 misses a floor on the
// held-out split.
func TestQualityFloors(t *testing.T) {
	t.Parallel()
	floors, err := quality.ParseFloors(qualityFloors)
	if err != nil {
		t.Fatal(err)
	}
	for _, store := range []string{"sqlite", "postgres"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			o := qualityOptions{store: store, keyField: "bench_key", rankings: []string{"v2"}, split: quality.SplitHeldOut,
				dims: 384, strategy: "exact", limit: 10, assert: floors, assertSplit: quality.SplitHeldOut,
				notBelow: "seed", jsonOut: true}
			if store == "postgres" {
				o.databaseURL = pgtest.BaseURL(t)
			}
			var out, errs bytes.Buffer
			missed, err := qualityBench(context.Background(), o, &out, &errs)
			if err != nil {
				t.Fatalf("%v\n%s", err, errs.String())
			}
			var rep struct {
				Runs []qualityRun `json:"runs"`
			}
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			h := rep.Runs[0].Reports[quality.SplitHeldOut]
			t.Logf("%s held-out nDCG@5 %.3f", store, h.Overall.NDCG5)
			for _, c := range h.Categories {
				t.Logf("  %-11s %.3f", c.Category, c.NDCG5)
			}
			if missed {
				t.Fatalf("quality floors missed (%s, not below seed):\n%s", qualityFloors, out.String())
			}
		})
	}
}

// TestQualityLabelErrors: a user's label file with problems is refused
// with the line named, before anything is searched.
func TestQualityLabelErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := map[string]string{
		"grade.jsonl":   `{"kind":"entity","key":"a","type":"memory","content":"x"}` + "\n" + `{"kind":"query","id":"q","text":"x","category":"c","relevant":{"a":5}}`,
		"unknown.jsonl": `{"kind":"entity","key":"a","type":"memory","content":"x"}` + "\n" + `{"kind":"query","id":"q","text":"x","category":"c","relevant":{"b":2}}`,
		"empty.jsonl":   "# nothing\n",
	}
	want := map[string]string{"grade.jsonl": "grade.jsonl:2:", "unknown.jsonl": "unknown.jsonl:2:", "empty.jsonl": "no queries"}
	for name, body := range cases {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		var out, errs bytes.Buffer
		code := runQuality(context.Background(), []string{"--labels", p}, &out, &errs)
		if code != exitError || !strings.Contains(errs.String(), want[name]) {
			t.Errorf("%s: exit %d, stderr %q; want exit %d naming %q", name, code, errs.String(), exitError, want[name])
		}
	}
}
