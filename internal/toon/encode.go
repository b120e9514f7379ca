package toon

import (
	"encoding/json"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// delimiter is the document and active delimiter used by the encoder.
const delimiter = ','

// encoder writes the generic model as TOON lines into buf.
type encoder struct {
	buf []byte
}

// line starts a new line indented to depth. Every line the encoder writes
// has content, so a non-empty buffer means a previous line exists.
func (e *encoder) line(depth int) {
	if len(e.buf) > 0 {
		e.buf = append(e.buf, '\n')
	}
	for range depth {
		e.buf = append(e.buf, ' ', ' ')
	}
}

func (e *encoder) root(v any) {
	switch x := v.(type) {
	case Object:
		e.object(x, 0)
	case []any:
		e.array(0, 1, false, "", false, x)
	default:
		e.line(0)
		e.primitive(x)
	}
}

// object writes the members of o as fields at depth.
func (e *encoder) object(o Object, depth int) {
	for _, m := range o {
		e.field(m.Key, m.Value, depth)
	}
}

// field writes one `key: value` field at depth.
func (e *encoder) field(key string, v any, depth int) {
	switch x := v.(type) {
	case []any:
		e.array(depth, depth+1, false, key, true, x)
	case Object:
		e.line(depth)
		e.key(key)
		e.buf = append(e.buf, ':')
		e.object(x, depth+1)
	default:
		e.line(depth)
		e.key(key)
		e.buf = append(e.buf, ':', ' ')
		e.primitive(x)
	}
}

// array writes arr. Its header line is at depth, optionally preceded by the
// list marker (dash) and a key; rows and list items go at itemDepth.
func (e *encoder) array(depth, itemDepth int, dash bool, key string, hasKey bool, arr []any) {
	e.line(depth)
	if dash {
		e.buf = append(e.buf, '-', ' ')
	}
	if hasKey {
		e.key(key)
	}
	e.buf = append(e.buf, '[')
	e.buf = strconv.AppendInt(e.buf, int64(len(arr)), 10)
	e.buf = append(e.buf, ']')

	if allPrimitive(arr) {
		e.buf = append(e.buf, ':')
		for i, v := range arr {
			if i == 0 {
				e.buf = append(e.buf, ' ')
			} else {
				e.buf = append(e.buf, delimiter)
			}
			e.primitive(v)
		}
		return
	}

	if fields := tabularFields(arr); fields != nil {
		e.buf = append(e.buf, '{')
		for i, m := range fields {
			if i > 0 {
				e.buf = append(e.buf, delimiter)
			}
			e.key(m.Key)
		}
		e.buf = append(e.buf, '}', ':')
		for _, v := range arr {
			row := v.(Object) // tabularFields checked every element
			e.line(itemDepth)
			for i, f := range fields {
				if i > 0 {
					e.buf = append(e.buf, delimiter)
				}
				if i < len(row) && row[i].Key == f.Key {
					e.primitive(row[i].Value)
				} else {
					val, _ := row.Get(f.Key)
					e.primitive(val)
				}
			}
		}
		return
	}

	e.buf = append(e.buf, ':')
	for _, v := range arr {
		e.listItem(v, itemDepth)
	}
}

// listItem writes v as a `- ` item at depth.
func (e *encoder) listItem(v any, depth int) {
	switch x := v.(type) {
	case []any:
		e.array(depth, depth+1, true, "", false, x)
	case Object:
		if len(x) == 0 {
			e.line(depth)
			e.buf = append(e.buf, '-')
			return
		}
		// The first field shares the hyphen line; its nested content goes
		// two levels deeper and the remaining fields one level deeper.
		first := x[0]
		switch fv := first.Value.(type) {
		case []any:
			e.array(depth, depth+2, true, first.Key, true, fv)
		case Object:
			e.line(depth)
			e.buf = append(e.buf, '-', ' ')
			e.key(first.Key)
			e.buf = append(e.buf, ':')
			e.object(fv, depth+2)
		default:
			e.line(depth)
			e.buf = append(e.buf, '-', ' ')
			e.key(first.Key)
			e.buf = append(e.buf, ':', ' ')
			e.primitive(fv)
		}
		e.object(x[1:], depth+1)
	default:
		e.line(depth)
		e.buf = append(e.buf, '-', ' ')
		e.primitive(x)
	}
}

// primitive writes a string, json.Number, bool or nil.
func (e *encoder) primitive(v any) {
	switch x := v.(type) {
	case string:
		if needsQuotes(x) {
			e.buf = appendQuoted(e.buf, x)
		} else {
			e.buf = append(e.buf, x...)
		}
	case json.Number:
		e.buf = append(e.buf, x...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	default: // nil; the model holds nothing else here
		e.buf = append(e.buf, "null"...)
	}
}

// key writes an object key or field name, quoted unless it is an
// identifier-like key.
func (e *encoder) key(k string) {
	if isUnquotedKey(k) {
		e.buf = append(e.buf, k...)
	} else {
		e.buf = appendQuoted(e.buf, k)
	}
}

func isPrimitive(v any) bool {
	switch v.(type) {
	case []any, Object:
		return false
	}
	return true
}

func allPrimitive(arr []any) bool {
	for _, v := range arr {
		if !isPrimitive(v) {
			return false
		}
	}
	return true
}

// tabularFields returns the members of the first element if arr can be
// written in tabular form: every element is an object with the same
// non-empty set of keys and only primitive values. Otherwise it returns nil.
func tabularFields(arr []any) Object {
	if len(arr) == 0 {
		return nil
	}
	first, ok := arr[0].(Object)
	if !ok || len(first) == 0 {
		return nil
	}
	var index map[string]struct{} // built on demand for reordered rows
	for _, v := range arr {
		row, ok := v.(Object)
		if !ok || len(row) != len(first) {
			return nil
		}
		for i, m := range row {
			if !isPrimitive(m.Value) {
				return nil
			}
			if m.Key == first[i].Key {
				continue
			}
			// Keys are unique, so equal sizes plus membership of every key
			// mean equal key sets.
			if index == nil {
				index = make(map[string]struct{}, len(first))
				for _, f := range first {
					index[f.Key] = struct{}{}
				}
			}
			if _, ok := index[m.Key]; !ok {
				return nil
			}
		}
	}
	return first
}

// isUnquotedKey reports whether k matches ^[A-Za-z_][A-Za-z0-9_.]*$.
func isUnquotedKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c == '_' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z':
		case i > 0 && (isDigit(c) || c == '.'):
		default:
			return false
		}
	}
	return true
}

// needsQuotes reports whether the string value s must be quoted so that a
// decoder reads it back as the same string.
func needsQuotes(s string) bool {
	if s == "" || s == "true" || s == "false" || s == "null" || s[0] == '-' {
		return true
	}
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return true
	}
	if isNumericLike(s) {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ':', '"', '\\', '[', ']', '{', '}', delimiter:
			return true
		default:
			// Newline, carriage return and tab must be escaped; other
			// control characters cannot be escaped but are quoted to make
			// them stand out.
			if c < 0x20 || c == 0x7f {
				return true
			}
		}
	}
	return false
}

// appendQuoted appends s as a quoted TOON string, escaping backslash,
// double quote, newline, carriage return and tab.
func appendQuoted(buf []byte, s string) []byte {
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		var esc byte
		switch s[i] {
		case '\\':
			esc = '\\'
		case '"':
			esc = '"'
		case '\n':
			esc = 'n'
		case '\r':
			esc = 'r'
		case '\t':
			esc = 't'
		default:
			continue
		}
		buf = append(buf, s[start:i]...)
		buf = append(buf, '\\', esc)
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"')
}
