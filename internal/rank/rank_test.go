package rank

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"

	"github.com/postgram-go/postgram/internal/fusion"
	"github.com/postgram-go/postgram/internal/query"
	"github.com/postgram-go/postgram/internal/tsrank"
)

func TestHead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		content  string
		metadata map[string]any
		want     string
	}{
		{"defined subject", "Dana Whitfield is a staff engineer on the platform team. She likes tea.", nil, "Dana Whitfield"},
		{"project subject", "Project Lighthouse is the data team's work on retention.", nil, "Project Lighthouse"},
		{"heading", "# Harbor\n\nThe search relevance effort.", nil, "Harbor"},
		{"heading beats subject", "## Notes on Kestrel ##\nKestrel is a project.", nil, "Notes on Kestrel"},
		{"title-like first line", "Falcon — billing migration for the payments team.\n\nLead: Chloe.", nil, "Falcon — billing migration for the payments team."},
		{"first sentence", "After three rounds of review the Zephyr group settled the question. Then more.", nil,
			"After three rounds of review the Zephyr group settled the question."},
		{"long sentence cut", "one two three four five six seven eight nine ten eleven twelve thirteen fourteen. x", nil,
			"one two three four five six seven eight nine ten eleven twelve"},
		{"metadata name replaces leading words", "A mobile engineer on the growth team.", map[string]any{"name": "Lena Duarte"}, "Lena Duarte"},
		{"metadata and strong name", "Dana is a person.", map[string]any{"title": "Dana W", "aliases": []any{"Dee", 3, "D"}},
			"Dana W\nDee\nD\nDana"},
		{"string alias", "x", map[string]any{"aliases": "Dee"}, "Dee"},
		{"long subject is not a name", "The team that owns the nightly batch export jobs is a busy one.", nil,
			"The team that owns the nightly batch export jobs is a busy"},
		{"empty", "   ", nil, ""},
	}
	for _, c := range cases {
		if got := Head(c.content, c.metadata); got != c.want {
			t.Errorf("%s: Head = %q, want %q", c.name, got, c.want)
		}
	}
	long := strings.Repeat("é", 400)
	h := Head(long, map[string]any{"name": long, "title": long})
	if len(h) > MaxHeadBytes || !utf8.ValidString(h) {
		t.Errorf("Head of long fields: %d bytes, valid UTF-8 %v", len(h), utf8.ValidString(h))
	}
}

func TestInflections(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		term string
		want []string // among the candidates that share its stem
	}{
		{"dashboards", []string{"dashboard"}},
		{"deployed", []string{"deploy", "deploying", "deployment"}},
		{"queries", []string{"query", "queried"}},
		{"archiving", []string{"archive", "archived"}},
		{"planned", []string{"plan", "planning"}},
	} {
		stem := Stem(c.term)
		var same []string
		for _, w := range Inflections(c.term) {
			if w == c.term {
				t.Errorf("Inflections(%q) holds the term itself", c.term)
			}
			if Stem(w) == stem {
				same = append(same, w)
			}
		}
		for _, w := range c.want {
			if !slices.Contains(same, w) {
				t.Errorf("Inflections(%q) misses %q (same-stem candidates %v)", c.term, w, same)
			}
		}
	}
	for _, w := range []string{"ab", "Ünïcode", "abc-1", "tête"} {
		if got := Inflections(w); got != nil {
			t.Errorf("Inflections(%q) = %v, want none", w, got)
		}
	}
}

