package extract

import (
	"bytes"
	"errors"
	"strconv"
)

// pdfLexer reads PDF objects from b at i.
type pdfLexer struct {
	b []byte
	i int
}

var errPDFSyntax = errors.New("pdf syntax")

func isPDFSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == 0
}

func isPDFDelim(c byte) bool {
	return bytes.IndexByte([]byte("()<>[]{}/%"), c) >= 0
}

// skip passes white space and comments.
func (l *pdfLexer) skip() {
	for l.i < len(l.b) {
		c := l.b[l.i]
		switch {
		case isPDFSpace(c):
			l.i++
		case c == '%':
			for l.i < len(l.b) && l.b[l.i] != '\n' && l.b[l.i] != '\r' {
				l.i++
			}
		default:
			return
		}
	}
}

// keyword reads a regular token (a number, an operator, true/false/null).
func (l *pdfLexer) keyword() string {
	start := l.i
	for l.i < len(l.b) && !isPDFSpace(l.b[l.i]) && !isPDFDelim(l.b[l.i]) {
		l.i++
	}
	return string(l.b[start:l.i])
}

// pdfOp is a content-stream operator.
type pdfOp string

// object reads one value; in a content stream an operator comes back as
// pdfOp. References "N G R" are recognised after two numbers.
func (l *pdfLexer) object(depth int) (any, error) {
	if depth > maxPDFDepth {
		return nil, errPDFSyntax
	}
	l.skip()
	if l.i >= len(l.b) {
		return nil, errPDFSyntax
	}
	switch c := l.b[l.i]; {
	case c == '/':
		l.i++
		start := l.i
		for l.i < len(l.b) && !isPDFSpace(l.b[l.i]) && !isPDFDelim(l.b[l.i]) {
			l.i++
		}
		return pdfName(unescapeName(l.b[start:l.i])), nil
	case c == '(':
		return l.literal()
	case c == '<' && l.i+1 < len(l.b) && l.b[l.i+1] == '<':
		l.i += 2
		d := pdfDict{}
		for {
			l.skip()
			if l.i+1 < len(l.b) && l.b[l.i] == '>' && l.b[l.i+1] == '>' {
				l.i += 2
				return d, nil
			}
			k, err := l.object(depth + 1)
			if err != nil {
				return nil, err
			}
			name, ok := k.(pdfName)
			if !ok {
				return nil, errPDFSyntax
			}
			v, err := l.object(depth + 1)
			if err != nil {
				return nil, err
			}
			d[string(name)] = v
		}
	case c == '<':
		l.i++
		start := l.i
		for l.i < len(l.b) && l.b[l.i] != '>' {
			l.i++
		}
		if l.i >= len(l.b) {
			return nil, errPDFSyntax
		}
		h := make([]byte, 0, l.i-start)
		for _, x := range l.b[start:l.i] {
			if !isPDFSpace(x) {
				h = append(h, x)
			}
		}
		l.i++
		if len(h)%2 == 1 {
			h = append(h, '0')
		}
		out := make([]byte, len(h)/2)
		for j := range out {
			v, err := strconv.ParseUint(string(h[2*j:2*j+2]), 16, 8)
			if err != nil {
				return nil, errPDFSyntax
			}
			out[j] = byte(v)
		}
		return string(out), nil
	case c == '[':
		l.i++
		var arr []any
		for {
			l.skip()
			if l.i < len(l.b) && l.b[l.i] == ']' {
				l.i++
				return arr, nil
			}
			v, err := l.object(depth + 1)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
	case c == ']' || c == '>' || c == ')' || c == '{' || c == '}':
		l.i++
		return nil, errPDFSyntax
	}
	tok := l.keyword()
	switch tok {
	case "":
		l.i++
		return nil, errPDFSyntax
	case "true":
		return true, nil
	case "false":
		return false, nil
	case "null":
		return nil, nil
	}
	f, err := strconv.ParseFloat(tok, 64)
	if err != nil {
		return pdfOp(tok), nil
	}
	// "N G R": a reference.
	save := l.i
	l.skip()
	if g := l.keyword(); g != "" {
		if gen, err := strconv.Atoi(g); err == nil {
			l.skip()
			if l.i < len(l.b) && l.b[l.i] == 'R' && (l.i+1 == len(l.b) || isPDFSpace(l.b[l.i+1]) || isPDFDelim(l.b[l.i+1])) {
				l.i++
				return pdfRef{num: int(f), gen: gen}, nil
			}
		}
	}
	l.i = save
	return f, nil
}

// literal reads a (string) with its escapes and balanced parentheses.
func (l *pdfLexer) literal() (any, error) {
	l.i++ // (
	var out []byte
	depth := 1
	for l.i < len(l.b) {
		c := l.b[l.i]
		l.i++
		switch c {
		case '(':
			depth++
		case ')':
			if depth--; depth == 0 {
				return string(out), nil
			}
		case '\\':
			if l.i >= len(l.b) {
				return nil, errPDFSyntax
			}
			e := l.b[l.i]
			l.i++
			switch e {
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case '\r':
				if l.i < len(l.b) && l.b[l.i] == '\n' {
					l.i++
				}
				continue
			case '\n':
				continue
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for k := 0; k < 2 && l.i < len(l.b) && l.b[l.i] >= '0' && l.b[l.i] <= '7'; k++ {
						v = v*8 + int(l.b[l.i]-'0')
						l.i++
					}
					c = byte(v)
				} else {
					c = e
				}
			}
		}
		out = append(out, c)
	}
	return nil, errPDFSyntax
}

// stream reads the data after a stream dictionary, if one follows.
func (l *pdfLexer) stream(d pdfDict) (pdfStream, bool) {
	l.skip()
	if !bytes.HasPrefix(l.b[l.i:], []byte("stream")) {
		return pdfStream{}, false
	}
	l.i += len("stream")
	if l.i < len(l.b) && l.b[l.i] == '\r' {
		l.i++
	}
	if l.i < len(l.b) && l.b[l.i] == '\n' {
		l.i++
	}
	start := l.i
	end := -1
	if n, ok := d["Length"].(float64); ok && n >= 0 && start+int(n) <= len(l.b) {
		if rest := bytes.TrimLeft(l.b[start+int(n):], " \r\n"); bytes.HasPrefix(rest, []byte("endstream")) {
			end = start + int(n)
		}
	}
	if end < 0 { // the length is indirect or wrong: up to "endstream"
		k := bytes.Index(l.b[start:], []byte("endstream"))
		if k < 0 {
			return pdfStream{}, false
		}
		end = start + k
		for end > start && (l.b[end-1] == '\n' || l.b[end-1] == '\r') {
			end--
		}
	}
	l.i = end
	return pdfStream{dict: d, raw: l.b[start:end]}, true
}

// unescapeName decodes #xx escapes in a name.
func unescapeName(b []byte) string {
	if bytes.IndexByte(b, '#') < 0 {
		return string(b)
	}
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] == '#' && i+2 < len(b) {
			if v, err := strconv.ParseUint(string(b[i+1:i+3]), 16, 8); err == nil {
				out = append(out, byte(v))
				i += 2
				continue
			}
		}
		out = append(out, b[i])
	}
	return string(out)
}
