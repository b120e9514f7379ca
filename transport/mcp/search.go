package mcp

import (
	"context"
	"math"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
)

// previewRunes is how much of an entity's content a compact search row
// carries next to the matched chunk.
const previewRunes = 200

// searchCompact is the compact answer: {results:[row], degraded?}.
type searchCompact struct {
	Results  []searchRow            `json:"results"`
	Degraded []postgram.Degradation `json:"degraded,omitempty"`
}

// searchRow is one compact result: {id, type, score, content, chunk,
// tags?, edges?, related?}.
type searchRow struct {
	ID    uuid.UUID           `json:"id"`
	Type  postgram.EntityType `json:"type"`
	Score float64             `json:"score"`
	// Content is the start of the entity's content (a preview).
	Content string `json:"content"`
	// Chunk is the passage that matched, Section its heading path.
	Chunk   string                `json:"chunk"`
	Section string                `json:"section,omitempty"`
	Tags    []string              `json:"tags,omitempty"`
	Edges   *postgram.EdgeSummary `json:"edges,omitempty"`
	Related []relatedRow          `json:"related,omitempty"`
	// Explain is the ranking explanation on one line (explain: true).
	Explain string `json:"explain,omitempty"`
}

// relatedRow is a compact 1-hop neighbour: no content, only what an agent
// needs to decide whether to recall it.
type relatedRow struct {
	ID        uuid.UUID           `json:"id"`
	Type      postgram.EntityType `json:"type"`
	Relation  string              `json:"relation"`
	Direction string              `json:"direction"`
}

func searchTools() []toolSpec {
	return []toolSpec{{
		Name:  "search",
		Title: "Search the knowledge base",
		Description: "Find entities by meaning and by keywords (hybrid vector + full-text search). This is the discovery step: " +
			"call it first, read the compact rows {id, type, score, content, chunk, tags?, edges?, related?} and call " +
			"recall only for the few ids whose complete content you need; chunk is the passage that matched and " +
			"often answers the question by itself, content is the start of the entity. " +
			"score is a relative ordering value in 0..1 (1: the strongest keyword evidence and the nearest meaning in this " +
			"answer), not a probability or percentage: compare scores only within one answer; explain: true says why each " +
			"result ranks where it does. The raw cosine similarity is in full_response. edges summarises a result's links " +
			"(count and relation labels, no neighbour content); set expand_graph when you need causes, provenance, " +
			"decisions, dependencies, blockers, ownership, participants or other connected context, not for direct " +
			"facts already in the chunk. Archived entities are left out unless include_archived.",
		Params: []param{
			{Name: "query", Kind: kindString, Required: true,
				Description: "What to look for, in natural language or keywords. Identifiers such as ABC-1234 are matched exactly."},
			{Name: "type", Kind: kindStrings, Enum: strs(postgram.EntityTypes),
				Description: "Only these entity types (one or more; a single string is accepted)."},
			{Name: "tags", Kind: kindStrings,
				Description: "Only entities carrying every one of these tags."},
			{Name: "visibility", Kind: kindStrings, Enum: strs(postgram.Visibilities),
				Description: "Only these visibilities (one or more; a single string is accepted)."},
			{Name: "owner", Kind: kindString, Description: "Only entities with this owner, no owner, or owner \"shared\"."},
			{Name: "memory_role", Kind: kindString, Enum: []string{string(postgram.RoleDurableMemory), string(postgram.RoleSessionContext)},
				Description: "durable_memory: long-term facts, decisions and preferences to trust. session_context: your own " +
					"recent working context (where were we?). Omit to search both."},
			{Name: "limit", Kind: kindInteger, Min: ptr(1),
				Description: "Number of results (default 10, at most 100 unless the server says otherwise)."},
			{Name: "threshold", Kind: kindNumber, Min: ptr(0), Max: ptr(1),
				Description: "Cosine-similarity floor 0..1 (default 0.3) for results that do not contain enough of the query's words. Raise it for fewer, closer matches."},
			{Name: "recency_weight", Kind: kindNumber, Min: ptr(0), Max: ptr(1),
				Description: "0..1: how much to favour recently updated entities (30-day half-life). 0 (default) ignores age."},
			{Name: "expand_graph", Kind: kindBoolean,
				Description: "Add each result's directly linked entities (related: id, type, relation, direction)."},
			{Name: "include_archived", Kind: kindBoolean, Description: "Also search archived (deleted) entities."},
			{Name: "include_content", Kind: kindBoolean,
				Description: "With full_response: include each entity's complete content (default true); false returns only the matched chunks."},
			{Name: "explain", Kind: kindBoolean,
				Description: "Add to each result why it ranks where it does: how each query word matched (exactly, as an inflected form or a typo correction, in the text or the entity's name, tags or type), the keyword and vector parts of the score."},
			{Name: "ranking", Kind: kindString, Enum: []string{string(postgram.RankingV2), string(postgram.RankingSeed)},
				Description: "v2 (default): the current ranking. seed: the reference system's rank fusion, for comparison."},
		},
		TOON:       true,
		ReadOnly:   true,
		Idempotent: true,
		Handler:    searchTool,
	}}
}

func searchTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	var req postgram.SearchRequest
	req.Query, _ = a.str("query")
	if v, ok := a.strings("type"); ok {
		for _, t := range v {
			req.Types = append(req.Types, postgram.EntityType(t))
		}
	}
	req.Tags, _ = a.strings("tags")
	if v, ok := a.strings("visibility"); ok {
		for _, s := range v {
			req.Visibilities = append(req.Visibilities, postgram.Visibility(s))
		}
	}
	req.Owner, _ = a.str("owner")
	if v, ok := a.str("memory_role"); ok {
		req.MemoryRole = postgram.MemoryRole(v)
	}
	if v, ok := a.int("limit"); ok {
		req.Limit = clampInt(v) // the library checks the range
	}
	if v, ok := a.float("threshold"); ok {
		req.Threshold = &v
	}
	req.RecencyWeight, _ = a.float("recency_weight")
	req.ExpandGraph = a.bool("expand_graph")
	req.IncludeArchived = a.bool("include_archived")
	req.Explain = a.bool("explain")
	if v, ok := a.str("ranking"); ok {
		req.Ranking = postgram.RankingMode(v)
	}
	full := a.bool(argFullResponse)
	if a.has("include_content") && full {
		v := a.bool("include_content")
		req.IncludeContent = &v
	}
	res, err := c.Search(ctx, req)
	if err != nil {
		return reply{}, err
	}
	if full {
		return reply{Full: res, Compact: res}, nil
	}
	return reply{Compact: compactSearch(res)}, nil
}

// compactSearch builds the compact answer from a search response.
func compactSearch(res *postgram.SearchResponse) searchCompact {
	out := searchCompact{Results: make([]searchRow, 0, len(res.Results)), Degraded: res.Degraded}
	for _, r := range res.Results {
		e := r.Entity
		row := searchRow{ID: e.ID, Type: e.Type, Score: round6(r.RecencyScore), Content: preview(e.Content),
			Chunk: r.ChunkContent, Tags: e.Tags, Edges: r.Edges}
		if r.Explain != nil {
			row.Explain = r.Explain.String()
		}
		for _, n := range r.Related {
			row.Related = append(row.Related, relatedRow{ID: n.Entity.ID, Type: n.Entity.Type,
				Relation: n.Relation, Direction: n.Direction})
		}
		out.Results = append(out.Results, row)
	}
	return out
}

// round6 keeps six decimals: enough to order scores, fewer tokens.
func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }

// preview returns the first previewRunes runes of s, marked "…" when cut.
func preview(s string) string {
	if utf8.RuneCountInString(s) <= previewRunes {
		return s
	}
	n := 0
	for i := range s {
		if n == previewRunes {
			return s[:i] + "…"
		}
		n++
	}
	return s
}
