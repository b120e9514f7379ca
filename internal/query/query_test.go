package query

import (
	"fmt"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParse(t *testing.T) {
	var distinct300 []string
	for i := range 300 {
		distinct300 = append(distinct300, fmt.Sprintf("term%03d", i))
	}
	// parts(n) is a compound of n distinct words, w00-w01-…: n+1 lexemes.
	parts := func(n int) string {
		var ws []string
		for i := range n {
			ws = append(ws, fmt.Sprintf("w%02d", i))
		}
		return strings.Join(ws, "-")
	}

	tests := []struct {
		name string
		q    string
		want Terms
	}{
		{name: "empty", q: "", want: Terms{}},
		{name: "blank", q: " \t\n\u00a0 ", want: Terms{}},
		{name: "identifier is one term", q: "ABC-1234", want: Terms{Terms: []string{"ABC-1234"}}},
		{name: "lone stopword kept", q: "the", want: Terms{Terms: []string{"the"}}},
		{name: "lone stopword kept with its case", q: "The", want: Terms{Terms: []string{"The"}}},
		{name: "all stopwords", q: "the and of", want: Terms{Dropped: 3}},
		{name: "stopword dropped", q: "the quick fox", want: Terms{Terms: []string{"quick", "fox"}, Dropped: 1}},
		{name: "stopwords anywhere", q: "quick and the fox", want: Terms{Terms: []string{"quick", "fox"}, Dropped: 2}},
		{
			name: "duplicates differing in case keep the first",
			q:    "Go go GO golang Golang",
			want: Terms{Terms: []string{"Go", "golang"}},
		},
		{name: "duplicate stopword is one term", q: "The THE the", want: Terms{Terms: []string{"The"}}},
		{name: "duplicate stopwords with another term", q: "The fox the", want: Terms{Terms: []string{"fox"}, Dropped: 1}},
		{name: "non-ASCII case folding", q: "Café CAFÉ café", want: Terms{Terms: []string{"Café"}}},
		{name: "punctuation-only terms", q: "--- !!!", want: Terms{}},
		{name: "punctuation-only terms around a word", q: "--- fox !!!", want: Terms{Terms: []string{"fox"}}},
		{
			name: "punctuation term does not make a stopword a multi-term query",
			q:    "the ...",
			want: Terms{Terms: []string{"the"}},
		},
		{name: "emoji-only terms dropped", q: "👍 🎉 👩‍👩‍👧 🇺🇸", want: Terms{}},
		{name: "emoji-only terms around a word", q: "👍 hello 🎉", want: Terms{Terms: []string{"hello"}}},
		{name: "emoji inside a word is kept", q: "emoji😀inside", want: Terms{Terms: []string{"emoji😀inside"}}},
		{
			name: "tabs newlines NBSP and ideographic space separate",
			q:    "alpha\tbeta\ngamma\u00a0delta\u3000epsilon\r\nzeta\u2003eta",
			want: Terms{Terms: []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"}},
		},
		{name: "contraction of stopwords", q: "don't panic", want: Terms{Terms: []string{"panic"}, Dropped: 1}},
		{name: "contraction with a non-stopword", q: "I'm here now", want: Terms{Terms: []string{"I'm"}, Dropped: 2}},
		{name: "hyphenated stopwords", q: "the-and matrix", want: Terms{Terms: []string{"matrix"}, Dropped: 1}},
		{name: "hyphenated with content", q: "state-of-the-art design", want: Terms{Terms: []string{"state-of-the-art", "design"}}},
		{name: "dotted I lowercases to a stopword", q: "İS fox", want: Terms{Terms: []string{"fox"}, Dropped: 1}},
		{name: "digits count", q: "2024 the", want: Terms{Terms: []string{"2024"}, Dropped: 1}},
		{name: "non-ASCII digits count", q: "٣٤٥", want: Terms{Terms: []string{"٣٤٥"}}},
		{name: "CJK", q: "中文 检索", want: Terms{Terms: []string{"中文", "检索"}}},
		{name: "URL and email", q: "https://example.com/a a.b@example.com", want: Terms{Terms: []string{"https://example.com/a", "a.b@example.com"}}},
		{
			name: "pasted 300 distinct terms",
			q:    strings.Join(distinct300, " "),
			want: Terms{Terms: distinct300[:MaxTerms], Truncated: 300 - MaxTerms},
		},
		{
			name: "truncation counts after stopword filtering",
			q:    "the " + strings.Join(distinct300[:30], " the and ") + " of",
			want: Terms{Terms: distinct300[:MaxTerms], Dropped: 3, Truncated: 6},
		},
		{name: "a term of MaxTermBytes is whole", q: strings.Repeat("ab", 128), want: Terms{Terms: []string{strings.Repeat("ab", 128)}}},
		{name: "a longer term is cut", q: strings.Repeat("ab", 129) + " x", want: Terms{Terms: []string{strings.Repeat("ab", 128), "x"}}},
		{name: "the cut keeps whole characters", q: "x" + strings.Repeat("é", 128), want: Terms{Terms: []string{"x" + strings.Repeat("é", 127)}}},
		{
			name: "the issue's 32 KiB query is one term of 256 bytes",
			q:    strings.Repeat("1-a-", 8192),
			want: Terms{Terms: []string{strings.Repeat("1-a-", 64)}},
		},
		{
			name: "terms equal after the length cut are one term",
			q:    strings.Repeat("ab", 128) + "c " + strings.Repeat("ab", 128) + "d",
			want: Terms{Terms: []string{strings.Repeat("ab", 128)}},
		},
		{name: "MaxTermLexemes lexemes are whole", q: parts(31), want: Terms{Terms: []string{parts(31)}}},
		{name: "more lexemes are cut at a word end", q: parts(50), want: Terms{Terms: []string{parts(31)}}},
		{
			name: "terms equal after the lexeme cut count once",
			q:    parts(50) + " " + parts(46) + " x",
			want: Terms{Terms: []string{parts(31), "x"}},
		},
		{
			name: "duplicates do not count against the limit",
			q:    strings.Repeat("again Again AGAIN x ", 50) + strings.Join(distinct300[:23], " "),
			want: Terms{Terms: append([]string{"x"}, distinct300[:23]...), Dropped: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Parse(tt.q)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("Parse(%q) mismatch (-want +got):\n%s", tt.q, diff)
			}
		})
	}
}

func TestIsStopwordTerm(t *testing.T) {
	tests := []struct {
		term string
		want bool
	}{
		{"the", true},
		{"The", true},
		{"THEMSELVES", true},
		{"yourselves", true},
		{"don't", true}, // don + t, both stopwords; to_tsvector('english') is empty
		{"it's", true},  // it + s
		{"(the)", true},
		{"the-and", true}, // every word is a stopword (PostgreSQL's english config would still index the compound)
		{"a.an", true},
		{"İS", true},   // lowercases to "is"
		{"I'm", false}, // 'm' is not a stopword
		{"won't", false},
		{"a.b", false},
		{"the1", false},
		{"thé", false},
		{"fox", false},
		{"themselvesx", false},
		{"---", false},
		{"", false},
		{"👍", false},
	}
	for _, tt := range tests {
		if got := IsStopwordTerm(tt.term); got != tt.want {
			t.Errorf("IsStopwordTerm(%q) = %v, want %v", tt.term, got, tt.want)
		}
	}
}

// englishStop is share/tsearch_data/english.stop of PostgreSQL 15 verbatim.
const englishStop = `i me my myself we our ours ourselves you your yours yourself yourselves
he him his himself she her hers herself it its itself they them their theirs
themselves what which who whom this that these those am is are was were be
been being have has had having do does did doing a an the and but if or
because as until while of at by for with about against between into through
during before after above below to from up down in out on off over under
again further then once here there when where why how all any both each few
more most other some such no nor not only own same so than too very s t can
will just don should now`

func TestStopwordList(t *testing.T) {
	words := strings.Fields(englishStop)
	if len(words) != 127 {
		t.Fatalf("reference list has %d words, want 127", len(words))
	}
	if len(englishStopwords) != len(words) {
		t.Errorf("englishStopwords has %d words, want %d", len(englishStopwords), len(words))
	}
	longest := 0
	for _, w := range words {
		longest = max(longest, len(w))
		if !IsStopwordTerm(w) || !IsStopwordTerm(strings.ToUpper(w)) {
			t.Errorf("%q is not a stopword term", w)
		}
	}
	if longest != maxStopwordLen {
		t.Errorf("maxStopwordLen = %d, want %d", maxStopwordLen, longest)
	}
}

func TestRequiredMatches(t *testing.T) {
	for n, want := range map[int]int{-1: 0, 0: 0, 1: 1, 2: 1, 3: 2, 4: 2, 5: 3, 23: 12, 24: 12} {
		if got := RequiredMatches(n); got != want {
			t.Errorf("RequiredMatches(%d) = %d, want %d", n, got, want)
		}
	}
}

// checkParse verifies the invariants of Parse(q) against a direct model of
// the contract.
func checkParse(t *testing.T, q string) {
	t.Helper()
	got := Parse(q)

	// Model: terms cut to MaxTermBytes, distinct non-empty ones, then
	// stopword filtering, then the first MaxTerms cut to MaxTermLexemes
	// (those the cut makes equal to an earlier one count once).
	seen := map[string]bool{}
	var distinct []string
	for _, f := range strings.FieldsFunc(q, unicode.IsSpace) {
		f = capBytes(f)
		if !strings.ContainsFunc(f, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			continue
		}
		if low := strings.ToLower(f); !seen[low] {
			seen[low] = true
			distinct = append(distinct, f)
		}
	}
	var candidates []string
	dropped := 0
	for _, f := range distinct {
		if len(distinct) > 1 && IsStopwordTerm(f) {
			dropped++
			continue
		}
		candidates = append(candidates, f)
	}
	truncated := max(0, len(candidates)-MaxTerms)
	var kept []string
	keptLow := map[string]bool{}
	for _, f := range candidates[:min(len(candidates), MaxTerms)] {
		f = capLexemes(f)
		if low := strings.ToLower(f); hasAlnum(f) && !keptLow[low] {
			keptLow[low] = true
			kept = append(kept, f)
		}
	}
	want := Terms{Terms: kept, Dropped: dropped, Truncated: truncated}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("Parse(%q) disagrees with the model (-want +got):\n%s", q, diff)
	}

	// Invariants stated independently of the model.
	if len(got.Terms) > MaxTerms {
		t.Fatalf("Parse(%q) kept %d terms", q, len(got.Terms))
	}
	lower := map[string]bool{}
	for _, term := range got.Terms {
		if term == "" || !hasAlnum(term) {
			t.Fatalf("Parse(%q) kept empty term %q", q, term)
		}
		if strings.ContainsFunc(term, unicode.IsSpace) {
			t.Fatalf("Parse(%q) kept term %q containing space", q, term)
		}
		if !strings.Contains(q, term) {
			t.Fatalf("Parse(%q) kept %q, not a substring of the query", q, term)
		}
		if len(term) > MaxTermBytes {
			t.Fatalf("Parse(%q) kept %q of %d bytes, more than %d", q, term, len(term), MaxTermBytes)
		}
		if n := len(Lexemes(term)); n > MaxTermLexemes {
			t.Fatalf("Parse(%q) kept %q with %d lexemes, more than %d", q, term, n, MaxTermLexemes)
		}
		if utf8.ValidString(q) && !utf8.ValidString(term) {
			t.Fatalf("Parse(%q) kept %q, not valid UTF-8", q, term)
		}
		low := strings.ToLower(term)
		if lower[low] {
			t.Fatalf("Parse(%q) kept %q twice (case-insensitively)", q, term)
		}
		lower[low] = true
	}
	if got.Dropped < 0 || got.Truncated < 0 {
		t.Fatalf("Parse(%q) = %+v: negative counts", q, got)
	}
}

