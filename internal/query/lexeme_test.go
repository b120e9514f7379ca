package query

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// pgGolden holds the lexeme sets PostgreSQL 15.20 (Debian 12, database
// encoding UTF8, LC_CTYPE C.UTF-8, glibc 2.36) computes for each input with
//
//	select array_agg(lexeme order by lexeme collate "C")
//	from unnest(to_tsvector('simple', $1))
//
// nil means no lexeme. The data is stored here so the tests need no database.
var pgGolden = []struct {
	in   string
	want []string
}{
	{"hello", []string{"hello"}},
	{"Hello World", []string{"hello", "world"}},
	{"ABC-1234", []string{"-1234", "abc"}},
	{"abc-1234", []string{"-1234", "abc"}},
	{"PROJ-42", []string{"-42", "proj"}},
	{"JIRA-1234:", []string{"-1234", "jira"}},
	{"e-mail", []string{"e", "e-mail", "mail"}},
	{"state-of-the-art", []string{"art", "of", "state", "state-of-the-art", "the"}},
	{"co-operate-2", []string{"2", "co", "co-operate", "operate"}},
	{"x-1-y", []string{"-1", "x", "y"}},
	{"foo--bar", []string{"bar", "foo"}},
	{"-foo-", []string{"foo"}},
	{"a.b@example.com", []string{"a.b@example.com"}},
	{"John.Doe+tag@Example.COM", []string{"john.doe", "tag@example.com"}},
	{"user@localhost", []string{"localhost", "user"}},
	{"https://example.com/a/b.html", []string{"/a/b.html", "example.com", "example.com/a/b.html"}},
	{"http://localhost:5432", []string{"5432", "localhost"}},
	{"https://www.example.com:8080/path?x=1#frag", []string{"/path?x=1#frag", "www.example.com:8080", "www.example.com:8080/path?x=1#frag"}},
	{"ftp://files.example.org/pub/file.tar.gz", []string{"/pub/file.tar.gz", "files.example.org", "files.example.org/pub/file.tar.gz"}},
	{"example.com/a", []string{"/a", "example.com", "example.com/a"}},
	{"www.postgresql.org", []string{"www.postgresql.org"}},
	{"foo.bar.com", []string{"foo.bar.com"}},
	{"sub_domain.example.com", []string{"sub_domain.example.com"}},
	{"192.168.0.1", []string{"192.168.0.1"}},
	{"/usr/local/bin/go.mod", []string{"/usr/local/bin/go.mod"}},
	{"./scripts/pgtest.sh", []string{"./scripts/pgtest.sh"}},
	{"../internal/query/query.go", []string{"../internal/query/query.go"}},
	{"~/notes/todo.md", []string{"~/notes/todo.md"}},
	{"C:\\Users\\Bob\\report.docx", []string{"bob", "c", "report.docx", "users"}},
	{"internal/chunk/chunk.go", []string{"internal/chunk/chunk.go"}},
	{"README.md", []string{"readme.md"}},
	{"main.go:42", []string{"main.go:42"}},
	{"CamelCaseIdentifier", []string{"camelcaseidentifier"}},
	{"parseHTTPRequest", []string{"parsehttprequest"}},
	{"snake_case_name", []string{"case", "name", "snake"}},
	{"__init__", []string{"init"}},
	{"_private", []string{"private"}},
	{"v1.2.3", []string{"v1.2.3"}},
	{"1.2.3", []string{"1.2.3"}},
	{"1.2.3.4.5", []string{"1.2.3.4.5"}},
	{"go1.26", []string{"go1.26"}},
	{"3.14", []string{"3.14"}},
	{"-3.14", []string{"-3.14"}},
	{"+42", []string{"+42"}},
	{"-17", []string{"-17"}},
	{"1e10", []string{"1e10"}},
	{"6.02e23", []string{"6.02e23"}},
	{"1.5E-3", []string{"1.5e-3"}},
	{"1,000,000", []string{"000", "1"}},
	{"100%", []string{"100"}},
	{"$19.99", []string{"19.99"}},
	{"o'neil", []string{"neil", "o"}},
	{"don't", []string{"don", "t"}},
	{"rock'n'roll", []string{"n", "rock", "roll"}},
	{"\"quoted\"", []string{"quoted"}},
	{"(parenthesized)", []string{"parenthesized"}},
	{"[bracketed]", []string{"bracketed"}},
	{"{braced}", []string{"braced"}},
	{"foo_bar", []string{"bar", "foo"}},
	{"foo/bar", []string{"foo/bar"}},
	{"foo.bar", []string{"foo.bar"}},
	{"foo:bar", []string{"bar", "foo"}},
	{"foo::bar", []string{"bar", "foo"}},
	{"key=value", []string{"key", "value"}},
	{"a&b", []string{"a", "b"}},
	{"&amp;", nil},
	{"&#x41;", nil},
	{"<b>bold</b>", []string{"bold"}},
	{"<script>alert(1)</script>after", []string{"after"}},
	{"<!-- comment -->text", []string{"text"}},
	{"#hashtag", []string{"hashtag"}},
	{"@mention", []string{"mention"}},
	{"C++", []string{"c"}},
	{"C#", []string{"c"}},
	{".NET", []string{"net"}},
	{"node.js", []string{"node.js"}},
	{"UTF-8", []string{"-8", "utf"}},
	{"x86_64", []string{"64", "x86"}},
	{"sha256:abcdef0123", []string{"abcdef0123", "sha256"}},
	{"0xDEADBEEF", []string{"0xdeadbeef"}},
	{"2024-01-15", []string{"-01", "-15", "2024"}},
	{"2024-01-15T10:30:00Z", []string{"-01", "-15", "00z", "2024", "30", "t10"}},
	{"12:30", []string{"12", "30"}},
	{"中文", []string{"中文"}},
	{"中文文本检索", []string{"中文文本检索"}},
	{"日本語のテキスト。", []string{"日本語のテキスト"}},
	{"한국어", []string{"한국어"}},
	{"Ελληνικά", []string{"ελληνικά"}},
	{"Русский-текст", []string{"русский", "русский-текст", "текст"}},
	{"café", []string{"café"}},
	{"naïve", []string{"naïve"}},
	{"Straße", []string{"straße"}},
	{"İstanbul", []string{"istanbul"}},
	{"ÀÉÎÕÜ", []string{"àéîõü"}},
	{"cafe\u0301", []string{"cafe\u0301"}},
	{"\u0301abc", []string{"abc"}},
	{"e\u0301-mail", []string{"e\u0301", "e\u0301-mail", "mail"}},
	{"٣٤٥", []string{"٣٤٥"}},
	{"abc٣", []string{"abc٣"}},
	{"Ⅻ", []string{"ⅻ"}},
	{"ⓐⓑ", []string{"ⓐⓑ"}},
	{"½", nil},
	{"x²", []string{"x"}},
	{"👍", nil},
	{"👩\u200d👩\u200d👧", nil},
	{"🇺🇸", nil},
	{"emoji😀inside", []string{"emoji", "inside"}},
	{"a\u200db", []string{"a", "b"}},
	{"zero\u200bwidth", []string{"width", "zero"}},
	{"nbsp\u00a0here", []string{"here", "nbsp"}},
	{"tab\there", []string{"here", "tab"}},
	{"line\nbreak", []string{"break", "line"}},
	{"--- !!!", nil},
	{"...!!!???", nil},
	{"→", nil},
	{"ǅungla", []string{"ǆungla"}},
	{"ﬁle", []string{"ﬁle"}},
	{"\u1b44abc\u1b44", []string{"abc\u1b44"}},
	{"ab\u1ae9cd", []string{"ab\u1ae9cd"}},
	{"x\U0002b739y", []string{"x", "y"}},
	{"a.b.c.d.e.f.g", []string{"a.b.c.d.e.f.g"}},
	{"a-b-c-d-e-f-g", []string{"a", "a-b-c-d-e-f-g", "b", "c", "d", "e", "f", "g"}},
	{"1-2-3", []string{"-2", "-3", "1"}},
	{"abc-", []string{"abc"}},
	{"-", nil},
	{"", nil},
}

