package toon

import (
	"fmt"
	"testing"
)

// benchResults builds a 50-row search response; with tags the rows are not
// tabular and Marshal uses the list form.
func benchResults(withTags bool) searchResponse {
	var resp searchResponse
	for i := range 50 {
		r := searchResult{
			ID:      fmt.Sprintf("0195f3a2-7c1e-7b3a-9a41-%012d", i),
			Type:    []string{"memory", "document", "entity"}[i%3],
			Score:   0.05 - float64(i)*0.0007,
			Content: fmt.Sprintf("result %d: the user prefers tea, not coffee", i),
		}
		if withTags {
			r.Tags = []string{"prefs", "drinks"}
		}
		resp.Results = append(resp.Results, r)
	}
	return resp
}

func BenchmarkMarshal(b *testing.B) {
	for _, bc := range []struct {
		name string
		tags bool
	}{{"tabular", false}, {"list", true}} {
		b.Run(bc.name, func(b *testing.B) {
			v := benchResults(bc.tags)
			out, err := Marshal(v)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Marshal(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	out, err := Marshal(benchResults(false))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Unmarshal(out); err != nil {
			b.Fatal(err)
		}
	}
}
