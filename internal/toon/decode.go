package toon

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// line is one non-blank line of a document.
type line struct {
	num         int    // 1-based line number
	depth       int    // indentation level (two spaces each)
	text        string // content without indentation and trailing spaces
	blankBefore bool   // a blank line separates it from the previous line
}

// splitLines breaks data into non-blank lines, validating UTF-8 and
// indentation.
func splitLines(data []byte) ([]line, error) {
	text := strings.TrimPrefix(string(data), "\uFEFF")
	var lines []line
	blank := false
	for num := 1; ; num++ {
		raw, rest, more := strings.Cut(text, "\n")
		raw = strings.TrimSuffix(raw, "\r")
		if !utf8.ValidString(raw) {
			return nil, &SyntaxError{num, "invalid UTF-8"}
		}
		n := 0
		for n < len(raw) && raw[n] == ' ' {
			n++
		}
		content := strings.TrimRight(raw[n:], " ")
		switch {
		case strings.Trim(content, " \t") == "":
			blank = true
		case content[0] == '\t':
			return nil, &SyntaxError{num, "tab character in indentation"}
		case n%2 != 0:
			return nil, &SyntaxError{num, fmt.Sprintf("indentation of %d spaces is not a multiple of 2", n)}
		default:
			lines = append(lines, line{num: num, depth: n / 2, text: content, blankBefore: blank})
			blank = false
		}
		if !more {
			return lines, nil
		}
		text = rest
	}
}

// msgError is an error without position; the parser adds the line number.
type msgError string

func (e msgError) Error() string { return string(e) }

func errorf(format string, args ...any) error {
	return msgError(fmt.Sprintf(format, args...))
}

func errTooDeepAt(num int) error {
	return &SyntaxError{num, fmt.Sprintf("nesting depth exceeds %d", maxDepth)}
}

// at attaches line number num to err unless it already carries one.
func at(num int, err error) error {
	var se *SyntaxError
	if errors.As(err, &se) {
		return err
	}
	return &SyntaxError{num, err.Error()}
}

// header is a parsed array header: [N<delim?>]{fields}: rest
type header struct {
	n       int
	delim   byte
	tabular bool
	fields  []string
	rest    string // text after the colon, trimmed
}

// headKind classifies the start of a line.
type headKind int

const (
	kindPrimitive headKind = iota // a bare value
	kindField                     // key: [value]
	kindArray                     // [key]<header>: [values]
)

// head is the parsed start of a line.
type head struct {
	kind   headKind
	key    string
	hasKey bool
	rest   string // kindField: the value text after the colon, trimmed
	hdr    header // kindArray
}

// parseHead classifies s (a line without indentation or list marker) as a
// key-value field, an array header or a bare primitive.
func parseHead(s string) (head, error) {
	if s[0] == '"' {
		key, n, err := parseQuoted(s)
		if err != nil {
			return head{}, err
		}
		r := strings.TrimLeft(s[n:], " ")
		switch {
		case strings.HasPrefix(r, ":"):
			return head{kind: kindField, key: key, hasKey: true, rest: trimSpace(r[1:])}, nil
		case strings.HasPrefix(r, "["):
			hdr, ok, err := parseHeader(r)
			if err != nil {
				return head{}, err
			}
			if !ok {
				return head{}, errorf("invalid array header after key")
			}
			return head{kind: kindArray, key: key, hasKey: true, hdr: hdr}, nil
		}
		return head{kind: kindPrimitive}, nil
	}

	i := strings.IndexAny(s, ":[")
	if i < 0 {
		return head{kind: kindPrimitive}, nil
	}
	if s[i] == '[' {
		hdr, ok, err := parseHeader(s[i:])
		if err != nil {
			return head{}, err
		}
		if ok {
			key := trimSpace(s[:i])
			return head{kind: kindArray, key: key, hasKey: key != "", hdr: hdr}, nil
		}
		// Not a header: the whole text before the colon is a literal key.
		i = strings.IndexByte(s, ':')
		if i < 0 {
			return head{kind: kindPrimitive}, nil
		}
	}
	key := trimSpace(s[:i])
	if key == "" {
		return head{}, errorf("missing key before colon")
	}
	return head{kind: kindField, key: key, hasKey: true, rest: trimSpace(s[i+1:])}, nil
}