// osa is the optimal string alignment distance.
func osa(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

func TestTypos(t *testing.T) {
	t.Parallel()
	for _, term := range []string{"lighthouse", "whitfield", "dana", "müller"} {
		got := Typos(term)
		first, _ := utf8.DecodeRuneInString(term)
		for _, w := range got {
			if d := osa(term, w); d != 1 {
				t.Errorf("Typos(%q) holds %q at distance %d", term, w, d)
			}
			if r, _ := utf8.DecodeRuneInString(w); r != first {
				t.Errorf("Typos(%q) holds %q, which changes the first letter", term, w)
			}
		}
		n := utf8.RuneCountInString(term)
		if max := (2*n+1)*28 + 2*n; len(got) > max {
			t.Errorf("Typos(%q): %d candidates, more than %d", term, len(got), max)
		}
	}
	got := Typos("lighthouse")
	for _, w := range []string{"lighthuose", "lighthose", "lighthousse", "lighthousa", "ligthhouse"} {
		if !slices.Contains(got, w) {
			t.Errorf("Typos(lighthouse) misses %q", w)
		}
	}
	if !slices.Contains(Typos("müller"), "muller") {
		t.Error("Typos(müller) misses muller")
	}
	for _, w := range []string{"abc", strings.Repeat("a", MaxTypoRunes+1)} {
		if got := Typos(w); got != nil {
			t.Errorf("Typos(%q) = %d candidates, want none", w, len(got))
		}
	}
}

func TestExpandable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		term string
		want bool
	}{{"Lighthouse", true}, {"ABC-1234", false}, {"e-mail", false}, {"v2", false}, {"2026", false}, {"Müller", true}} {
		if got := Expandable(query.Lexemes(c.term)); got != c.want {
			t.Errorf("Expandable(%q) = %v, want %v", c.term, got, c.want)
		}
	}
}

func TestPlanChoosesAlternatives(t *testing.T) {
	t.Parallel()
	p := DefaultParams()
	a := Analyze([]string{"dashboards", "Lighthuose", "team", "ABC-1234"})
	df := map[string]int64{"dashboard": 7, "dashboards": 2, "dashboarding": 1, "lighthouse": 9, "lighthose": 1,
		"team": 400, "tea": 3}
	compound := query.Lexemes("ABC-1234")
	for i, l := range compound {
		df[l] = int64(5 - i) // the last is the rarest
	}
	if more := a.TypoLookups(df, p); !slices.Contains(more, "lighthouse") || slices.Contains(more, "tea") {
		t.Fatalf("TypoLookups: only the absent term's candidates are wanted, got %d (lighthouse %v, tea %v)",
			len(more), slices.Contains(more, "lighthouse"), slices.Contains(more, "tea"))
	}
	pl := NewPlan(a, Stats{Chunks: 1000, Length: 100000, DF: df}, p)
	want := [][]string{{"dashboard", "dashboarding"}, {"lighthouse", "lighthose"}, nil, nil}
	if diff := cmp.Diff(want, pl.Alternatives); diff != "" {
		t.Errorf("alternatives (-want +got):\n%s", diff)
	}
	if pl.Slots[3].DF != int64(5-len(compound)+1) || pl.Slots[3].Lexeme != compound[len(compound)-1] {
		t.Errorf("a compound term's DF is its rarest lexeme's: %+v", pl.Slots[3])
	}
	if !pl.Present[1] || pl.Slots[1].DF != 0 {
		t.Errorf("a term present only by typo: %+v present %v", pl.Slots[1], pl.Present[1])
	}
	if pl.Slots[0].IDF <= pl.Slots[2].IDF {
		t.Error("a rare term must weigh more than a common one")
	}
	if got := pl.TermDF(0); got != 2+7+1 {
		t.Errorf("TermDF(0) = %d", got)
	}
	all := make([]uint16, len(pl.Slots))
	for k := range all {
		all[k] = 1
	}
	x := pl.Expansions(pl.Seen([][]uint16{all}, nil))
	if !slices.Contains(x["Lighthuose"], "lighthouse (typo)") || !slices.Contains(x["dashboards"], "dashboard (inflection)") {
		t.Errorf("Expansions = %v", x)
	}
	// Only what a hit holds: the hits the caller reads are filtered, the
	// statistics are not.
	if x := pl.Expansions(pl.Seen(nil, [][]uint16{make([]uint16, len(pl.Slots))})); len(x) != 0 {
		t.Errorf("Expansions with no hit holding them = %v", x)
	}
}

