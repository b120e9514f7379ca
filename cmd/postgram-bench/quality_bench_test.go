package main

import (
	"bytes"
	"context"
	"io"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/quality"
	"github.com/postgram-go/postgram/internal/quality/synth"
)

// BenchmarkSearchRanking runs the development set's queries through
// Client.Search on the embedded store, per ranking: the cost of ranking v2
// over the seed's (one op is one query; allocations per query).
func BenchmarkSearchRanking(b *testing.B) {
	ctx := context.Background()
	set, err := quality.Parse(bytes.NewReader(synth.Committed), synth.CommittedName)
	if err != nil {
		b.Fatal(err)
	}
	o := qualityOptions{store: "sqlite", dims: 384, keyField: "bench_key"}
	c, cleanup, err := qualityClient(ctx, o, set, io.Discard)
	if err != nil {
		b.Fatal(err)
	}
	defer cleanup()
	qs := set.Only(quality.SplitDev)
	for _, r := range []postgram.RankingMode{postgram.RankingSeed, postgram.RankingV2} {
		b.Run(string(r), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				q := qs[i%len(qs)]
				i++
				if _, err := c.Search(ctx, postgram.SearchRequest{Query: q.Text, Limit: 10, Strategy: postgram.StrategyExact, Ranking: r}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