// lexemeExceptions documents inputs where Lexemes knowingly differs from
// PostgreSQL, with what Lexemes returns instead. The golden test fails on
// any other difference, and on an exception that no longer differs.
var lexemeExceptions = map[string]struct {
	got    []string
	reason string
}{
	"ab\u1ae9cd": {
		got: []string{"ab", "cd"},
		reason: "U+1AE9 is unassigned; PostgreSQL's display-width table covers the whole " +
			"U+1AB0..U+1AFF block as zero width, so it continues a word there",
	},
	"x\U0002b739y": {
		got: []string{"x\U0002b739y"},
		reason: "U+2B739 was added in Unicode 15; glibc 2.36 (Unicode 14) does not know it " +
			"is a letter, Go's unicode tables (Unicode 15) do",
	},
}

func TestLexemesGolden(t *testing.T) {
	seen := map[string]bool{}
	for _, tt := range pgGolden {
		if seen[tt.in] {
			t.Errorf("duplicate golden input %q", tt.in)
		}
		seen[tt.in] = true
		got := Lexemes(tt.in)
		if ex, ok := lexemeExceptions[tt.in]; ok {
			if cmp.Equal(got, tt.want) {
				t.Errorf("Lexemes(%q) now matches PostgreSQL; remove the exception", tt.in)
			} else if diff := cmp.Diff(ex.got, got); diff != "" {
				t.Errorf("Lexemes(%q) differs from the documented exception (-want +got):\n%s", tt.in, diff)
			}
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Lexemes(%q) differs from PostgreSQL (-pg +got):\n%s", tt.in, diff)
		}
	}
	for in := range lexemeExceptions {
		if !seen[in] {
			t.Errorf("exception %q has no golden entry", in)
		}
	}
}

