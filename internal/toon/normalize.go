package toon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

var errTooDeep = fmt.Errorf("toon: nesting depth exceeds %d", maxDepth)

// normalize converts v into the generic model (Object, []any, json.Number,
// string, bool, nil). depth is the number of containers enclosing v.
// Common generic types are converted directly; anything else goes through
// encoding/json.
func normalize(v any, depth int) (any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case bool:
		return x, nil
	case string:
		return validUTF8(x), nil
	case json.Number:
		s := string(x)
		if s == "" {
			return json.Number("0"), nil // as encoding/json writes it
		}
		if !validJSONNumber(s) {
			return nil, fmt.Errorf("toon: invalid number literal %q", s)
		}
		return normalizeNumber(s), nil
	case float64:
		return floatNumber(x, 64), nil
	case float32:
		return floatNumber(float64(x), 32), nil
	case int:
		return json.Number(strconv.FormatInt(int64(x), 10)), nil
	case int8:
		return json.Number(strconv.FormatInt(int64(x), 10)), nil
	case int16:
		return json.Number(strconv.FormatInt(int64(x), 10)), nil
	case int32:
		return json.Number(strconv.FormatInt(int64(x), 10)), nil
	case int64:
		return json.Number(strconv.FormatInt(x, 10)), nil
	case uint:
		return json.Number(strconv.FormatUint(uint64(x), 10)), nil
	case uint8:
		return json.Number(strconv.FormatUint(uint64(x), 10)), nil
	case uint16:
		return json.Number(strconv.FormatUint(uint64(x), 10)), nil
	case uint32:
		return json.Number(strconv.FormatUint(uint64(x), 10)), nil
	case uint64:
		return json.Number(strconv.FormatUint(x, 10)), nil
	case []any:
		if x == nil {
			return nil, nil // encoding/json writes a nil slice as null
		}
		if depth >= maxDepth {
			return nil, errTooDeep
		}
		arr := make([]any, len(x))
		for i, e := range x {
			n, err := normalize(e, depth+1)
			if err != nil {
				return nil, err
			}
			arr[i] = n
		}
		return arr, nil
	case map[string]any:
		if x == nil {
			return nil, nil // encoding/json writes a nil map as null
		}
		if depth >= maxDepth {
			return nil, errTooDeep
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var b objectBuilder
		for _, k := range keys {
			n, err := normalize(x[k], depth+1)
			if err != nil {
				return nil, err
			}
			b.set(validUTF8(k), n)
		}
		return b.result(), nil
	case Object:
		if depth >= maxDepth {
			return nil, errTooDeep
		}
		var b objectBuilder
		for _, m := range x {
			n, err := normalize(m.Value, depth+1)
			if err != nil {
				return nil, err
			}
			b.set(validUTF8(m.Key), n)
		}
		return b.result(), nil
	}
	return normalizeJSON(v, depth)
}

// normalizeJSON normalises v through encoding/json: json.Marshal applies
// struct tags and json.Marshaler, and its output is then scanned into the
// model, keeping object key order.
func normalizeJSON(v any, depth int) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("toon: %w", err)
	}
	sc := jsonScanner{data: raw}
	out, err := sc.value(depth)
	if err == nil {
		sc.skipSpace()
		if sc.pos != len(sc.data) {
			err = sc.errorf("unexpected data after value")
		}
	}
	if err != nil {
		if errors.Is(err, errTooDeep) {
			return nil, err
		}
		return nil, fmt.Errorf("toon: reading JSON: %w", err)
	}
	return out, nil
}

// jsonScanner decodes JSON into the model. It reads the output of
// json.Marshal, which is already validated, and is much cheaper than
// json.Decoder.Token; it still reports malformed input as an error.
type jsonScanner struct {
	data    []byte
	pos     int
	members []Member          // members of the objects being read
	keys    map[string]string // interned object keys
}

func (s *jsonScanner) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", s.pos, fmt.Sprintf(format, args...))
}

func (s *jsonScanner) skipSpace() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// next skips whitespace and returns the next byte without consuming it, or
// 0 at the end of the input.
func (s *jsonScanner) next() byte {
	s.skipSpace()
	if s.pos < len(s.data) {
		return s.data[s.pos]
	}
	return 0
}