// TestScanTerms: a step may walk the workspace for a term only when the
// expected walk to fill its room stays within scanWalk chunks.
func TestScanTerms(t *testing.T) {
	t.Parallel()
	a := Analyze([]string{"common", "frequent", "middling", "absent"})
	// A million chunks, room for 200: a walk of at most 4,000 chunks
	// needs a term in 50,000 of them, and saving twenty matches per chunk
	// walked needs 63,246.
	df := map[string]int64{"common": 161_366, "frequent": 70_000, "middling": 50_000}
	pl := NewPlan(a, Stats{Chunks: 1_000_000, Length: 20_000_000, DF: df}, DefaultParams())
	if got, want := pl.ScanTerms([]int{3, 2, 1, 0}, 200), []int{1, 0}; !slices.Equal(got, want) {
		t.Errorf("ScanTerms = %v, want %v (in the order given)", got, want)
	}
	if got := pl.ScanTerms([]int{0, 1, 2, 3}, 600); !slices.Equal(got, []int{0}) {
		t.Errorf("ScanTerms with room for 600 = %v, want [0]", got)
	}
	// 6,000 chunks: a term in half of them would be walked 400 chunks
	// for 3,000 matches, not enough saved; one in 5,500 of them is.
	small := NewPlan(a, Stats{Chunks: 6000, Length: 120_000, DF: map[string]int64{"common": 5500, "frequent": 3000}}, DefaultParams())
	if got := small.ScanTerms([]int{0, 1, 2}, 200); !slices.Equal(got, []int{0}) {
		t.Errorf("ScanTerms at 6,000 chunks = %v, want [0]", got)
	}
}

// corpus builds candidates for a query the way a store reports them.
type corpus struct {
	pl    *Plan
	tq    *tsrank.Query
	cands []fusion.Candidate
}

func newCorpus(terms []string, df map[string]int64, chunks int64) *corpus {
	a := Analyze(terms)
	pl := NewPlan(a, Stats{Chunks: chunks, Length: chunks * 20, DF: df}, DefaultParams())
	return &corpus{pl: pl, tq: tsrank.CompileWith(a.Lexemes, pl.Alternatives)}
}

// add adds a keyword candidate for an entity with content and head.
func (c *corpus) add(ent uuid.UUID, content, head string, matched int) {
	doc := func(text string) (*tsrank.Doc, int32) {
		var d tsrank.Doc
		c.tq.Reset(&d)
		n := int32(0)
		for _, l := range query.Vector(text) {
			n += int32(len(l.Pos))
			if i, ok := c.tq.Lookup(l.Word); ok {
				d.Present[i], d.Pos[i] = true, l.Pos
			}
		}
		return &d, n
	}
	cd, n := doc(content)
	hd, hn := doc(head)
	c.cands = append(c.cands, fusion.Candidate{ChunkID: uuid.New(), EntityID: ent, Content: content,
		KeywordRank: len(c.cands) + 1, Matched: matched,
		Features: &fusion.Features{Length: n, TF: c.tq.Features(cd, nil), HeadPos: c.tq.FirstPositions(hd, nil), HeadLen: hn}})
}

func order(rs []Result) []uuid.UUID {
	out := make([]uuid.UUID, len(rs))
	for i, r := range rs {
		out[i] = r.EntityID
	}
	return out
}

