package query

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// backtrackers are repeating patterns that make PostgreSQL's parser
// backtrack: each token starts a branch (host, hyphenated word, comment,
// tag, e-mail, file, decimal, ...) that runs on to the end of the input and
// fails there. "1-a-" is the query of the hardening issue.
var backtrackers = []string{
	"1-a-", "a-1-", "a_", "a-", "a.", "1.", "1.2.", "-1.2.", "1e", "a1-", "a:",
	"x@", "x@a.", "-h@t", "p@t2-", "x-xx@&", "<!--", "<a ", "<a '", "&#",
	"/a", "a.b/", "a.b:1/", "http://a", "é-1-", "1-é-",
}

// maxSteps bounds the transitions the tokenizer may take on n bytes: a
// small constant per byte (the worst pattern found takes about 7).
func maxSteps(n int) int { return 10*n + 32 }

type token struct {
	text string
	typ  tokType
}

// tokenize returns the tokens of s and the transitions taken; naive turns
// the memo off, which is PostgreSQL's exploration as it is.
func tokenize(s string, naive bool) ([]token, int) {
	p := newTokenizer(s)
	defer p.release()
	p.memo.naive = naive
	var out []token
	for {
		tok, typ, ok := p.next()
		if !ok {
			break
		}
		out = append(out, token{tok, typ})
	}
	return out, p.memo.steps
}

func TestTokenizerLinear(t *testing.T) {
	t.Parallel()
	for _, pat := range backtrackers {
		for _, size := range []int{1 << 10, 8 << 10} {
			in := strings.Repeat(pat, size/len(pat))
			if _, steps := tokenize(in, false); steps > maxSteps(len(in)) {
				t.Errorf("%q × %d: %d transitions for %d bytes, more than %d",
					pat, size/len(pat), steps, len(in), maxSteps(len(in)))
			}
		}
	}
	// The bound does catch the quadratic exploration.
	in := strings.Repeat("1-a-", 1<<10)
	if _, steps := tokenize(in, true); steps <= 10*maxSteps(len(in)) {
		t.Errorf("the naive exploration took only %d transitions on %d bytes", steps, len(in))
	}
}

// checkMemoMatchesNaive fails when the memo changes the tokens of in.
func checkMemoMatchesNaive(t *testing.T, in string) {
	t.Helper()
	got, _ := tokenize(in, false)
	want, _ := tokenize(in, true)
	if !slices.Equal(got, want) {
		t.Fatalf("tokens of %q differ with the memo:\n got  %v\n want %v", in, got, want)
	}
}

// TestTokenizerMemoMatchesNaive compares the tokens with and without the
// memo on the golden inputs, the backtracking patterns and random strings
// over the characters the parser's tables test.
func TestTokenizerMemoMatchesNaive(t *testing.T) {
	t.Parallel()
	for _, tt := range pgGolden {
		checkMemoMatchesNaive(t, tt.in)
	}
	for _, pat := range backtrackers {
		checkMemoMatchesNaive(t, strings.Repeat(pat, 500/len(pat)))
		checkMemoMatchesNaive(t, "x "+strings.Repeat(pat, 300/len(pat))+" y")
	}
	alphabet := []string{
		"a", "b", "e", "E", "x", "X", "s", "c", "r", "i", "p", "t", "h", "D", "1", "2",
		"-", "-", ".", "/", "@", ":", "_", "~", "+", "<", ">", "!", "?", "&", "#", ";",
		"'", "\"", "\\", "=", "%", " ", "é", "ⓐ", "\u0301", "中", "😀",
	}
	rng := rand.New(rand.NewPCG(14, 6))
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(6) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		var pat strings.Builder
		for range 1 + rng.IntN(8) {
			pat.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		b.WriteString(strings.Repeat(pat.String(), 1+rng.IntN(40)))
		checkMemoMatchesNaive(t, b.String())
	}
}

func FuzzTokenizerMemo(f *testing.F) {
	for _, tt := range pgGolden {
		f.Add(tt.in)
	}
	for _, pat := range backtrackers {
		f.Add(strings.Repeat(pat, 8))
	}
	f.Fuzz(func(t *testing.T, in string) {
		if len(in) > 4<<10 {
			return // the naive exploration is quadratic
		}
		checkMemoMatchesNaive(t, in)
	})
}

// FuzzLexemesSlow fails when an input takes more than 50 ms of CPU, or more
// transitions than the linear bound.
func FuzzLexemesSlow(f *testing.F) {
	for _, pat := range backtrackers {
		f.Add(strings.Repeat(pat, (8<<10)/len(pat)))
	}
	f.Add(proseChunk)
	f.Fuzz(func(t *testing.T, in string) {
		var steps int
		d := cpuTime(func() {
			p := newTokenizer(in)
			defer p.release()
			for {
				if _, _, ok := p.next(); !ok {
					break
				}
			}
			steps = p.memo.steps
		})
		if steps > maxSteps(len(in)) {
			t.Fatalf("%d bytes (%.40q…) took %d transitions, more than %d", len(in), in, steps, maxSteps(len(in)))
		}
		// The race detector slows everything several times over; the
		// transition bound above holds regardless.
		if limit := 50 * time.Millisecond; !raceEnabled && d > limit {
			t.Fatalf("%d bytes (%.40q…) took %v, more than %v", len(in), in, d, limit)
		}
	})
}

func wallTime(f func()) time.Duration {
	start := time.Now()
	f()
	return time.Since(start)
}

// BenchmarkLexemesWorstCase tokenizes 32 KiB of each backtracking pattern
// (no term cap applies to Lexemes itself).
func BenchmarkLexemesWorstCase(b *testing.B) {
	for _, pat := range []string{"1-a-", "a_", "<!--", "p@t2-"} {
		in := strings.Repeat(pat, (32<<10)/len(pat))
		b.Run(pat, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				Lexemes(in)
			}
		})
	}
}
