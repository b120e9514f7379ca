package rank

import (
	"cmp"
	"math"
	"slices"
	"sync"

	"github.com/postgram-go/postgram/internal/query"
)

// Kind says how a feature slot matches its term.
type Kind uint8

// Slot kinds.
const (
	Exact     Kind = iota // the term's own lexemes, all of them
	Inflected             // a word sharing the term's English stem
	Typo                  // a word one edit away from the term
)

func (k Kind) String() string {
	switch k {
	case Inflected:
		return "inflection"
	case Typo:
		return "typo"
	}
	return "exact"
}

// Slot is one feature column of a query: a term's exact lexemes, or one
// alternative lexeme of it.
type Slot struct {
	Term   int
	Kind   Kind
	Lexeme string // the alternative; for Exact, the term's rarest lexeme
	DF     int64  // chunks of the workspace holding it
	IDF    float64
}

// Analysis is a query's terms with the lexemes whose statistics ranking
// needs: each term's own, and the candidates of its expansions.
type Analysis struct {
	Terms   []string
	Lexemes [][]string // per term, its simple lexemes (AND)
	inflect [][]string // per term, inflection candidates
	of      []*termAnalysis
}

// termAnalysis is what Analyze derives from one term: a pure function of
// its text, so an Analyzer keeps it for the next query with the term.
type termAnalysis struct {
	lexemes []string
	inflect []string
	once    sync.Once
	typos   []string // typo candidates, made on first need (once)
}

func analyzeTerm(t string) *termAnalysis {
	ta := &termAnalysis{lexemes: query.Lexemes(t)}
	if Expandable(ta.lexemes) {
		ta.inflect = Inflections(ta.lexemes[0])
	}
	return ta
}

// typoCands returns the term's typo candidates, made once.
func (ta *termAnalysis) typoCands() []string {
	ta.once.Do(func() {
		if Expandable(ta.lexemes) {
			ta.typos = Typos(ta.lexemes[0])
		}
	})
	return ta.typos
}

// Analyzer remembers the analyses of recent terms (at most AnalyzerTerms;
// it starts afresh when full): queries repeat, and a term's lexemes,
// inflection and typo candidates depend on its text alone. Safe for
// concurrent use; the zero value is ready.
type Analyzer struct {
	mu sync.Mutex
	m  map[string]*termAnalysis
}

// AnalyzerTerms bounds an Analyzer.
const AnalyzerTerms = 8192

func (z *Analyzer) term(t string) *termAnalysis {
	if z == nil {
		return analyzeTerm(t)
	}
	z.mu.Lock()
	ta, ok := z.m[t]
	z.mu.Unlock()
	if ok {
		return ta
	}
	ta = analyzeTerm(t)
	z.mu.Lock()
	if z.m == nil || len(z.m) >= AnalyzerTerms {
		z.m = make(map[string]*termAnalysis, 256)
	}
	if cur, ok := z.m[t]; ok {
		ta = cur
	} else {
		z.m[t] = ta
	}
	z.mu.Unlock()
	return ta
}

// Analyze prepares the terms (already retained by query.Parse).
func Analyze(terms []string) *Analysis { return (*Analyzer)(nil).Analyze(terms) }

// Analyze prepares the terms, reusing remembered term analyses.
func (z *Analyzer) Analyze(terms []string) *Analysis {
	a := &Analysis{Terms: terms, Lexemes: make([][]string, len(terms)),
		inflect: make([][]string, len(terms)), of: make([]*termAnalysis, len(terms))}
	for i, t := range terms {
		ta := z.term(t)
		a.of[i], a.Lexemes[i], a.inflect[i] = ta, ta.lexemes, ta.inflect
	}
	return a
}