// parseHeader parses an array header starting at s[0] == '['. ok is false
// if the bracket segment is malformed or followed by unexpected text, in
// which case the line is not a header.
func parseHeader(s string) (h header, ok bool, err error) {
	i := 1
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	digits := s[1:i]
	if digits == "" {
		return h, false, nil
	}
	h.delim = ','
	if i < len(s) && (s[i] == '\t' || s[i] == '|') {
		h.delim = s[i]
		i++
	}
	if i >= len(s) || s[i] != ']' {
		return h, false, nil
	}
	i++
	if len(digits) > 9 {
		return h, false, errorf("array length %s is too large", digits)
	}
	h.n, _ = strconv.Atoi(digits) // at most nine digits: cannot fail

	i = skipSpaces(s, i)
	if i < len(s) && s[i] == '{' {
		end := closingBrace(s, i+1)
		if end < 0 {
			return h, false, errorf("unterminated field list")
		}
		fields, err := parseFields(s[i+1:end], h.delim)
		if err != nil {
			return h, false, err
		}
		h.tabular, h.fields = true, fields
		i = skipSpaces(s, end+1)
		if i >= len(s) || s[i] != ':' {
			return h, false, errorf("missing colon after array header")
		}
	}
	if i >= len(s) {
		return h, false, errorf("missing colon after array header")
	}
	if s[i] != ':' {
		return h, false, nil
	}
	h.rest = trimSpace(s[i+1:])
	return h, true, nil
}

// closingBrace returns the index of the first '}' at or after i that is not
// inside a quoted string, or -1.
func closingBrace(s string, i int) int {
	inQuotes := false
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case inQuotes && c == '\\':
			i++
		case c == '"':
			inQuotes = !inQuotes
		case !inQuotes && c == '}':
			return i
		}
	}
	return -1
}

// parseFields parses the field names of a tabular header.
func parseFields(s string, delim byte) ([]string, error) {
	toks := splitDelimited(s, delim)
	fields := make([]string, len(toks))
	for i, t := range toks {
		switch {
		case t == "":
			return nil, errorf("empty field name in tabular header")
		case t[0] == '"':
			name, n, err := parseQuoted(t)
			if err != nil {
				return nil, err
			}
			if n != len(t) {
				return nil, errorf("unexpected characters after quoted field name")
			}
			fields[i] = name
		default:
			fields[i] = t
		}
	}
	return fields, nil
}

// splitDelimited splits s on unquoted occurrences of delim and trims each
// token.
func splitDelimited(s string, delim byte) []string {
	var toks []string
	inQuotes := false
	start := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inQuotes && c == '\\':
			i++
		case c == '"':
			inQuotes = !inQuotes
		case !inQuotes && c == delim:
			toks = append(toks, trimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(toks, trimSpace(s[start:]))
}

// isFieldLine reports whether s has an unquoted colon before any unquoted
// delim, which marks a key-value line rather than a tabular row.
func isFieldLine(s string, delim byte) bool {
	inQuotes := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case inQuotes && c == '\\':
			i++
		case c == '"':
			inQuotes = !inQuotes
		case inQuotes:
		case c == ':':
			return true
		case c == delim:
			return false
		}
	}
	return false
}

func skipSpaces(s string, i int) int {
	for i < len(s) && s[i] == ' ' {
		i++
	}
	return i
}

func trimSpace(s string) string { return strings.Trim(s, " \t") }

