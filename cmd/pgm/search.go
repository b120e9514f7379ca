package main

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

// searchRow is the compact form of a search result: the matched chunk is
// the evidence; 'pgm recall ID' returns the whole entity.
type searchRow struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Score   float64      `json:"score"`
	Chunk   string       `json:"chunk"`
	Section string       `json:"section,omitempty"`
	Tags    []string     `json:"tags"`
	Edges   int          `json:"edges,omitempty"`
	Related []relatedRow `json:"related,omitempty"`
	// Explain is the ranking explanation on one line (--explain).
	Explain string `json:"explain,omitempty"`
}

// relatedRow is a compact graph neighbour of a search result.
type relatedRow struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Relation  string `json:"relation"`
	Direction string `json:"direction"`
	Preview   string `json:"preview"`
}

// resultScore is the value results are ordered by: the recency-adjusted
// score when the server sends one, else the RRF score; six decimals keep
// neighbouring ranks apart.
func resultScore(r postgram.SearchResult) float64 {
	s := r.Score
	if r.RecencyScore != 0 { // absent from a server that sends none
		s = r.RecencyScore
	}
	return math.Round(s*1e6) / 1e6
}

func toSearchRows(resp *wire.SearchResponse) []searchRow {
	rows := make([]searchRow, 0, len(resp.Results))
	for _, r := range resp.Results {
		if r.Entity == nil {
			continue
		}
		sr := searchRow{ID: r.Entity.ID.String(), Type: string(r.Entity.Type), Score: resultScore(r), Chunk: r.ChunkContent, Section: r.Section, Tags: tagsOf(r.Entity)}
		if r.Edges != nil {
			sr.Edges = r.Edges.Count
		}
		if r.Explain != nil {
			sr.Explain = r.Explain.String()
		}
		for _, rel := range r.Related {
			if rel.Entity == nil {
				continue
			}
			sr.Related = append(sr.Related, relatedRow{ID: rel.Entity.ID.String(), Type: string(rel.Entity.Type), Relation: rel.Relation,
				Direction: rel.Direction, Preview: truncate(oneLine(rel.Entity.Content), previewWidth)})
		}
		rows = append(rows, sr)
	}
	return rows
}

func (a *app) searchCmd() *cobra.Command {
	var (
		in            wire.SearchRequest
		tags          []string
		threshold     float64
		typ, vis      string
		recencyWeight float64
	)
	c := a.command(&cobra.Command{
		Use:   "search QUERY...",
		Short: "Hybrid keyword + vector search",
		Long: `Search entities with hybrid keyword + vector search. Several arguments are
joined into one query.

Results are ordered by score, a relative ordering value in 0..1 (1: the
strongest keyword evidence and the nearest meaning of this answer), not a
probability. Rows show the matched chunk; use 'pgm recall ID' for an
entity's complete content. --explain adds why each result ranks where it
does: how each query word matched (exactly, as an inflected form or a typo
correction; in the text or in the entity's name, tags or type), and the
keyword and vector parts of the score.`,
		Example: `  pgm search "database decisions"
  pgm search "who worked on embeddings" --expand-graph
  pgm search "database decisions" --type memory --limit 5 --json
  pgm search "Lighthuose" --explain`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: cobra.NoFileCompletions,
	}, func(cmd *cobra.Command, args []string) error {
		in.Query = strings.Join(args, " ")
		in.Type, in.Visibility = oneOrNone(typ), oneOrNone(vis)
		if strings.TrimSpace(in.Query) == "" {
			return usageErr("the query is empty")
		}
		if cmd.Flags().Changed("tags") {
			in.Tags = cleanTags(tags)
		}
		if cmd.Flags().Changed("threshold") {
			in.Threshold = &threshold
		}
		if cmd.Flags().Changed("recency-weight") {
			in.RecencyWeight = recencyWeight
		}
		cl, err := a.api()
		if err != nil {
			return err
		}
		resp, raw, err := cl.Search(a.ctx, in)
		if err != nil {
			return err
		}
		for _, d := range resp.Degraded {
			msg := "warning: search degraded: the " + cell(d.Component, 0) + " branch did not run"
			if d.Reason != "" {
				msg += ": " + cell(d.Reason, 0)
			}
			fmt.Fprintln(a.stderr, msg)
		}
		rows := toSearchRows(resp)
		return a.emit(rows, raw, func(w io.Writer) error {
			if len(rows) == 0 {
				_, err := fmt.Fprintln(w, "No results.")
				return err
			}
			return table(w, func(w io.Writer) {
				row(w, "ID", "TYPE", "SCORE", "TAGS", "CHUNK")
				for _, r := range rows {
					chunkText := r.Chunk
					if r.Section != "" {
						chunkText = "[" + r.Section + "] " + chunkText
					}
					row(w, cell(r.ID, 0), cell(r.Type, 0), fmt.Sprintf("%.5f", r.Score), tagCell(r.Tags), cell(chunkText, contentWidth))
					if r.Explain != "" {
						row(w, "  why:", "", "", "", cell(r.Explain, 0))
					}
					for _, rel := range r.Related {
						arrow := "→"
						if rel.Direction == "incoming" {
							arrow = "←"
						}
						row(w, "  "+arrow+" "+cell(rel.ID, 0), cell(rel.Type, 0), cell(rel.Relation, 0), "", cell(rel.Preview, contentWidth))
					}
				}
			})
		})
	})
	f := c.Flags()
	f.StringVar(&typ, "type", "", listUsage("only this entity type", postgram.EntityTypes))
	f.StringSliceVar(&tags, "tags", nil, "only entities with every one of these comma-separated tags")
	f.StringVar(&vis, "visibility", "", listUsage("only this visibility", postgram.Visibilities))
	f.StringVar(&in.Owner, "owner", "", "only this owner")
	f.StringVar(&in.MemoryRole, "memory-role", "", listUsage("only this memory role", memoryRoles))
	f.IntVar(&in.Limit, "limit", 10, "number of results")
	f.Float64Var(&threshold, "threshold", 0, "cosine similarity floor 0..1 for results that match too few query terms (default: the server's)")
	f.Float64Var(&recencyWeight, "recency-weight", 0, "0..1: blend a 30-day half-life recency boost into the ordering")
	f.BoolVar(&in.ExpandGraph, "expand-graph", false, "add each result's 1-hop graph neighbours")
	f.BoolVar(&in.IncludeArchived, "include-archived", false, "include archived entities")
	f.BoolVar(&in.Explain, "explain", false, "show why each result ranks where it does")
	f.StringVar(&in.Ranking, "ranking", "", "ranking to use: v2 (the server's default) or seed (the reference system's, for comparison)")
	registerEnumCompletions(c)
	return c
}

// oneOrNone is a one-item list for a flag's value, none when it is empty.
func oneOrNone(s string) wire.StringList {
	if s == "" {
		return nil
	}
	return wire.StringList{s}
}