// Lookups returns the distinct lexemes whose statistics the plan needs
// first, in byte order: the terms' own and their inflections.
func (a *Analysis) Lookups() []string {
	var out []string
	for i := range a.Terms {
		out = append(out, a.Lexemes[i]...)
		out = append(out, a.inflect[i]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TypoLookups returns, given the document frequencies of Lookups, the typo
// candidates of the expandable terms held by at most p.TypoMaxDF chunks,
// whose statistics NewPlan then needs as well (nil when no term is that
// rare: most queries never generate typo candidates).
func (a *Analysis) TypoLookups(df map[string]int64, p Params) []string {
	var out []string
	for i := range a.Terms {
		if !Expandable(a.Lexemes[i]) || df[a.Lexemes[i][0]] > p.TypoMaxDF || p.MaxTypos == 0 {
			continue
		}
		out = append(out, a.of[i].typoCands()...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Stats are a workspace's corpus statistics.
type Stats struct {
	Chunks int64 // chunks in the workspace
	Length int64 // their total length in lexeme positions
	// DF maps a lexeme to the number of chunks holding it (absent: 0).
	DF map[string]int64
}

// Plan is an analysed query with its statistics: the slots the keyword
// branch reports features for and the weights that score them.
type Plan struct {
	Terms []string
	// Lexemes holds each term's own lexemes.
	Lexemes [][]string
	// Slots: term i's exact slot is Slots[i]; the alternatives follow,
	// grouped by term in term order.
	Slots []Slot
	// Alternatives per term: the lexemes of its alternative slots, in
	// slot order (what the keyword branch also matches the term by).
	Alternatives [][]string
	// Present marks the terms that occur in the workspace (by any slot).
	Present []bool
	AvgLen  float64
	Chunks  int64 // the workspace's chunks
	Params  Params
	// byLexeme maps the lexeme of each single-lexeme slot (an
	// alternative, or a term of one lexeme) to its slots; compound lists
	// the exact slots of terms with several lexemes. Tags and types are
	// matched through them.
	byLexeme map[string][]int32
	compound []int32
}

// NewPlan chooses each term's alternatives among the candidates that occur
// in the workspace and computes every slot's IDF. Inflections are kept
// for every expandable term; typo candidates only for a term that itself
// occurs in at most p.TypoMaxDF chunks. Each kind keeps its most common
// candidates first.
func NewPlan(a *Analysis, st Stats, p Params) *Plan {
	n := len(a.Terms)
	pl := &Plan{Terms: a.Terms, Lexemes: a.Lexemes, Slots: make([]Slot, n), Alternatives: make([][]string, n), Present: make([]bool, n), Params: p}
	pl.Chunks = st.Chunks
	if st.Chunks > 0 {
		pl.AvgLen = float64(st.Length) / float64(st.Chunks)
	}
	idf := func(df int64) float64 {
		// BM25's idf, always positive.
		return math.Log(1 + (float64(st.Chunks)-float64(df)+0.5)/(float64(df)+0.5))
	}
	for i := range a.Terms {
		s := Slot{Term: i, Kind: Exact}
		for j, l := range a.Lexemes[i] {
			// A term's lexemes are ANDed: it is at most as common as its
			// rarest lexeme.
			if df := st.DF[l]; j == 0 || df < s.DF {
				s.DF, s.Lexeme = df, l
			}
		}
		s.IDF = idf(s.DF)
		pl.Slots[i] = s
		pl.Present[i] = s.DF > 0
	}
	for i := range a.Terms {
		taken := map[string]bool{}
		var stem string // the term's, for inflections
		if len(a.inflect[i]) > 0 {
			stem = Stem(a.Lexemes[i][0])
		}
		choose := func(cands []string, kind Kind, max int) {
			var found []Slot
			for _, c := range cands {
				if df := st.DF[c]; df > 0 && !taken[c] && (kind != Inflected || Stem(c) == stem) {
					found = append(found, Slot{Term: i, Kind: kind, Lexeme: c, DF: df, IDF: idf(df)})
				}
			}
			slices.SortStableFunc(found, func(x, y Slot) int {
				if c := cmp.Compare(y.DF, x.DF); c != 0 {
					return c
				}
				return cmp.Compare(x.Lexeme, y.Lexeme)
			})
			for _, s := range found[:min(max, len(found))] {
				taken[s.Lexeme] = true
				pl.Slots = append(pl.Slots, s)
				pl.Alternatives[i] = append(pl.Alternatives[i], s.Lexeme)
				pl.Present[i] = true
			}
		}
		choose(a.inflect[i], Inflected, p.MaxInflections)
		if pl.Slots[i].DF <= p.TypoMaxDF && Expandable(a.Lexemes[i]) {
			choose(a.of[i].typoCands(), Typo, p.MaxTypos)
		}
	}
	pl.byLexeme = make(map[string][]int32, len(pl.Slots))
	for k, s := range pl.Slots {
		switch {
		case s.Kind != Exact:
			pl.byLexeme[s.Lexeme] = append(pl.byLexeme[s.Lexeme], int32(k))
		case len(pl.Lexemes[s.Term]) == 1:
			l := pl.Lexemes[s.Term][0]
			pl.byLexeme[l] = append(pl.byLexeme[l], int32(k))
		case len(pl.Lexemes[s.Term]) > 1:
			pl.compound = append(pl.compound, int32(k))
		}
	}
	return pl
}

// TermDF returns how many chunks hold a term by any of its slots (an upper
// bound: a chunk may hold several), its rarity for the pool's per-term
// steps.
func (pl *Plan) TermDF(i int) int64 {
	var n int64
	for _, s := range pl.Slots {
		if s.Term == i {
			n += s.DF
		}
	}
	return n
}

// Expansions returns each term's alternatives with their kinds, for
// explanations: only the slots seen[k] marks (see Seen), so that a caller
// learns of no word held only by documents it cannot read.
func (pl *Plan) Expansions(seen []bool) map[string][]string {
	out := map[string][]string{}
	for k, s := range pl.Slots {
		if k < len(pl.Terms) || k >= len(seen) || !seen[k] {
			continue
		}
		t := pl.Terms[s.Term]
		out[t] = append(out[t], s.Lexeme+" ("+s.Kind.String()+")")
	}
	return out
}

// Seen marks the slots that occur (in the text or the head) in at least one
// of the hits' features: tf and head hold one row per hit, a value per slot.
func (pl *Plan) Seen(tf, head [][]uint16) []bool {
	seen := make([]bool, len(pl.Slots))
	for _, rows := range [][][]uint16{tf, head} {
		for _, r := range rows {
			for k, v := range r {
				if k < len(seen) && v > 0 {
					seen[k] = true
				}
			}
		}
	}
	return seen
}

// The heads step (postgram.KeywordFillQuery.HeadTerms) looks up at most
// headTermsMax terms, each held by at most headMinDF chunks or
// headMaxShare of the workspace's, whichever is more: a name is rare, and a
// common word names too many entities for 20 of them to help.
const (
	headTermsMax = 3
	headMinDF    = 200
	headMaxShare = 0.01
)

// HeadTerms returns the terms of order (indexes into Terms, preferred
// first) the heads step should look up.
func (pl *Plan) HeadTerms(order []int) []int {
	limit := max(int64(headMinDF), int64(float64(pl.Chunks)*headMaxShare))
	var out []int
	for _, i := range order {
		if len(out) == headTermsMax {
			break
		}
		if pl.TermDF(i) <= limit {
			out = append(out, i)
		}
	}
	return out
}

// scanWalk bounds the chunks a step may expect to walk to fill its room
// when it walks the workspace instead of reading the term's index
// (postgram.KeywordFillQuery.ScanTerms); scanRatio is how many of the
// index's matches a walked chunk must save: gathering a match from the
// index costs PostgreSQL about half a microsecond, testing a walked chunk
// 4 (a tsvector stored inline, a million chunks) to 50 (a TOASTed one, the
// REST load's fixture) microseconds.
const (
	scanWalk  = 4000
	scanRatio = 20
)

// Walkable reports whether a per-term step with room for limit chunks,
// over a term held by df of the workspace's chunks, should walk the
// workspace: the expected walk (limit × chunks / df) is at most scanWalk
// chunks and at most a scanRatio-th of the df matches the index would
// gather. At a million chunks a term in 161,366 of them qualifies (1,240
// chunks walked for room 200); at 6,000 chunks only a term in nearly all.
func Walkable(df, chunks float64, limit int) bool {
	walk := float64(limit) * chunks // the expected walk times df
	return df > 0 && walk <= scanWalk*df && walk*scanRatio <= df*df
}

// ScanTerms returns the terms of order whose per-term step, with room for
// limit chunks, should walk the workspace (Walkable).
func (pl *Plan) ScanTerms(order []int, limit int) []int {
	var out []int
	for _, i := range order {
		if Walkable(float64(pl.TermDF(i)), float64(pl.Chunks), limit) {
			out = append(out, i)
		}
	}
	return out
}

// weight is the slot's kind weight.
func (pl *Plan) weight(s *Slot) float64 {
	switch s.Kind {
	case Inflected:
		return pl.Params.InflectionWeight
	case Typo:
		return pl.Params.TypoWeight
	}
	return 1
}
