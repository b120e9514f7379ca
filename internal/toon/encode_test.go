package toon

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// searchResult mirrors the shape of a search API response.
type searchResult struct {
	ID      string   `json:"id"`
	Type    string   `json:"type"`
	Score   float64  `json:"score"`
	Content string   `json:"content"`
	Tags    []string `json:"tags,omitempty"`
}

type searchResponse struct {
	Results []searchResult `json:"results"`
}

// raw is shorthand for a JSON input whose key order is preserved.
type raw = json.RawMessage

func TestMarshalGolden(t *testing.T) {
	tests := []struct {
		name string
		in   any
		want string
	}{
		{
			name: "search results tabular",
			in: searchResponse{Results: []searchResult{
				{ID: "0195f3a2-7c1e-7b3a-9a41-3c9e5d2f8a10", Type: "memory", Score: 0.0328, Content: "a, b: c"},
				{ID: "0195f3a2-7c1e-7b3a-9a41-3c9e5d2f8a11", Type: "document", Score: 0.0161, Content: "plain text"},
			}},
			want: `results[2]{id,type,score,content}:
  0195f3a2-7c1e-7b3a-9a41-3c9e5d2f8a10,memory,0.0328,"a, b: c"
  0195f3a2-7c1e-7b3a-9a41-3c9e5d2f8a11,document,0.0161,plain text`,
		},
		{
			name: "search results with tags fall back to list",
			in:   raw(`{"results":[{"id":"m1","type":"memory","score":0.0328,"content":"a, b: c","tags":["x","y"]}]}`),
			want: `results[1]:
  - id: m1
    type: memory
    score: 0.0328
    content: "a, b: c"
    tags[2]: x,y`,
		},
		{
			name: "objects with different keys fall back to list",
			in:   raw(`{"items":[{"a":1,"b":2},{"a":3,"c":4},{}]}`),
			want: `items[3]:
  - a: 1
    b: 2
  - a: 3
    c: 4
  -`,
		},
		{
			name: "tabular with rows in different key order",
			in:   raw(`[{"a":1,"b":"x"},{"b":"y","a":2}]`),
			want: `[2]{a,b}:
  1,x
  2,y`,
		},
		{
			name: "empty arrays",
			in:   raw(`{"items":[],"nested":{"list":[]},"lists":[[],[1]]}`),
			want: `items[0]:
nested:
  list[0]:
lists[2]:
  - [0]:
  - [1]: 1`,
		},
		{name: "root empty array", in: raw(`[]`), want: `[0]:`},
		{name: "root empty object", in: raw(`{}`), want: ``},
		{name: "root string", in: "hello world", want: `hello world`},
		{name: "root quoted string", in: "a: b", want: `"a: b"`},
		{name: "root number", in: 42, want: `42`},
		{name: "root null", in: nil, want: `null`},
		{name: "root primitive array", in: []string{"a", "b c", ""}, want: `[3]: a,b c,""`},
		{
			name: "nested objects",
			in:   raw(`{"user":{"id":7,"profile":{"name":"Ada","active":true,"manager":null},"prefs":{}},"ok":false}`),
			want: `user:
  id: 7
  profile:
    name: Ada
    active: true
    manager: null
  prefs:
ok: false`,
		},
		{
			name: "list items whose first field is complex",
			in:   raw(`[{"rows":[{"k":1},{"k":2}],"n":1},{"list":[[1],{"a":1}],"n":2},{"obj":{"x":1},"n":3},{"empty":{}}]`),
			want: `[4]:
  - rows[2]{k}:
      1
      2
    n: 1
  - list[2]:
      - [1]: 1
      - a: 1
    n: 2
  - obj:
      x: 1
    n: 3
  - empty:`,
		},
		{
			name: "arrays of arrays",
			in:   raw(`{"pairs":[[1,2],["a","b,c"]],"deep":[[[1]],[{"a":1}]]}`),
			want: `pairs[2]:
  - [2]: 1,2
  - [2]: a,"b,c"
deep[2]:
  - [1]:
    - [1]: 1
  - [1]{a}:
    1`,
		},
		{
			name: "mixed array",
			in:   raw(`[1,"text",{"a":1},[true,null],null]`),
			want: `[5]:
  - 1
  - text
  - a: 1
  - [2]: true,null
  - null`,
		},
		{
			name: "strings that need quotes",
			in: raw(`{
				"empty": "",
				"leading": " x",
				"trailing": "x ",
				"nbsp": "x\u00a0",
				"t": "true", "f": "false", "n": "null",
				"int": "42", "neg": "-3.5", "exp": "1e6", "expUpper": "2E-3", "zero": "05",
				"comma": "a,b", "colon": "a:b", "quote": "say \"hi\"", "backslash": "C:\\dir",
				"brackets": "[x]", "braces": "{x}",
				"newline": "a\nb", "tab": "a\tb", "cr": "a\rb", "ctrl": "a\u0001b",
				"dash": "-", "dashItem": "- item", "dashWord": "-x"
			}`),
			want: `empty: ""
leading: " x"
trailing: "x "
nbsp: "x` + "\u00a0" + `"
t: "true"
f: "false"
n: "null"
int: "42"
neg: "-3.5"
exp: "1e6"
expUpper: "2E-3"
zero: "05"
comma: "a,b"
colon: "a:b"
quote: "say \"hi\""
backslash: "C:\\dir"
brackets: "[x]"
braces: "{x}"
newline: "a\nb"
tab: "a\tb"
cr: "a\rb"
ctrl: "a` + "\x01" + `b"
dash: "-"
dashItem: "- item"
dashWord: "-x"`,
		},
		{
			name: "strings that stay unquoted",
			in:   raw(`{"words":"hello world","caps":"True","inner":"a-b","version":"1.2.3","plus":"+5","hex":"0x1F","dot":".5","hash":"#tag","pipe":"a|b","url":"https//x"}`),
			want: `words: hello world
caps: True
inner: a-b
version: 1.2.3
plus: +5
hex: 0x1F
dot: .5
hash: #tag
pipe: a|b
url: https//x`,
		},
		{
			name: "quoting inside arrays",
			in:   raw(`{"tags":["a,b","","true","7","-","x y"],"rows":[{"v":"a,b"},{"v":"c:d"}]}`),
			want: `tags[6]: "a,b","","true","7","-",x y
rows[2]{v}:
  "a,b"
  "c:d"`,
		},
		{
			name: "keys",
			in:   raw(`{"plain":1,"_under":2,"dotted.key":3,"my-key":4,"1abc":5,"":6,"a b":7,"a:b":8,"quo\"te":9,"list-x":[1],"tab-x":[{"a b":1}]}`),
			want: `plain: 1
_under: 2
dotted.key: 3
"my-key": 4
"1abc": 5
"": 6
"a b": 7
"a:b": 8
"quo\"te": 9
"list-x"[1]: 1
"tab-x"[1]{"a b"}:
  1`,
		},
		{
			name: "unicode and emoji",
			in:   raw(`{"message":"Hello 世界 👋","tags":["🎉","🎊","café"],"日本":"語","mixed":"naïve ✓"}`),
			want: `message: Hello 世界 👋
tags[3]: 🎉,🎊,café
"日本": 語
mixed: naïve ✓`,
		},
		{
			name: "numbers",
			in: raw(`{"int":42,"neg":-7,"big":9007199254740993,"huge":123456789012345678901234567890,
				"float":0.0328,"pi":3.14159,"trailing":1.5000,"whole":2.0,"exp":1e6,"small":1.5e-7,
				"negExp":-2.5E+3,"negZero":-0,"negZeroFloat":-0.0,"zeroExp":0e10}`),
			want: `int: 42
neg: -7
big: 9007199254740993
huge: 123456789012345678901234567890
float: 0.0328
pi: 3.14159
trailing: 1.5
whole: 2
exp: 1000000
small: 0.00000015
negExp: -2500
negZero: 0
negZeroFloat: 0
zeroExp: 0`,
		},
		{
			name: "Go numbers",
			in: map[string]any{
				"a_u64":   uint64(math.MaxUint64),
				"b_i64":   int64(math.MinInt64),
				"c_f64":   1e21,
				"d_f32":   float32(0.1),
				"e_nan":   math.NaN(),
				"f_inf":   math.Inf(-1),
				"g_negz":  math.Copysign(0, -1),
				"h_num":   json.Number("1E+2"),
				"i_tiny":  5e-324,
				"j_float": 0.1,
			},
			want: `a_u64: 18446744073709551615
b_i64: -9223372036854775808
c_f64: 1000000000000000000000
d_f32: 0.1
e_nan: null
f_inf: null
g_negz: 0
h_num: 100
i_tiny: 0.` + strings.Repeat("0", 323) + `5
j_float: 0.1`,
		},
		{
			name: "struct field order and tags",
			in: struct {
				Zebra string `json:"zebra"`
				Apple int    `json:"apple"`
				Skip  string `json:"-"`
				Mango bool   `json:"mango,omitempty"`
				Kiwi  *int   `json:"kiwi"`
			}{Zebra: "z", Apple: 1, Skip: "gone"},
			want: `zebra: z
apple: 1
kiwi: null`,
		},
		{
			name: "Object keeps its order",
			in:   Object{{"z", 1}, {"a", Object{{"y", "b"}, {"x", "a"}}}},
			want: `z: 1
a:
  y: b
  x: a`,
		},
		{
			name: "Go map keys are sorted",
			in:   map[string]int{"b": 2, "a": 1, "c": 3},
			want: `a: 1
b: 2
c: 3`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Marshal(tt.in)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("Marshal mismatch (-want +got):\n%s", diff)
			}
			checkLayout(t, got)

			// Every golden document decodes back to the normalised input
			// (tabular rows take the header's key order).
			want, err := normalize(tt.in, 0)
			if err != nil {
				t.Fatal(err)
			}
			want = tabularOrder(want)
			back, err := Unmarshal(got)
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			if diff := cmp.Diff(want, back); diff != "" {
				t.Errorf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMarshalErrors(t *testing.T) {
	deep := any("leaf")
	for range maxDepth + 1 {
		deep = []any{deep}
	}
	deepJSON := strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1)
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"unsupported type", make(chan int), "unsupported type"},
		{"NaN in struct", struct{ F float64 }{math.NaN()}, "unsupported value"},
		{"invalid json.Number", json.Number("0x10"), "invalid number literal"},
		{"too deep", deep, "nesting depth"},
		{"too deep via JSON", raw(deepJSON), "nesting depth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Marshal(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Marshal = %q, %v; want error containing %q", out, err, tt.want)
			}
		})
	}
	if _, err := Marshal(raw(deepJSON)); !errors.Is(err, errTooDeep) {
		t.Errorf("depth error %v does not wrap errTooDeep", err)
	}
	// Exactly maxDepth containers is fine.
	ok := strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth)
	out, err := Marshal(raw(ok))
	if err != nil {
		t.Fatalf("Marshal(%d nested arrays): %v", maxDepth, err)
	}
	if _, err := Unmarshal(out); err != nil {
		t.Fatalf("Unmarshal(%d nested arrays): %v", maxDepth, err)
	}
}

