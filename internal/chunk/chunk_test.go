package chunk

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

const family = "👩\u200d👩\u200d👧" // 5 runes: woman ZWJ woman ZWJ girl

func texts(chunks []Chunk) []string {
	if chunks == nil {
		return nil
	}
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = c.Text
	}
	return out
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		text string
		cfg  Config
		want []string
	}{
		{name: "empty", text: "", want: nil},
		{name: "whitespace only", text: " \t\r\n \u00a0\u3000", want: nil},
		{name: "blank lines only", text: "\n\n\n", want: nil},
		{name: "short", text: "Hello, world.", want: []string{"Hello, world."}},
		{name: "short trimmed", text: "  \n hello there \r\n", want: []string{"hello there"}},
		{name: "exactly size", text: "ab cd efgh", cfg: Config{Size: 10, Overlap: NoOverlap}, want: []string{"ab cd efgh"}},
		{name: "exactly size after trimming", text: "\n  ab cd efgh  \n", cfg: Config{Size: 10, Overlap: NoOverlap}, want: []string{"ab cd efgh"}},
		{name: "one rune over size", text: "aaaaa bbbbb", cfg: Config{Size: 10, Overlap: NoOverlap}, want: []string{"aaaaa", "bbbbb"}},
		{
			name: "paragraph preferred over later boundaries",
			text: "First para one.\n\nSecond para two.\n\nThird para three.",
			cfg:  Config{Size: 40, Overlap: NoOverlap},
			want: []string{"First para one.\n\nSecond para two.", "Third para three."},
		},
		{
			name: "paragraph break with spaces on the blank line",
			text: "aaa bbb.\nccc ddd.\n  \t\neee fff ggg.",
			cfg:  Config{Size: 24, Overlap: NoOverlap},
			want: []string{"aaa bbb.\nccc ddd.", "eee fff ggg."},
		},
		{
			name: "line breaks",
			text: "line one\nline two\nline three\nline four",
			cfg:  Config{Size: 20, Overlap: NoOverlap},
			want: []string{"line one\nline two", "line three\nline four"},
		},
		{
			name: "sentences",
			text: "One two three. Four five six. Seven eight nine.",
			cfg:  Config{Size: 32, Overlap: NoOverlap},
			want: []string{"One two three. Four five six.", "Seven eight nine."},
		},
		{
			name: "sentence end after closing quote",
			text: `He said "stop." Then he left the room.`,
			cfg:  Config{Size: 22, Overlap: NoOverlap},
			want: []string{`He said "stop."`, "Then he left the room."},
		},
		{
			name: "exclamation and question marks",
			text: "Really? Yes! Absolutely sure.",
			cfg:  Config{Size: 16, Overlap: NoOverlap},
			want: []string{"Really? Yes!", "Absolutely sure."},
		},
		{
			name: "decimal point is not a sentence end",
			text: "pi is 3.14159 ok fine",
			cfg:  Config{Size: 16, Overlap: NoOverlap},
			want: []string{"pi is 3.14159 ok", "fine"},
		},
		{
			name: "words",
			text: "alpha beta gamma delta epsilon",
			cfg:  Config{Size: 12, Overlap: NoOverlap},
			want: []string{"alpha beta", "gamma delta", "epsilon"},
		},
		{
			name: "word boundary right after the window",
			text: "abcd efgh ijkl",
			cfg:  Config{Size: 9, Overlap: NoOverlap},
			want: []string{"abcd efgh", "ijkl"},
		},
		{
			name: "overlap starts at a word",
			text: "alpha beta gamma delta epsilon zeta",
			cfg:  Config{Size: 17, Overlap: 8},
			want: []string{"alpha beta gamma", "gamma delta", "delta epsilon", "epsilon zeta"},
		},
		{
			name: "hard cut in a long word",
			text: "abcdefghijklmnopqrstuvwxyz",
			cfg:  Config{Size: 10, Overlap: NoOverlap},
			want: []string{"abcdefghij", "klmnopqrst", "uvwxyz"},
		},
		{
			name: "hard cut with overlap",
			text: "abcdefghijklmnopqrstuvwxyz",
			cfg:  Config{Size: 10, Overlap: 3},
			want: []string{"abcdefghij", "hijklmnopq", "opqrstuvwx", "vwxyz"},
		},
		{
			name: "CJK without spaces",
			text: "中文文本没有空格也没有标点符号需要硬切分",
			cfg:  Config{Size: 8, Overlap: NoOverlap},
			want: []string{"中文文本没有空格", "也没有标点符号需", "要硬切分"},
		},
		{
			name: "Japanese sentences",
			text: "日本語の文です。二番目の文です。三番目の文です。四番目。",
			cfg:  Config{Size: 20, Overlap: NoOverlap},
			want: []string{"日本語の文です。二番目の文です。", "三番目の文です。四番目。"},
		},
		{
			name: "Japanese closing bracket stays with its sentence",
			text: "彼は「はい。」と言った。それから帰った。",
			cfg:  Config{Size: 14, Overlap: NoOverlap},
			want: []string{"彼は「はい。」と言った。", "それから帰った。"},
		},
		{
			name: "ZWJ family emoji not split",
			text: strings.Repeat(family, 4),
			cfg:  Config{Size: 7, Overlap: NoOverlap},
			want: []string{family, family, family, family},
		},
		{
			name: "flags not split",
			text: "🇺🇸🇯🇵🇫🇷",
			cfg:  Config{Size: 3, Overlap: NoOverlap},
			want: []string{"🇺🇸", "🇯🇵", "🇫🇷"},
		},
		{
			name: "skin tone and variation selector not split",
			text: "👍🏽❤️👍🏽❤️",
			cfg:  Config{Size: 3, Overlap: NoOverlap},
			want: []string{"👍🏽", "❤️", "👍🏽", "❤️"},
		},
		{
			name: "keycap not split",
			text: "1\ufe0f\u20e32\ufe0f\u20e3",
			cfg:  Config{Size: 4, Overlap: NoOverlap},
			want: []string{"1\ufe0f\u20e3", "2\ufe0f\u20e3"},
		},
		{
			name: "combining marks stay with their base",
			text: strings.Repeat("e\u0301", 10),
			cfg:  Config{Size: 5, Overlap: NoOverlap},
			want: []string{
				strings.Repeat("e\u0301", 2), strings.Repeat("e\u0301", 2), strings.Repeat("e\u0301", 2),
				strings.Repeat("e\u0301", 2), strings.Repeat("e\u0301", 2),
			},
		},
		{
			name: "grapheme longer than the chunk is cut",
			text: "a" + strings.Repeat("\u0301", 9),
			cfg:  Config{Size: 5, Overlap: NoOverlap},
			want: []string{"a" + strings.Repeat("\u0301", 4), strings.Repeat("\u0301", 5)},
		},
		{
			name: "Windows paragraph",
			text: "aaa bbb\r\nccc ddd\r\n\r\neee fff\r\n",
			cfg:  Config{Size: 20, Overlap: NoOverlap},
			want: []string{"aaa bbb\r\nccc ddd", "eee fff"},
		},
		{
			name: "Windows lines",
			text: "aaa bb\r\nccc dd\r\neee ff",
			cfg:  Config{Size: 15, Overlap: NoOverlap},
			want: []string{"aaa bb\r\nccc dd", "eee ff"},
		},
		{
			name: "long run of spaces",
			text: "one two" + strings.Repeat(" ", 50) + "three",
			cfg:  Config{Size: 10, Overlap: 4},
			want: []string{"one two", "three"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Split(tt.text, tt.cfg)
			if diff := cmp.Diff(tt.want, texts(got)); diff != "" {
				t.Errorf("Split(%q, %+v) mismatch (-want +got):\n%s", tt.text, tt.cfg, diff)
			}
			checkInvariants(t, tt.text, tt.cfg, got)
		})
	}
}