// parseQuoted parses the quoted string at the start of s and returns its
// value and the number of bytes consumed.
func parseQuoted(s string) (string, int, error) {
	// Fast path: no escapes.
	for i := 1; i < len(s); i++ {
		if s[i] == '"' {
			return s[1:i], i + 1, nil
		}
		if s[i] == '\\' {
			break
		}
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			return b.String(), i + 1, nil
		case '\\':
			if i+1 >= len(s) {
				return "", 0, errorf("unterminated string")
			}
			i++
			switch s[i] {
			case '\\', '"':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			default:
				r, _ := utf8.DecodeRuneInString(s[i:])
				return "", 0, errorf("invalid escape sequence \\%c", r)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", 0, errorf("unterminated string")
}

// parseValue decodes a trimmed primitive token.
func parseValue(tok string) (any, error) {
	if tok == "" {
		return "", nil
	}
	if tok[0] == '"' {
		s, n, err := parseQuoted(tok)
		if err != nil {
			return nil, err
		}
		if n != len(tok) {
			return nil, errorf("unexpected characters after closing quote")
		}
		return s, nil
	}
	switch tok {
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	if isNumericLike(tok) && !hasLeadingZero(tok) {
		if c, ok := canonicalNumber(tok); ok {
			return json.Number(c), nil
		}
		return json.Number(tok), nil
	}
	return tok, nil
}

// parseValues decodes the delimited primitives of an inline array or row.
func parseValues(s string, delim byte) ([]any, error) {
	toks := splitDelimited(s, delim)
	vals := make([]any, len(toks))
	for i, t := range toks {
		v, err := parseValue(t)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// parser walks the lines of a document.
type parser struct {
	lines []line
	pos   int
}

func decode(data []byte) (any, error) {
	lines, err := splitLines(data)
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return Object{}, nil
	}
	p := &parser{lines: lines}
	first := &lines[0]
	if first.depth != 0 {
		return nil, &SyntaxError{first.num, "unexpected indentation"}
	}
	h, err := parseHead(first.text)
	if err != nil {
		return nil, at(first.num, err)
	}
	switch {
	case h.kind == kindArray && !h.hasKey:
		p.pos++
		v, err := p.array(h.hdr, first.num, 1, 1)
		if err != nil {
			return nil, err
		}
		if p.pos < len(lines) {
			return nil, &SyntaxError{lines[p.pos].num, "unexpected content after root array"}
		}
		return v, nil
	case h.kind == kindPrimitive && len(lines) == 1:
		v, err := parseValue(first.text)
		if err != nil {
			return nil, at(first.num, err)
		}
		return v, nil
	}
	var b objectBuilder
	if err := p.object(&b, 0, 1); err != nil {
		return nil, err
	}
	return b.result(), nil
}

// object reads the fields at depth into b. nest counts the containers
// enclosing the fields, including the object itself.
func (p *parser) object(b *objectBuilder, depth, nest int) error {
	for p.pos < len(p.lines) {
		ln := &p.lines[p.pos]
		if ln.depth < depth {
			return nil
		}
		if ln.depth > depth {
			return &SyntaxError{ln.num, "unexpected indentation"}
		}
		h, err := parseHead(ln.text)
		if err != nil {
			return at(ln.num, err)
		}
		p.pos++
		v, err := p.field(h, ln.num, depth+1, nest)
		if err != nil {
			return err
		}
		b.set(h.key, v)
	}
	return nil
}

// field decodes the value of the field whose head h was read from line num;
// nested content lives at childDepth.
func (p *parser) field(h head, num, childDepth, nest int) (any, error) {
	switch {
	case h.kind == kindPrimitive:
		return nil, &SyntaxError{num, "missing colon after key"}
	case h.kind == kindArray && !h.hasKey:
		return nil, &SyntaxError{num, "array header without key inside object"}
	case h.kind == kindArray:
		return p.array(h.hdr, num, childDepth, nest+1)
	case h.rest == "":
		if nest+1 > maxDepth {
			return nil, errTooDeepAt(num)
		}
		var b objectBuilder
		if err := p.object(&b, childDepth, nest+1); err != nil {
			return nil, err
		}
		return b.result(), nil
	}
	v, err := parseValue(h.rest)
	if err != nil {
		return nil, at(num, err)
	}
	return v, nil
}

// array decodes the body of the array declared by hdr on line num. Rows and
// list items live at itemDepth; nest counts the enclosing containers,
// including the array itself.
func (p *parser) array(hdr header, num, itemDepth, nest int) (any, error) {
	if nest > maxDepth {
		return nil, errTooDeepAt(num)
	}
	switch {
	case hdr.tabular:
		if len(hdr.fields) > 0 && nest+1 > maxDepth {
			return nil, errTooDeepAt(num) // rows are objects one level down
		}
		return p.tabular(hdr, num, itemDepth)
	case hdr.rest != "":
		vals, err := parseValues(hdr.rest, hdr.delim)
		if err != nil {
			return nil, at(num, err)
		}
		if len(vals) != hdr.n {
			return nil, &SyntaxError{num, fmt.Sprintf("array declares %d values, found %d", hdr.n, len(vals))}
		}
		return vals, nil
	}
	items := []any{}
	for p.pos < len(p.lines) {
		ln := &p.lines[p.pos]
		if ln.depth != itemDepth || (ln.text != "-" && !strings.HasPrefix(ln.text, "- ")) {
			break
		}
		if len(items) > 0 && ln.blankBefore {
			return nil, &SyntaxError{ln.num, "blank line inside array"}
		}
		p.pos++
		v, err := p.listItem(ln, nest)
		if err != nil {
			return nil, err
		}
		items = append(items, v)
	}
	if len(items) != hdr.n {
		return nil, &SyntaxError{num, fmt.Sprintf("array declares %d items, found %d", hdr.n, len(items))}
	}
	return items, nil
}

// tabular decodes the rows of a tabular array.
func (p *parser) tabular(hdr header, num, itemDepth int) (any, error) {
	if hdr.rest != "" {
		return nil, &SyntaxError{num, "unexpected values after tabular array header"}
	}
	rows := []any{}
	for p.pos < len(p.lines) {
		ln := &p.lines[p.pos]
		if ln.depth != itemDepth || isFieldLine(ln.text, hdr.delim) {
			break
		}
		if len(rows) > 0 && ln.blankBefore {
			return nil, &SyntaxError{ln.num, "blank line inside array"}
		}
		vals, err := parseValues(ln.text, hdr.delim)
		if err != nil {
			return nil, at(ln.num, err)
		}
		if len(vals) != len(hdr.fields) {
			return nil, &SyntaxError{ln.num, fmt.Sprintf("row has %d values, header declares %d fields", len(vals), len(hdr.fields))}
		}
		var b objectBuilder
		for i, f := range hdr.fields {
			b.set(f, vals[i])
		}
		rows = append(rows, b.result())
		p.pos++
	}
	if len(rows) != hdr.n {
		return nil, &SyntaxError{num, fmt.Sprintf("array declares %d rows, found %d", hdr.n, len(rows))}
	}
	return rows, nil
}

// listItem decodes the `- ` item on line ln of an array; nest counts the
// containers enclosing the item.
func (p *parser) listItem(ln *line, nest int) (any, error) {
	var h head
	if ln.text != "-" {
		var err error
		if h, err = parseHead(strings.TrimLeft(ln.text[2:], " ")); err != nil {
			return nil, at(ln.num, err)
		}
	}
	switch {
	case ln.text == "-":
		if nest+1 > maxDepth {
			return nil, errTooDeepAt(ln.num)
		}
		return Object{}, nil
	case h.kind == kindPrimitive:
		v, err := parseValue(strings.TrimLeft(ln.text[2:], " "))
		if err != nil {
			return nil, at(ln.num, err)
		}
		return v, nil
	case h.kind == kindArray && !h.hasKey:
		return p.array(h.hdr, ln.num, ln.depth+1, nest+1)
	case nest+1 > maxDepth:
		return nil, errTooDeepAt(ln.num)
	}
	// An object whose first field shares the hyphen line: that field's
	// nested content is two levels deeper, the other fields one level.
	var b objectBuilder
	v, err := p.field(h, ln.num, ln.depth+2, nest+1)
	if err != nil {
		return nil, err
	}
	b.set(h.key, v)
	if err := p.object(&b, ln.depth+1, nest+1); err != nil {
		return nil, err
	}
	return b.result(), nil
}
