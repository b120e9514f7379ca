package toon

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestUnmarshal(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string // JSON, compared with numbers by value and key order kept
	}{
		{"empty document", "", `{}`},
		{"only blank lines", "\n  \n\n", `{}`},
		{"object", "a: 1\nb: text here\nc: true\nd: null", `{"a":1,"b":"text here","c":true,"d":null}`},
		{"trailing newline and CRLF", "a: 1\r\nb:\r\n  c: x\r\n", `{"a":1,"b":{"c":"x"}}`},
		{"byte order mark", "\uFEFFa: 1", `{"a":1}`},
		{"blank lines between fields", "a: 1\n\nb:\n\n  c: 2\n", `{"a":1,"b":{"c":2}}`},
		{"surrounding spaces", "a:    x y   \nb[2]:  1 ,  2 ", `{"a":"x y","b":[1,2]}`},
		{"object value keeps commas", "a: x,y", `{"a":"x,y"}`},
		{"empty inline tokens", "a[3]: x,,\"\"", `{"a":["x","",""]}`},
		{"numbers", "a: 1e6\nb: -0\nc: 1.5000\nd: -1E+03\ne: 0.5\nf: 05\ng: -007\nh: 1.\ni: +1\nj: 123456789012345678901234567890",
			`{"a":1000000,"b":0,"c":1.5,"d":-1000,"e":0.5,"f":"05","g":"-007","h":"1.","i":"+1","j":123456789012345678901234567890}`},
		{"huge exponent kept literally", "a: 1e99999", `{"a":1e99999}`},
		{"quoted primitives stay strings", `a: "true"` + "\n" + `b: "42"` + "\n" + `c: "null"`, `{"a":"true","b":"42","c":"null"}`},
		{"escapes", `a: "x\\y\"z\n\r\t"`, `{"a":"x\\y\"z\n\r\t"}`},
		{"quoted keys", `"a b": 1` + "\n" + `"x-y"[2]: 1,2` + "\n" + `"t"[1]{"f g",h}:` + "\n  1,2",
			`{"a b":1,"x-y":[1,2],"t":[{"f g":1,"h":2}]}`},
		{"duplicate keys: last wins", "a: 1\nb: 2\na: 3", `{"a":3,"b":2}`},
		{"tab delimiter", "items[2\t]{id\tname}:\n  1\tA, B\n  2\tC\ntags[2\t]: a,b\tc", `{"items":[{"id":1,"name":"A, B"},{"id":2,"name":"C"}],"tags":["a,b","c"]}`},
		{"pipe delimiter", "items[2|]{id|name}:\n  1|x,y\n  2|z\ntags[3|]: a|b|c", `{"items":[{"id":1,"name":"x,y"},{"id":2,"name":"z"}],"tags":["a","b","c"]}`},
		{"nested header resets delimiter", "a[1|]:\n  - [2]: x|y,z", `{"a":[["x|y","z"]]}`},
		{"tabular rows end at key-value line", "[1]:\n  - t[2]{a,b}:\n      1,2\n      3,4\n    n: 1", `[{"t":[{"a":1,"b":2},{"a":3,"b":4}],"n":1}]`},
		{"quoted colon in row", "links[2]{id,url}:\n  1,\"http://a:b\"\n  2,\"x\"", `{"links":[{"id":1,"url":"http://a:b"},{"id":2,"url":"x"}]}`},
		{"root primitive", "hello world", `"hello world"`},
		{"root quoted primitive", `"a: b"`, `"a: b"`},
		{"root number", "3.25", `3.25`},
		{"root array", "[2]: 1,2", `[1,2]`},
		{"root tabular", "[2]{a}:\n  1\n  2", `[{"a":1},{"a":2}]`},
		{"root list", "[3]:\n  - 1\n  -\n  - - x", `[1,{},"- x"]`},
		{"list item objects", "[2]:\n  - a: 1\n    b: 2\n  - c:\n      d: 3\n    e[1]: 4",
			`[{"a":1,"b":2},{"c":{"d":3},"e":[4]}]`},
		{"literal key with brackets", "a[x]: 1\nb[2]c: 2", `{"a[x]":1,"b[2]c":2}`},
		{"unicode", "msg: Hello 世界 👋\ntags[2]: 🎉,🎊", `{"msg":"Hello 世界 👋","tags":["🎉","🎊"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Unmarshal([]byte(tt.in))
			if err != nil {
				t.Fatalf("Unmarshal: %v", err)
			}
			want, err := normalizeJSON(raw(tt.want), 0)
			if err != nil {
				t.Fatal(err)
			}
			if tt.name == "huge exponent kept literally" {
				// normalizeJSON rounds it; the decoder keeps the literal.
				want = Object{{"a", json.Number("1e99999")}}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestUnmarshalErrors(t *testing.T) {
	deepObj := strings.Builder{}
	for i := range maxDepth + 1 {
		deepObj.WriteString(strings.Repeat("  ", i) + "a:\n")
	}
	deepList := "[1]:\n" + strings.Repeat("  ", 1)
	for i := 2; i <= maxDepth+1; i++ {
		deepList += "- [1]:\n" + strings.Repeat("  ", i)
	}
	deepList += "- x"

	tests := []struct {
		name string
		in   string
		line int
		msg  string
	}{
		{"tabular too few rows", "items[3]{id,name}:\n  1,a\n  2,b", 1, "declares 3 rows, found 2"},
		{"tabular too many rows", "x: 1\nitems[1]{id}:\n  1\n  2", 2, "declares 1 rows, found 2"},
		{"row width", "items[2]{id,name}:\n  1,a\n  2", 3, "row has 1 values, header declares 2 fields"},
		{"inline count", "tags[5]: a,b,c", 1, "declares 5 values, found 3"},
		{"inline values on empty array", "tags[0]: a", 1, "declares 0 values, found 1"},
		{"list count", "items[3]:\n  - a\n  - b", 1, "declares 3 items, found 2"},
		{"nested list count", "a:\n  b[1]:\n    - [2]: x", 3, "declares 2 values, found 1"},
		{"invalid escape", `name: "bad\xescape"`, 1, `invalid escape sequence \x`},
		{"unterminated string", `name: "open`, 1, "unterminated string"},
		{"unterminated escape", `name: "open\`, 1, "unterminated string"},
		{"text after quote", `name: "a" b`, 1, "unexpected characters after closing quote"},
		{"tab indentation", "a:\n\tb: 1", 2, "tab character in indentation"},
		{"odd indentation", "a:\n   b: 1", 2, "not a multiple of 2"},
		{"missing colon", "a: 1\nkey value", 2, "missing colon after key"},
		{"two root primitives", "hello\nworld", 1, "missing colon after key"},
		{"missing key", ": 1", 1, "missing key before colon"},
		{"unexpected indentation", "a: 1\n  b: 2", 2, "unexpected indentation"},
		{"indented root", "  a: 1", 1, "unexpected indentation"},
		{"list item too deep", "items[1]:\n   - value", 2, "not a multiple of 2"},
		{"blank line in list", "items[2]:\n  - a\n\n  - b", 4, "blank line inside array"},
		{"blank line in rows", "items[2]{a}:\n  1\n\n  2", 4, "blank line inside array"},
		{"content after root array", "[1]: a\nb: 1", 2, "unexpected content after root array"},
		{"keyless header in object", "a: 1\n[1]: x", 2, "array header without key"},
		{"header without colon", "tags[2]", 1, "missing colon after array header"},
		{"fields without colon", "t[1]{a} x", 1, "missing colon after array header"},
		{"unterminated fields", "t[1]{a,b:", 1, "unterminated field list"},
		{"empty field name", "t[1]{a,}:\n  1,2", 1, "empty field name"},
		{"values after tabular header", "t[1]{a}: 1", 1, "unexpected values after tabular array header"},
		{"length too large", "t[1234567890]: a", 1, "too large"},
		{"invalid UTF-8", "a: 1\nb: \xff", 2, "invalid UTF-8"},
		{"object too deep", deepObj.String(), maxDepth, "nesting depth exceeds"},
		{"list too deep", deepList, maxDepth + 1, "nesting depth exceeds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Unmarshal([]byte(tt.in))
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("Unmarshal = %#v, %v; want *SyntaxError", v, err)
			}
			if se.Line != tt.line || !strings.Contains(se.Msg, tt.msg) {
				t.Errorf("error = %q (line %d); want line %d containing %q", err, se.Line, tt.line, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), "toon: line ") {
				t.Errorf("error %q lacks the toon: line prefix", err)
			}
		})
	}
}
