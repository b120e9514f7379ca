package toon

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// gen produces random values of the generic JSON model, biased towards
// the shapes and strings that exercise TOON's special cases.
type gen struct{ r *rand.Rand }

var stringPieces = []string{
	"", "a", "b c", " ", "-", "- ", ":", ",", "\"", "\\", "\n", "\t", "\r",
	"[", "]", "{", "}", "true", "false", "null", "42", "05", "-3.5", "1e6",
	"0", "é", "😀", "世界", "x.y", "#", "|", "\u00a0", "\x01", "\x7f", "ok",
}

func (g gen) str() string {
	var b strings.Builder
	for range g.r.IntN(4) {
		b.WriteString(stringPieces[g.r.IntN(len(stringPieces))])
	}
	return b.String()
}

func (g gen) key() string {
	if g.r.IntN(2) == 0 {
		return []string{"id", "name", "a", "b_c", "x.y", "_z", "score"}[g.r.IntN(7)]
	}
	return g.str()
}

func (g gen) digits(n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte(byte('0' + g.r.IntN(10)))
	}
	return b.String()
}

func (g gen) number() json.Number {
	switch g.r.IntN(6) {
	case 0:
		return json.Number(strconv.Itoa(g.r.IntN(2000) - 1000))
	case 1: // big integer
		return json.Number("9" + g.digits(g.r.IntN(30)))
	case 2: // decimal, possibly with trailing zeros
		return json.Number(strconv.Itoa(g.r.IntN(100)) + "." + g.digits(1+g.r.IntN(8)))
	case 3: // exponent form
		return json.Number("-1." + g.digits(1+g.r.IntN(3)) + "e" + strconv.Itoa(g.r.IntN(60)-30))
	case 4:
		return json.Number([]string{"-0", "0.0", "0e5", "1E+2", "1.000"}[g.r.IntN(5)])
	}
	return json.Number(strconv.FormatFloat(g.r.NormFloat64()*1e3, 'g', -1, 64))
}

func (g gen) primitive() any {
	switch g.r.IntN(6) {
	case 0:
		return nil
	case 1:
		return g.r.IntN(2) == 0
	case 2, 3:
		return g.number()
	}
	return g.str()
}

func (g gen) object(depth int, keys []string) Object {
	var b objectBuilder
	for _, k := range keys {
		b.set(k, g.value(depth+1))
	}
	return b.result()
}

func (g gen) keys() []string {
	keys := make([]string, g.r.IntN(5))
	for i := range keys {
		keys[i] = g.key()
	}
	return keys
}

func (g gen) value(depth int) any {
	if depth > 5 {
		return g.primitive()
	}
	n := g.r.IntN(4)
	switch g.r.IntN(10) {
	case 0, 1, 2:
		return g.primitive()
	case 3, 4:
		return g.object(depth, g.keys())
	case 5: // primitive array
		arr := make([]any, n)
		for i := range arr {
			arr[i] = g.primitive()
		}
		return arr
	case 6: // uniform objects: usually tabular
		keys := g.keys()
		arr := make([]any, n)
		for i := range arr {
			var b objectBuilder
			for _, k := range keys {
				b.set(k, g.primitive())
			}
			if g.r.IntN(8) == 0 { // occasionally reorder or break uniformity
				obj := b.result()
				g.r.Shuffle(len(obj), func(i, j int) { obj[i], obj[j] = obj[j], obj[i] })
				if g.r.IntN(2) == 0 {
					b.set(g.key(), g.value(depth+1))
				}
			}
			arr[i] = b.result()
		}
		return arr
	case 7: // arrays of arrays
		arr := make([]any, n)
		for i := range arr {
			arr[i] = g.value(depth + 1)
			if _, ok := arr[i].([]any); !ok {
				arr[i] = []any{g.primitive(), g.primitive()}
			}
		}
		return arr
	}
	arr := make([]any, n)
	for i := range arr {
		arr[i] = g.value(depth + 1)
	}
	return arr
}