func TestParseModel(t *testing.T) {
	for _, q := range []string{
		"", "the", "the the", "the fox", "a b c d e f g h i j k l m n o p q r s t u v w x y z",
		"x1 x2 x3 x4 x5 x6 x7 x8 x9 x10 x11 x12 x13 x14 x15 x16 x17 x18 x19 x20 x21 x22 x23 x24 x25 the",
		"\xff\xfe invalid \xc3", "ǅ ǆ Ǆ", "ß SS ss", "K \u212a k",
	} {
		checkParse(t, q)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"", "the", "the and of", "the quick fox", "ABC-1234 abc-1234", "--- !!!",
		"Go go GO", "tab\tnew\nline\u00a0nbsp", "👍 👩‍👩‍👧 🇺🇸", "don't I'm it's",
		strings.Repeat("w ", 40), "\xff\xfe", "İS ſ K",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		checkParse(t, q)
	})
}

func BenchmarkParse(b *testing.B) {
	words := strings.Fields("the quick brown fox jumps over lazy dog and PostgreSQL hybrid search ABC-1234 https://example.com/a/b café 中文")
	var parts []string
	for i := range 300 {
		w := words[i%len(words)]
		if i%3 != 0 { // every third term repeats a plain word or stopword
			w = fmt.Sprintf("%s%d", w, i)
		}
		parts = append(parts, w)
	}
	q := strings.Join(parts, " ")
	b.ReportAllocs()
	b.SetBytes(int64(len(q)))
	for b.Loop() {
		Parse(q)
	}
}