func TestLexemesTokenLength(t *testing.T) {
	// PostgreSQL indexes tokens of up to 2047 bytes.
	for _, tt := range []struct {
		in   string
		want int
	}{
		{strings.Repeat("a", 2047), 1},
		{strings.Repeat("a", 2048), 0},
		{strings.Repeat("é", 1023), 1}, // 2046 bytes
		{strings.Repeat("é", 1024), 0}, // 2048 bytes
		// The compound is too long, its parts are not.
		{strings.Repeat("a", 1500) + "-" + strings.Repeat("b", 1500), 2},
	} {
		if got := len(Lexemes(tt.in)); got != tt.want {
			t.Errorf("Lexemes(%d bytes) has %d lexemes, want %d", len(tt.in), got, tt.want)
		}
	}
}

func TestLexemesLongInput(t *testing.T) {
	// Long repetitive inputs, which make the parser backtrack, terminate
	// and give sane lexemes.
	for _, in := range []string{
		strings.Repeat("a.", 5000) + "com",
		strings.Repeat("a-", 5000),
		strings.Repeat("1.", 5000),
		strings.Repeat("-1", 5000),
		strings.Repeat("<a ", 5000),
		strings.Repeat("x@", 5000),
		strings.Repeat("/a", 5000),
		strings.Repeat("&#", 5000),
	} {
		for _, l := range Lexemes(in) {
			if l == "" {
				t.Errorf("empty lexeme for %.20q...", in)
			}
		}
	}
}

func FuzzLexemes(f *testing.F) {
	for _, tt := range pgGolden {
		f.Add(tt.in)
	}
	f.Add("\xff\xfe\xc3")
	f.Add("<script>x</script><style>y</style>")
	f.Fuzz(func(t *testing.T, in string) {
		got := Lexemes(in)
		if len(got) > len(in) {
			// Parse relies on it to skip counting a short term's lexemes.
			t.Fatalf("Lexemes(%q) has %d lexemes, more than its %d bytes", in, len(got), len(in))
		}
		for i, l := range got {
			if l == "" {
				t.Fatalf("Lexemes(%q) has an empty lexeme", in)
			}
			if strings.ToLower(l) != l {
				t.Fatalf("Lexemes(%q) has %q, not lowercase", in, l)
			}
			if utf8.ValidString(in) && !utf8.ValidString(l) {
				t.Fatalf("Lexemes(%q) has invalid UTF-8 %q", in, l)
			}
			if i > 0 && got[i-1] >= l {
				t.Fatalf("Lexemes(%q) = %q: not sorted and distinct", in, got)
			}
		}
	})
}

func BenchmarkLexemes(b *testing.B) {
	in := "ABC-1234 https://example.com/a/b.html a.b@example.com v1.2.3 café-au-lait 中文"
	b.ReportAllocs()
	for b.Loop() {
		Lexemes(in)
	}
}

// proseChunk is a chunk-sized (about 1,000 runes) piece of ordinary notes:
// words, punctuation, identifiers, a URL, an address, numbers.
var proseChunk = strings.Repeat("Met with Dana about the Q3 roadmap; PROJ-42 is blocked on the "+
	"e-mail migration (see https://wiki.example.com/ops/mail-v2.html). Action items: "+
	"update README.md, bump go1.26 in CI, ping dana.smith@example.org by 2024-01-15. ", 4)

func BenchmarkVectorProse(b *testing.B) {
	b.SetBytes(int64(len(proseChunk)))
	b.ReportAllocs()
	for b.Loop() {
		Vector(proseChunk)
	}
}