// TestRoundTripProperty checks on random values that Unmarshal(Marshal(v))
// equals the normalised v, that Marshal is idempotent on its own output, and
// that the direct and encoding/json normalisation paths agree.
func TestRoundTripProperty(t *testing.T) {
	iterations := 3000
	if testing.Short() {
		iterations = 500
	}
	g := gen{rand.New(rand.NewPCG(1, 2))}
	for i := range iterations {
		v := g.value(0)
		out, err := Marshal(v)
		if err != nil {
			t.Fatalf("#%d Marshal(%#v): %v", i, v, err)
		}
		checkLayout(t, out)

		got, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("#%d Unmarshal: %v\ninput: %#v\nTOON:\n%s", i, err, v, out)
		}
		if diff := cmp.Diff(tabularOrder(v), got, numberEqual); diff != "" {
			t.Fatalf("#%d round trip mismatch (-want +got):\n%s\nTOON:\n%s", i, diff, out)
		}

		again, err := Marshal(got)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("#%d Marshal not idempotent (err %v):\n%s\n---\n%s", i, err, out, again)
		}

		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		viaJSON, err := Marshal(raw(js))
		if err != nil || !bytes.Equal(viaJSON, out) {
			t.Fatalf("#%d JSON path differs (err %v):\n%s\n---\n%s", i, err, out, viaJSON)
		}
	}
}

var fuzzSeeds = []string{
	`{"results":[{"id":"m1","type":"memory","score":0.0328,"content":"a, b: c","tags":["x","y"]}]}`,
	`{"results":[{"id":"m1","type":"memory","score":0.0328,"content":"a, b: c"},{"id":"m2","type":"doc","score":-0,"content":""}]}`,
	`[]`, `{}`, `[[]]`, `[{}]`, `[[1,2],[]]`, `"x"`, `""`, `"-"`, `" a "`, `null`, `true`, `-0.0`, `1e400`, `1e-400`,
	`9007199254740993`, `{"":{"":[""]}}`, `{"a":[{"b":[{"c":1}]}]}`, `[1,"a",{"k":[1]},[{"z":null}]]`,
	`{"a\nb":"c\td","\"":"\\"}`, `{"k":"05","n":"1e6","t":"true","u":"😀 世界"}`,
	`[{"a":1,"b":2},{"b":3,"a":4}]`, `{"a":1,"a":2}`,
}

func FuzzRoundTrip(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		out, err := Marshal(raw(data))
		if errors.Is(err, errTooDeep) {
			return
		}
		if err != nil {
			t.Fatalf("Marshal(%q): %v", data, err)
		}
		checkLayout(t, out)
		got, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("Unmarshal: %v\nJSON: %s\nTOON:\n%s", err, data, out)
		}

		// Compare with an independent decoding by encoding/json.
		want := mustJSON(t, string(data))
		if !inexactNumbers(want) {
			if !modelEqual(want, plain(got)) {
				t.Fatalf("round trip mismatch:\nwant %#v\ngot  %#v\nJSON: %s\nTOON:\n%s", want, got, data, out)
			}
		}

		// Key order survives: re-encoding the decoded value is identical.
		again, err := Marshal(got)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("Marshal not idempotent (err %v):\n%s\n---\n%s", err, out, again)
		}
	})
}

func FuzzUnmarshal(f *testing.F) {
	seeds := []string{
		"", "a: 1", "a:\n  b: 2", "[2]: a,b", "[1]:\n  - x", "items[2]{id,name}:\n  1,a\n  2,b",
		"items[1]:\n  - t[1]{a}:\n      1\n    n: 2", "\"k\"[1|]: a|b", "x[2\t]: a\tb", `s: "a\n\"b\""`,
		"- a", "[1]:\n  -", "a[1]:\n  - [1]:\n    - [0]:", "hello", "\"x\": 1\r\n", "a: 1e99999",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Unmarshal(data)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Line < 1 {
				t.Fatalf("Unmarshal(%q) error %v is not a positioned *SyntaxError", data, err)
			}
			return
		}
		// Whatever decodes must encode and decode again.
		out, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(Unmarshal(%q)): %v", data, err)
		}
		back, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("Unmarshal(Marshal(Unmarshal(%q))): %v\nTOON:\n%s", data, err, out)
		}
		if !inexactNumbers(v) {
			if want := tabularOrder(v); !modelEqual(want, back) {
				t.Fatalf("re-encoding changed the value:\nwant %#v\ngot  %#v\ninput: %q\nTOON:\n%s", want, back, data, out)
			}
		}
	})
}
