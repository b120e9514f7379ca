// Package quality measures how well search finds the right thing: a
// labelled set (entities and queries with graded relevance, in JSONL), the
// ranking metrics (nDCG@5, MRR@10, recall@10, hit@1) and their summary per
// category and overall. It knows nothing of stores or ranking: the caller
// runs each query and hands back the ranked keys.
//
// # Label format
//
// One JSON object per line; blank lines and lines starting with '#' are
// skipped. An entity line seeds a store (optional: labels for an existing
// store name its entities by id or metadata key instead):
//
//	{"kind":"entity","key":"person/dana-whitfield","type":"person","content":"Dana Whitfield is …",
//	 "tags":["platform"],"visibility":"work","status":"active","metadata":{"name":"Dana Whitfield"}}
//
// A query line names the entities that answer it, graded 2 (exactly what
// was asked for), 1 (useful) or 0 (explicitly not relevant; same as
// unlisted). Split "dev" is for tuning; "heldout" is never looked at while
// tuning and is what quality claims are judged on:
//
//	{"kind":"query","id":"name-001","text":"Dana Whitfield","category":"name","split":"heldout",
//	 "relevant":{"person/dana-whitfield":2,"project/lighthouse":1}}
//
// A relevance key is an entity key of the same file, an entity id (UUID),
// or the value of a metadata field (see Resolver).
package quality

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Split names.
const (
	SplitDev     = "dev"
	SplitHeldOut = "heldout"
)

// MaxGrade is the highest relevance grade.
const MaxGrade = 2

// Entity is an entity line: what a store is seeded with.
type Entity struct {
	Key        string         `json:"key"`
	Type       string         `json:"type"`
	Content    string         `json:"content"`
	Tags       []string       `json:"tags,omitempty"`
	Visibility string         `json:"visibility,omitempty"`
	Status     string         `json:"status,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Query is a query line.
type Query struct {
	ID       string         `json:"id"`
	Text     string         `json:"text"`
	Category string         `json:"category"`
	Split    string         `json:"split"`
	Relevant map[string]int `json:"relevant"`
	// Line is the query's line in its file (1-based), for messages.
	Line int `json:"-"`
}

// Set is a labelled set.
type Set struct {
	Entities []Entity
	Queries  []Query
	// EntityLine maps an entity key to its line, for messages.
	EntityLine map[string]int
}

// line is one JSONL record: the union of both kinds.
type line struct {
	Kind string `json:"kind"`
	Entity
	ID       string          `json:"id"`
	Text     string          `json:"text"`
	Category string          `json:"category"`
	Split    string          `json:"split"`
	Relevant json.RawMessage `json:"relevant"`
}

// MaxLineBytes bounds one line of a label file.
const MaxLineBytes = 4 << 20

// Parse reads a labelled set. Every problem is an error naming its line:
// malformed JSON, an unknown kind, a missing field, a duplicate key or id,
// a grade outside 0–2, a query without any relevant entity, a relevance
// key naming an entity key absent from a file that has entity lines, and a
// set without queries.
func Parse(r io.Reader, name string) (*Set, error) {
	set := &Set{EntityLine: map[string]int{}}
	queryLine := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	n := 0
	for sc.Scan() {
		n++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 || raw[0] == '#' {
			continue
		}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", name, n, fmt.Sprintf(format, args...))
		}
		var l line
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			return nil, fail("%v", err)
		}
		switch l.Kind {
		case "entity":
			e := l.Entity
			switch {
			case e.Key == "":
				return nil, fail("entity: key is missing")
			case e.Type == "":
				return nil, fail("entity %q: type is missing", e.Key)
			case strings.TrimSpace(e.Content) == "":
				return nil, fail("entity %q: content is empty", e.Key)
			case l.ID != "" || l.Text != "" || l.Category != "" || l.Split != "" || l.Relevant != nil:
				return nil, fail("entity %q: has query fields (id, text, category, split, relevant)", e.Key)
			}
			if prev, dup := set.EntityLine[e.Key]; dup {
				return nil, fail("entity key %q repeats line %d", e.Key, prev)
			}
			set.EntityLine[e.Key] = n
			set.Entities = append(set.Entities, e)
		case "query":
			q := Query{ID: l.ID, Text: l.Text, Category: l.Category, Split: l.Split, Line: n}
			switch {
			case q.ID == "":
				return nil, fail("query: id is missing")
			case strings.TrimSpace(q.Text) == "":
				return nil, fail("query %q: text is empty", q.ID)
			case q.Category == "":
				return nil, fail("query %q: category is missing", q.ID)
			case l.Key != "" || l.Type != "" || l.Content != "" || l.Tags != nil || l.Metadata != nil:
				return nil, fail("query %q: has entity fields (key, type, content, tags, metadata)", q.ID)
			}
			switch q.Split {
			case "":
				q.Split = SplitDev
			case SplitDev, SplitHeldOut:
			default:
				return nil, fail("query %q: split %q is not %q or %q", q.ID, q.Split, SplitDev, SplitHeldOut)
			}
			if prev, dup := queryLine[q.ID]; dup {
				return nil, fail("query id %q repeats line %d", q.ID, prev)
			}
			if len(l.Relevant) == 0 || string(l.Relevant) == "null" {
				return nil, fail("query %q: relevant is missing", q.ID)
			}
			if err := json.Unmarshal(l.Relevant, &q.Relevant); err != nil {
				return nil, fail("query %q: relevant must map entity keys to grades 0–2: %v", q.ID, err)
			}
			positive := false
			for _, k := range sortedKeys(q.Relevant) {
				g := q.Relevant[k]
				if k == "" {
					return nil, fail("query %q: relevant has an empty key", q.ID)
				}
				if g < 0 || g > MaxGrade {
					return nil, fail("query %q: grade %d for %q is outside 0–%d", q.ID, g, k, MaxGrade)
				}
				positive = positive || g > 0
			}
			if !positive {
				return nil, fail("query %q: no entity has a grade above 0", q.ID)
			}
			queryLine[q.ID] = n
			set.Queries = append(set.Queries, q)
		case "":
			return nil, fail(`kind is missing ("entity" or "query")`)
		default:
			return nil, fail("kind %q is not \"entity\" or \"query\"", l.Kind)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, n+1, err)
	}
	if len(set.Queries) == 0 {
		return nil, fmt.Errorf("%s: no queries: the set needs at least one query line", name)
	}
	if len(set.Entities) > 0 {
		for _, q := range set.Queries {
			for _, k := range sortedKeys(q.Relevant) {
				if _, ok := set.EntityLine[k]; !ok {
					return nil, fmt.Errorf("%s:%d: query %q: relevant names %q, which is not an entity key of this file", name, q.Line, q.ID, k)
				}
			}
		}
	}
	return set, nil
}

// Categories returns the query categories in first-seen order.
func (s *Set) Categories() []string {
	var out []string
	for _, q := range s.Queries {
		if !slices.Contains(out, q.Category) {
			out = append(out, q.Category)
		}
	}
	return out
}

// Only returns the queries of split ("" or "all": every query).
func (s *Set) Only(split string) []Query {
	if split == "" || split == "all" {
		return s.Queries
	}
	var out []Query
	for _, q := range s.Queries {
		if q.Split == split {
			out = append(out, q)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