func TestCanonicalNumber(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"0", "0", true},
		{"-0", "0", true},
		{"-0.000", "0", true},
		{"0e999999999999", "0", true},
		{"12", "12", true},
		{"-12.50", "-12.5", true},
		{"1.0", "1", true},
		{"0.0328", "0.0328", true},
		{"1e6", "1000000", true},
		{"1E+2", "100", true},
		{"1.5e-7", "0.00000015", true},
		{"123.456e1", "1234.56", true},
		{"123.456e-5", "0.00123456", true},
		{"-9007199254740993", "-9007199254740993", true},
		{"0.5e1", "5", true},
		{"1e1024", "1" + strings.Repeat("0", 1024), true},
		{"1e1025", "", false},
		{"1e-1024", "0." + strings.Repeat("0", 1023) + "1", true},
		{"1e-1026", "", false},
		{"1e9999999999", "", false},
		{"abc", "", false},
		{"1.", "", false},
		{".5", "", false},
		{"1e", "", false},
		{"--1", "", false},
	}
	for _, tt := range tests {
		got, ok := canonicalNumber(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("canonicalNumber(%q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
	// Numbers too long to expand fall back to float64.
	for in, want := range map[string]any{
		"1e5000":  nil,
		"-1e5000": nil,
		"1e-5000": json.Number("0"),
		"1.5e308": json.Number("15" + strings.Repeat("0", 307)),
	} {
		if got := normalizeNumber(in); got != want {
			t.Errorf("normalizeNumber(%q) = %#v, want %#v", in, got, want)
		}
	}
}

func TestObject(t *testing.T) {
	o := Object{{"b", json.Number("1")}, {"a", Object{{"z", []any{"x", nil}}}}}
	if v, ok := o.Get("b"); !ok || v != json.Number("1") {
		t.Errorf("Get(b) = %v, %v", v, ok)
	}
	if _, ok := o.Get("missing"); ok {
		t.Error("Get(missing) reported a value")
	}
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"b":1,"a":{"z":["x",null]}}`; string(b) != want {
		t.Errorf("MarshalJSON = %s, want %s", b, want)
	}
	if b, _ := json.Marshal(Object(nil)); string(b) != "{}" {
		t.Errorf("MarshalJSON(nil) = %s", b)
	}

	var bld objectBuilder
	for i := range 40 {
		bld.set(string(rune('a'+i%20)), i)
	}
	got := bld.result()
	if len(got) != 20 || got[0].Key != "a" || got[0].Value != 20 || got[19].Value != 39 {
		t.Errorf("objectBuilder duplicate handling: %v", got)
	}
}

// TestJSONScanner checks the scanner that reads json.Marshal output against
// encoding/json on inputs with escapes, odd whitespace and invalid UTF-8.
func TestJSONScanner(t *testing.T) {
	inputs := []string{
		`"\u00e9\ud83d\ude00 \ud800x \udc00\ud800 \/\b\f\n\r\t\"\\ \u003c&"`,
		` { "a" : [ 1 , -2.5e-3 , true , false , null , { } , [ ] ] , "b\u0000" : "" } `,
		"\"\xff\xe3a\xed\xa0\x80\"",
		`{"k":"v","k":"w","x":{"k":1}}`,
		`[1E+2,0.0,-0,123456789012345678901234567890]`,
	}
	for _, in := range inputs {
		got, err := normalizeJSON(raw(in), 0)
		if err != nil {
			t.Fatalf("normalizeJSON(%q): %v", in, err)
		}
		if want := mustJSON(t, in); !modelEqual(want, plain(got)) {
			t.Errorf("normalizeJSON(%q) = %#v, want %#v", in, got, want)
		}
	}
	for _, in := range []string{`[1,]`, `{"a" 1}`, `"\x"`, `"\u12"`, `tru`, `01`, `[1 2]`} {
		sc := jsonScanner{data: []byte(in)}
		if v, err := sc.value(0); err == nil && sc.pos == len(in) {
			t.Errorf("scanner accepted %q as %#v", in, v)
		}
	}
}
