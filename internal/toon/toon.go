// Package toon encodes and decodes TOON (Token-Oriented Object Notation), a
// compact, line-oriented, indentation-based text form of the JSON data model
// intended for LLM prompts. See https://github.com/toon-format/spec.
//
// The encoder uses the spec's lossless defaults: two-space indentation, the
// comma delimiter, no key folding, and none of the lossy options of the v4
// working draft (null fields, empty strings and empty arrays are always
// emitted, empty arrays as `key[0]:`). Objects become `key: value`
// lines, arrays of primitives are written inline (`tags[2]: a,b`), arrays of
// objects that share one set of primitive-valued keys are written as tables
// (`items[2]{id,name}:` followed by one row per element), and every other
// array is written in list form (`key[N]:` followed by `- ` items). A
// table's columns follow the first element's key order, so rows whose keys
// come in another order decode in the column order. Strings are quoted only
// when the spec requires it, and additionally when they contain a control
// character, which TOON has no escape for.
//
// # Data model
//
// [Marshal] accepts any value encoding/json can marshal. Values are first
// normalised into the generic JSON model:
//
//   - objects become [Object], which keeps key order: struct fields keep their
//     declaration order, Go maps are sorted by key (as encoding/json does), and
//     an [Object] keeps its own order; on duplicate keys the last value wins and
//     the first position is kept;
//   - arrays become []any;
//   - numbers become [encoding/json.Number] in canonical decimal form (no
//     exponent, no superfluous zeros, -0 written as 0), so integers of any size
//     keep their exact digits;
//   - strings, booleans and nil stay as they are.
//
// Values of the common generic types (nil, bool, string, the integer and
// floating-point types, json.Number, map[string]any, []any and [Object]) are
// normalised directly; NaN and ±Inf floats among them become null, as the
// spec requires. Every other type goes through encoding/json, so json struct
// tags and json.Marshaler are honoured, but encoding/json rejects NaN and ±Inf
// there (for example in a struct field) and Marshal returns that error.
// Numbers whose exact expansion would need more than 1024 padding zeros (such
// as a json.Number of 1e5000) are rounded to float64 first, so they become
// null when they overflow and 0 when they underflow.
//
// [Unmarshal] returns the same model: [Object] for objects, []any for
// arrays, json.Number (canonical form where the expansion is small enough,
// otherwise the literal text) for numbers, and string, bool or nil.
// Documents nested more deeply than 1000 containers are rejected by both
// functions.
package toon

import (
	"encoding/json"
	"fmt"
)

// maxDepth is the deepest container nesting Marshal and Unmarshal accept.
const maxDepth = 1000

// Member is one key/value pair of an [Object].
type Member struct {
	Key   string
	Value any
}

// Object is a JSON object that preserves the order of its keys. Keys are
// unique in every Object produced by this package.
type Object []Member

// Get returns the value stored under key and whether the key is present.
func (o Object) Get(key string) (any, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// MarshalJSON encodes o as a JSON object with its keys in order, so values
// returned by [Unmarshal] can be turned back into JSON with json.Marshal.
func (o Object) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			buf = append(buf, ',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.Value)
		if err != nil {
			return nil, err
		}
		buf = append(buf, k...)
		buf = append(buf, ':')
		buf = append(buf, v...)
	}
	return append(buf, '}'), nil
}

// SyntaxError reports malformed TOON input, with the 1-based line on which
// the problem was found.
type SyntaxError struct {
	Line int
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("toon: line %d: %s", e.Line, e.Msg)
}

// Marshal returns the TOON encoding of v. The output uses LF line endings
// and has neither trailing spaces nor a trailing newline; an empty object
// encodes as an empty document.
func Marshal(v any) ([]byte, error) {
	model, err := normalize(v, 0)
	if err != nil {
		return nil, err
	}
	var e encoder
	e.root(model)
	return e.buf, nil
}

// Unmarshal decodes a TOON document into the generic model described in the
// package documentation. It understands the forms Marshal emits plus the
// tab and pipe delimiters, and it is strict: declared array lengths and
// tabular row widths must match, indentation must be a multiple of two
// spaces without tabs, blank lines may not separate array items, and only
// the escapes \\ \" \n \r \t are valid. It is lenient where this costs
// no ambiguity: a trailing newline, CRLF line endings, a leading byte order
// mark, blank lines between fields, extra spaces around values, and
// unquoted keys that are not identifiers (text before the colon) are
// accepted. Errors are of type *SyntaxError. An empty document decodes to
// an empty [Object].
func Unmarshal(data []byte) (any, error) {
	return decode(data)
}

// objectBuilder accumulates object members, replacing the value of a
// repeated key in place (last value wins, first position kept).
type objectBuilder struct {
	obj   Object
	index map[string]int
}

// indexThreshold is the object size above which objectBuilder switches from
// a linear scan to a map for duplicate detection.
const indexThreshold = 16

func (b *objectBuilder) set(key string, v any) {
	if b.index != nil {
		if i, ok := b.index[key]; ok {
			b.obj[i].Value = v
			return
		}
		b.index[key] = len(b.obj)
		b.obj = append(b.obj, Member{key, v})
		return
	}
	for i := range b.obj {
		if b.obj[i].Key == key {
			b.obj[i].Value = v
			return
		}
	}
	b.obj = append(b.obj, Member{key, v})
	if len(b.obj) > indexThreshold {
		b.index = make(map[string]int, 2*len(b.obj))
		for i, m := range b.obj {
			b.index[m.Key] = i
		}
	}
}

// result returns the built object, never nil.
func (b *objectBuilder) result() Object {
	if b.obj == nil {
		return Object{}
	}
	return b.obj
}