func TestSplitOffsets(t *testing.T) {
	text := "  \n hello there \r\n"
	got := Split(text, Config{})
	want := []Chunk{{Index: 0, Text: "hello there", Start: 4, End: 15}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}

	text = "ééé\n\nüüü"
	got = Split(text, Config{Size: 4})
	want = []Chunk{
		{Index: 0, Text: "ééé", Start: 0, End: 6},
		{Index: 1, Text: "üüü", Start: 8, End: 14},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestSplitLongWord(t *testing.T) {
	text := strings.Repeat("x", 10000)
	got := Split(text, Config{})
	checkInvariants(t, text, Config{}, got)
	// Hard cuts every 1000 runes, each chunk reaching back 100 runes.
	if len(got) != 11 {
		t.Fatalf("got %d chunks, want 11", len(got))
	}
	for i, c := range got {
		if c.Start != i*900 {
			t.Errorf("chunk %d starts at %d, want %d", i, c.Start, i*900)
		}
		if i < len(got)-1 && c.End-c.Start != DefaultSize {
			t.Errorf("chunk %d has %d runes, want %d", i, c.End-c.Start, DefaultSize)
		}
	}
}

func TestSplitCJKOverlap(t *testing.T) {
	text := strings.Repeat("中文", 600) // 1200 runes
	cfg := Config{Size: 500, Overlap: 50}
	got := Split(text, cfg)
	checkInvariants(t, text, cfg, got)
	var runes [][2]int
	for _, c := range got {
		runes = append(runes, [2]int{utf8.RuneCountInString(text[:c.Start]), utf8.RuneCountInString(text[:c.End])})
	}
	want := [][2]int{{0, 500}, {450, 950}, {900, 1200}}
	if diff := cmp.Diff(want, runes); diff != "" {
		t.Errorf("rune ranges mismatch (-want +got):\n%s", diff)
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		cfg         Config
		wantErr     bool
		size, overl int
	}{
		{cfg: Config{}, size: 1000, overl: 100},
		{cfg: Config{Size: 2000}, size: 2000, overl: 100},
		{cfg: Config{Size: 500}, size: 500, overl: 50},
		{cfg: Config{Size: 5}, size: 5, overl: 0},
		{cfg: Config{Size: 300, Overlap: 299}, size: 300, overl: 299},
		{cfg: Config{Overlap: 999}, size: 1000, overl: 999},
		{cfg: Config{Overlap: 1000}, wantErr: true},
		{cfg: Config{Size: 10, Overlap: 10}, wantErr: true},
		{cfg: Config{Size: -1}, wantErr: true},
		{cfg: Config{Size: 10, Overlap: NoOverlap}, size: 10, overl: 0},
		{cfg: Config{Overlap: -7}, size: 1000, overl: 0},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		if (err != nil) != tt.wantErr {
			t.Errorf("%+v.Validate() = %v, want error %v", tt.cfg, err, tt.wantErr)
		}
		if tt.wantErr {
			continue
		}
		if size, overlap := tt.cfg.normalized(); size != tt.size || overlap != tt.overl {
			t.Errorf("%+v: size, overlap = %d, %d, want %d, %d", tt.cfg, size, overlap, tt.size, tt.overl)
		}
	}
	// Invalid configs are clamped, not rejected, by Split.
	for _, cfg := range []Config{{Size: -5}, {Size: -5, Overlap: 2000}, {Size: 10, Overlap: 50}} {
		text := strings.Repeat("word ", 500)
		checkInvariants(t, text, cfg, Split(text, cfg))
	}
}

// checkInvariants verifies the properties every Split result must have.
func checkInvariants(t *testing.T, text string, cfg Config, chunks []Chunk) {
	t.Helper()
	size, overlap := cfg.normalized()
	if strings.TrimFunc(text, unicode.IsSpace) == "" {
		if chunks != nil {
			t.Fatalf("Split(%q) = %v, want nil", text, chunks)
		}
		return
	}
	if len(chunks) == 0 {
		t.Fatalf("Split(%q) gave no chunk", text)
	}
	covered := make([]bool, len(text)+1)
	for i, c := range chunks {
		if c.Index != i {
			t.Fatalf("chunk %d has Index %d", i, c.Index)
		}
		if c.Start < 0 || c.End > len(text) || c.Start >= c.End {
			t.Fatalf("chunk %d has bad offsets [%d, %d) for %d bytes", i, c.Start, c.End, len(text))
		}
		if c.Text != text[c.Start:c.End] {
			t.Fatalf("chunk %d text %q != input[%d:%d] %q", i, c.Text, c.Start, c.End, text[c.Start:c.End])
		}
		if c.Text == "" || strings.TrimFunc(c.Text, unicode.IsSpace) != c.Text {
			t.Fatalf("chunk %d %q is empty or not trimmed", i, c.Text)
		}
		if utf8.ValidString(text) && !utf8.ValidString(c.Text) {
			t.Fatalf("chunk %d %q is not valid UTF-8", i, c.Text)
		}
		if n := utf8.RuneCountInString(c.Text); n > size {
			t.Fatalf("chunk %d has %d runes, size %d", i, n, size)
		}
		if i > 0 {
			prev := chunks[i-1]
			if c.Start <= prev.Start || c.End <= prev.End {
				t.Fatalf("chunk %d [%d, %d) not after chunk %d [%d, %d)", i, c.Start, c.End, i-1, prev.Start, prev.End)
			}
			if c.Start < prev.End {
				if n := utf8.RuneCountInString(text[c.Start:prev.End]); n > overlap {
					t.Fatalf("chunk %d overlaps the previous one by %d runes, overlap %d", i, n, overlap)
				}
			} else if strings.TrimFunc(text[prev.End:c.Start], unicode.IsSpace) != "" {
				t.Fatalf("content %q between chunks %d and %d is lost", text[prev.End:c.Start], i-1, i)
			}
		}
		for b := c.Start; b < c.End; b++ {
			covered[b] = true
		}
	}
	for i, r := range text {
		if !unicode.IsSpace(r) && !covered[i] {
			t.Fatalf("rune %q at %d is in no chunk", r, i)
		}
	}
}

// pieces are the building blocks of random inputs.
var pieces = []string{
	"word", "a", "longerword", "Ünïcödé", "ß", " ", " ", " ", "  ", "\t", "\n", "\n\n", "\r\n", "\r\n\r\n", "\u00a0", "\u3000",
	".", ". ", "! ", "? ", "...", "\"", "”", "(", ")", "3.14", "e-mail", "https://example.com/a/b",
	"中文", "日本語", "。", "！", "？", "」", "한국어", "e\u0301", "\u0301", "\u200d", "\ufe0f",
	family, "🇺🇸", "🇫", "👍🏽", "1\ufe0f\u20e3", "😀", "\u2029", "\u2028", "\v", "\f",
}

func randomText(r *rand.Rand) string {
	var b strings.Builder
	for n := r.IntN(200); n > 0; n-- {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func TestSplitRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		text := randomText(r)
		size := 1 + r.IntN(60)
		cfg := Config{Size: size, Overlap: r.IntN(size+1) - 1} // NoOverlap .. size-1
		if r.IntN(10) == 0 {
			cfg = Config{}
		}
		got := Split(text, cfg)
		checkInvariants(t, text, cfg, got)
		if again := Split(text, cfg); !cmp.Equal(got, again) {
			t.Fatalf("Split(%q, %+v) is not deterministic", text, cfg)
		}
		if t.Failed() {
			t.Fatalf("input %q, config %+v", text, cfg)
		}
	}
}

func FuzzSplit(f *testing.F) {
	f.Add("", uint16(0), uint16(0))
	f.Add("Hello, world. This is a test.\n\nSecond paragraph.", uint16(10), uint16(3))
	f.Add(strings.Repeat(family, 10), uint16(7), uint16(2))
	f.Add("中文文本。日本語。\r\n\r\n한국어", uint16(3), uint16(1))
	f.Add("e\u0301e\u0301 🇺🇸🇯🇵 \xff\xfe", uint16(2), uint16(1))
	f.Add(strings.Repeat("x", 300), uint16(0), uint16(0))
	f.Fuzz(func(t *testing.T, text string, size, overlap uint16) {
		cfg := Config{Size: int(size % 512), Overlap: int(overlap%512) - 1}
		got := Split(text, cfg)
		checkInvariants(t, text, cfg, got)
		if again := Split(text, cfg); !cmp.Equal(got, again) {
			t.Fatalf("Split is not deterministic")
		}
	})
}

// benchText is about 100 KB of mixed prose: English paragraphs, lists, code,
// CJK and emoji.
func benchText() string {
	paras := []string{
		"PostgreSQL full text search splits documents into tokens, normalizes them into lexemes and stores them in a tsvector. Queries are parsed the same way! Does hybrid search also need embeddings? Yes: the vector branch catches paraphrases.",
		"- item one: configure the embedder\n- item two: run the enrichment worker\n- item three: watch the queue drain",
		"func main() {\n\tfmt.Println(\"hello, world\")\n}",
		"全文检索把文档切分成词元。向量检索能找到语义相近的段落。混合检索结合两者的优点。",
		"日本語の文章も正しく分割されるべきです。句読点で区切ります。",
		"Emoji are fine too 👩\u200d👩\u200d👧 🇺🇸 👍🏽 — and so are accents: café, naïve, résumé, Ångström.",
	}
	var b strings.Builder
	for i := 0; b.Len() < 100<<10; i++ {
		b.WriteString(paras[i%len(paras)])
		if i%3 == 2 {
			b.WriteString("\n\n")
		} else {
			b.WriteString(" ")
		}
	}
	return b.String()
}

func BenchmarkSplit(b *testing.B) {
	text := benchText()
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Split(text, Config{})
	}
}