func TestScoringPrefersTheNamedEntity(t *testing.T) {
	t.Parallel()
	person, meeting := uuid.New(), uuid.New()
	c := newCorpus([]string{"Dana", "Whitfield"}, map[string]int64{"dana": 20, "whitfield": 10}, 1000)
	c.add(meeting, "Weekly sync with Dana Whitfield, Omar and Priya about the roadmap and Dana Whitfield's plan.", "Weekly sync with Dana Whitfield", 2)
	c.add(person, "Dana Whitfield is a staff engineer on the platform team.", "Dana Whitfield", 2)
	fp := fusion.Params{Terms: 2, Threshold: 0.3, Now: time.Now()}
	got := order(Score(c.pl, c.cands, fp).Fuse(0))
	if diff := cmp.Diff([]uuid.UUID{person, meeting}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
}

func TestScoringCoverage(t *testing.T) {
	t.Parallel()
	both, rare, common := uuid.New(), uuid.New(), uuid.New()
	c := newCorpus([]string{"kestrel", "rotation"}, map[string]int64{"kestrel": 5, "rotation": 300}, 1000)
	c.add(rare, "kestrel kestrel notes", "notes", 1)
	c.add(both, "the kestrel key rotation plan", "plan", 2)
	c.add(common, "rotation rotation rotation schedule", "schedule", 1)
	fp := fusion.Params{Terms: 2, Threshold: 0.3, Now: time.Now()}
	s := Score(c.pl, c.cands, fp)
	got := order(s.Fuse(0))
	// All pass the seed gate (half the terms); the one matching both ranks
	// first, and the rare term outweighs the common one.
	if diff := cmp.Diff([]uuid.UUID{both, rare, common}, got); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	// Three terms: one chunk matching only the rarest fails the seed gate
	// (1 of 3) but holds most of the IDF mass, so coverage admits it.
	c3 := newCorpus([]string{"kestrel", "going", "right"}, map[string]int64{"kestrel": 5}, 1000)
	c3.add(rare, "kestrel notes", "notes", 1)
	if got := order(Score(c3.pl, c3.cands, fusion.Params{Terms: 3, Threshold: 0.3, Now: time.Now()}).Fuse(0)); len(got) != 1 {
		t.Errorf("a chunk holding the only term present in the workspace is eligible, got %d results", len(got))
	}
}

func TestUnsettled(t *testing.T) {
	t.Parallel()
	a, b := uuid.New(), uuid.New()
	c := newCorpus([]string{"alpha", "beta", "gamma"}, map[string]int64{"alpha": 50, "beta": 60, "gamma": 70}, 1000)
	c.add(a, "alpha words", "x", 1) // 1 of 3 terms: eligible only by similarity
	c.add(b, "alpha beta gamma", "y", 3)
	c.cands[0].SimilarityPending = true
	fp := fusion.Params{Terms: 3, Threshold: 0.3, Now: time.Now()}
	s := Score(c.pl, c.cands, fp)
	if got := s.Unsettled(10); !cmp.Equal(got, []int{0}) {
		t.Fatalf("Unsettled = %v, want [0]", got)
	}
	sim := 0.5
	c.cands[0].Similarity, c.cands[0].SimilarityPending = &sim, false
	if got := s.Unsettled(10); got != nil {
		t.Errorf("Unsettled after settling = %v", got)
	}
	if got := order(s.Fuse(0)); len(got) != 2 || got[0] != b {
		t.Errorf("Fuse = %v, want b first of 2", got)
	}
}

// TestScoringReleased: a Scoring made from the arrays another one
// released (more entities and terms than it needs) scores as a fresh one
// does, and Fuse's limit keeps the order.
func TestScoringReleased(t *testing.T) {
	t.Parallel()
	big := newCorpus([]string{"kestrel", "rotation", "plan"}, map[string]int64{"kestrel": 5, "rotation": 300, "plan": 40}, 1000)
	for i := range 40 {
		big.add(uuid.New(), fmt.Sprintf("kestrel rotation plan %d kestrel", i), "plan", 3)
	}
	small := func() *corpus {
		a, b := uuid.New(), uuid.New()
		c := newCorpus([]string{"dana"}, map[string]int64{"dana": 20}, 1000)
		c.add(a, "Meeting notes that mention dana twice: dana.", "Meeting notes", 1)
		c.add(b, "Dana is a staff engineer.", "Dana", 1)
		return c
	}()
	fp := fusion.Params{Terms: 1, Threshold: 0.3, Now: time.Now()}
	fresh := Score(small.pl, small.cands, fp)
	want := fresh.Fuse(0)
	for range 3 {
		b := Score(big.pl, big.cands, fusion.Params{Terms: 3, Threshold: 0.3, Now: time.Now()})
		if n := len(b.Fuse(0)); n != 40 {
			t.Fatalf("the big corpus fused %d results", n)
		}
		if top := b.Fuse(5); len(top) != 5 || !cmp.Equal(order(top), order(b.Fuse(0))[:5]) {
			t.Fatalf("Fuse(5) = %v", order(top))
		}
		b.Release()
		s := Score(small.pl, small.cands, fp)
		got := s.Fuse(0)
		if d := cmp.Diff(order(want), order(got)); d != "" {
			t.Fatalf("order after a release (-fresh +reused):\n%s", d)
		}
		for i := range got {
			if got[i].Score != want[i].Score || got[i].Why != want[i].Why {
				t.Fatalf("result %d after a release: %+v, fresh %+v", i, got[i], want[i])
			}
		}
		s.Release()
	}
}

func BenchmarkTypos(b *testing.B) {
	w := strings.Repeat("abcdefgh", 3) // MaxTypoRunes letters: the most candidates
	b.ReportAllocs()
	for b.Loop() {
		if len(Typos(w)) == 0 {
			b.Fatal("no candidates")
		}
	}
}

func BenchmarkAnalyze(b *testing.B) {
	terms := []string{"deployed", "observability", "dashboards", "Lighthouse", "OPS-1234"}
	b.ReportAllocs()
	for b.Loop() {
		a := Analyze(terms)
		_ = a.Lookups()
	}
}