// value reads one JSON value; depth is the number of enclosing containers.
func (s *jsonScanner) value(depth int) (any, error) {
	switch c := s.next(); {
	case c == '{':
		if depth >= maxDepth {
			return nil, errTooDeep
		}
		s.pos++
		// Members collect on a shared stack so each object is allocated
		// once, at its final size.
		base := len(s.members)
		if s.next() != '}' {
			for {
				if s.next() != '"' {
					return nil, s.errorf("expected object key")
				}
				key, err := s.key()
				if err != nil {
					return nil, err
				}
				if s.next() != ':' {
					return nil, s.errorf("expected colon after object key")
				}
				s.pos++
				v, err := s.value(depth + 1)
				if err != nil {
					return nil, err
				}
				s.members = append(s.members, Member{key, v})
				if s.next() != ',' {
					break
				}
				s.pos++
			}
		}
		if s.next() != '}' {
			return nil, s.errorf("expected comma or end of object")
		}
		s.pos++
		b := objectBuilder{obj: make(Object, 0, len(s.members)-base)}
		for _, m := range s.members[base:] {
			b.set(m.Key, m.Value)
		}
		clear(s.members[base:]) // drop references for the GC
		s.members = s.members[:base]
		return b.result(), nil
	case c == '[':
		if depth >= maxDepth {
			return nil, errTooDeep
		}
		s.pos++
		arr := []any{}
		if s.next() == ']' {
			s.pos++
			return arr, nil
		}
		for {
			v, err := s.value(depth + 1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
			switch s.next() {
			case ',':
				s.pos++
			case ']':
				s.pos++
				return arr, nil
			default:
				return nil, s.errorf("expected comma or end of array")
			}
		}
	case c == '"':
		return s.str()
	case c == '-' || isDigit(c):
		start := s.pos
		for s.pos < len(s.data) && strings.IndexByte("+-.eE0123456789", s.data[s.pos]) >= 0 {
			s.pos++
		}
		lit := string(s.data[start:s.pos])
		if !validJSONNumber(lit) {
			return nil, s.errorf("invalid number %q", lit)
		}
		return normalizeNumber(lit), nil
	}
	for _, lit := range [...]struct {
		text string
		val  any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if bytes.HasPrefix(s.data[s.pos:], []byte(lit.text)) {
			s.pos += len(lit.text)
			return lit.val, nil
		}
	}
	return nil, s.errorf("unexpected input")
}

// key reads an object key, reusing the string of an equal earlier key:
// keys repeat across the elements of an array.
func (s *jsonScanner) key() (string, error) {
	start := s.pos + 1
	for i := start; i < len(s.data); i++ {
		switch s.data[i] {
		case '"':
			if k, ok := s.keys[string(s.data[start:i])]; ok {
				s.pos = i + 1
				return k, nil
			}
			k, err := s.str()
			if err == nil {
				if s.keys == nil {
					s.keys = make(map[string]string)
				}
				s.keys[k] = k
			}
			return k, err
		case '\\':
			return s.str()
		}
	}
	return s.str()
}

// str reads a JSON string starting at the opening quote. Like
// encoding/json, it replaces invalid UTF-8 and unpaired surrogates with
// U+FFFD.
func (s *jsonScanner) str() (string, error) {
	s.pos++ // opening quote
	start := s.pos
	for i := start; i < len(s.data); i++ {
		switch s.data[i] {
		case '"':
			s.pos = i + 1
			return validUTF8(string(s.data[start:i])), nil
		case '\\':
			return s.escapedStr(start)
		}
	}
	return "", s.errorf("unterminated string")
}

// escapedStr is the slow path of str for strings containing escapes.
func (s *jsonScanner) escapedStr(start int) (string, error) {
	var b []byte
	for i := start; i < len(s.data); {
		c := s.data[i]
		switch {
		case c == '"':
			s.pos = i + 1
			return validUTF8(string(b)), nil
		case c != '\\':
			b = append(b, c)
			i++
			continue
		}
		if i+1 >= len(s.data) {
			break
		}
		switch e := s.data[i+1]; e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(s.data[i+2:])
			if !ok {
				s.pos = i
				return "", s.errorf("invalid unicode escape")
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if len(s.data) > i+1 && s.data[i] == '\\' && s.data[i+1] == 'u' {
					if r2, ok := hex4(s.data[i+2:]); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b = utf8.AppendRune(b, dec)
							i += 6
							continue
						}
					}
				}
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
			continue
		default:
			s.pos = i
			return "", s.errorf("invalid escape")
		}
		i += 2
	}
	return "", s.errorf("unterminated string")
}

// hex4 decodes the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n), err == nil
}

// validUTF8 replaces each invalid byte of s with U+FFFD, as encoding/json
// does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = utf8.AppendRune(b, utf8.RuneError)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return string(b)
}