// worstQueries are 32 KiB queries (the longest a search accepts) built to
// make PostgreSQL's text-search parser backtrack: one long term, and many
// distinct long terms in several pathological shapes.
func worstQueries() map[string]string {
	const size = 32 << 10
	qs := map[string]string{
		"one term 1-a-": strings.Repeat("1-a-", size/4),
		"one term a_":   strings.Repeat("a_", size/2),
		"one term <!--": strings.Repeat("<!--", size/4),
	}
	var b strings.Builder
	pats := []string{"1-a-", "a_", "<!--", "p@t2-", "x-xx@&", "a1-b2-c3-"}
	for i := 0; b.Len() < size-MaxTermBytes-8; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d", i)
		p := pats[i%len(pats)]
		b.WriteString(strings.Repeat(p, MaxTermBytes/len(p)))
	}
	qs["many long terms"] = b.String()
	return qs
}

// BenchmarkParseWorstCase parses each worst query as a search does: Parse,
// then the lexemes of every kept term (what the SQLite backend derives;
// PostgreSQL gets the same cut terms).
func BenchmarkParseWorstCase(b *testing.B) {
	for name, q := range worstQueries() {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(q)))
			b.ReportAllocs()
			for b.Loop() {
				for _, term := range Parse(q).Terms {
					Lexemes(term)
				}
			}
		})
	}
}
