package extract

import (
	"bytes"
	"math"
	"strings"
	"unicode/utf16"
)

// pdfFont decodes a font's character codes to text.
type pdfFont struct {
	twoByte bool              // a composite (Type0) font: 2-byte codes
	uni     map[uint32]string // ToUnicode: code → text
	widths  []int             // code lengths the CMap declares (1..4), longest first
}

// font returns the font named name in the page's resources.
func (p *pdfFile) font(res pdfDict, name string, cache map[string]*pdfFont) *pdfFont {
	if f, ok := cache[name]; ok {
		return f
	}
	f := &pdfFont{}
	cache[name] = f
	fonts, _ := p.resolve(res["Font"]).(pdfDict)
	fd, _ := p.resolve(fonts[name]).(pdfDict)
	if fd == nil {
		return f
	}
	f.twoByte = fd["Subtype"] == pdfName("Type0")
	if s, ok := p.resolve(fd["ToUnicode"]).(pdfStream); ok {
		if body, err := p.decode(s); err == nil && body != nil {
			f.uni, f.widths = parseCMap(body)
		}
	}
	return f
}

// decode turns a shown string's bytes into text.
func (f *pdfFont) decode(s string) string {
	b := []byte(s)
	var out strings.Builder
	for i := 0; i < len(b); {
		if f.uni != nil {
			matched := false
			for _, w := range f.widths {
				if i+w > len(b) {
					continue
				}
				var code uint32
				for _, c := range b[i : i+w] {
					code = code<<8 | uint32(c)
				}
				if t, ok := f.uni[code]; ok {
					out.WriteString(t)
					i += w
					matched = true
					break
				}
			}
			if matched {
				continue
			}
		}
		if f.twoByte {
			i += 2 // an unmapped glyph id: no text to give
			continue
		}
		out.WriteRune(winAnsi(b[i]))
		i++
	}
	return out.String()
}

// winAnsi maps a single-byte code to a rune (WinAnsiEncoding's
// 0x80–0x9F block, else Latin-1).
func winAnsi(c byte) rune {
	if c >= 0x80 && c <= 0x9F {
		if r := winAnsiHigh[c-0x80]; r != 0 {
			return r
		}
	}
	return rune(c)
}

var winAnsiHigh = [32]rune{'€', 0, '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', 0, 'Ž', 0,
	0, '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', 0, 'ž', 'Ÿ'}

// parseCMap reads a ToUnicode CMap's bfchar and bfrange sections.
func parseCMap(b []byte) (map[uint32]string, []int) {
	m := map[uint32]string{}
	lens := map[int]bool{}
	l := &pdfLexer{b: b}
	var stack []any
	for l.i < len(l.b) && len(m) < 1<<16 {
		v, err := l.object(0)
		if err != nil {
			continue
		}
		op, isOp := v.(pdfOp)
		if !isOp {
			stack = append(stack, v)
			continue
		}
		switch op {
		case "endbfchar":
			for i := 0; i+1 < len(stack); i += 2 {
				src, ok1 := stack[i].(string)
				dst, ok2 := stack[i+1].(string)
				if ok1 && ok2 && len(src) >= 1 && len(src) <= 4 {
					m[codeOf(src)] = utf16BE(dst)
					lens[len(src)] = true
				}
			}
		case "endbfrange":
			for i := 0; i+2 < len(stack); i += 3 {
				lo, ok1 := stack[i].(string)
				hi, ok2 := stack[i+1].(string)
				if !ok1 || !ok2 || len(lo) < 1 || len(lo) > 4 || len(hi) != len(lo) {
					continue
				}
				a, z := codeOf(lo), codeOf(hi)
				if z < a || z-a > 1<<16 {
					continue
				}
				lens[len(lo)] = true
				switch dst := stack[i+2].(type) {
				case string:
					base := []rune(utf16BE(dst))
					for c := a; c <= z && len(base) > 0; c++ {
						r := append([]rune(nil), base...)
						r[len(r)-1] += rune(c - a)
						m[c] = string(r)
					}
				case []any:
					for k, d := range dst {
						if s, ok := d.(string); ok && a+uint32(k) <= z {
							m[a+uint32(k)] = utf16BE(s)
						}
					}
				}
			}
		}
		stack = stack[:0]
	}
	var widths []int
	for w := 4; w >= 1; w-- {
		if lens[w] {
			widths = append(widths, w)
		}
	}
	return m, widths
}

func codeOf(s string) uint32 {
	var c uint32
	for i := 0; i < len(s); i++ {
		c = c<<8 | uint32(s[i])
	}
	return c
}

func utf16BE(s string) string {
	b := []byte(s)
	u := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
	}
	return string(utf16.Decode(u))
}

// pageText runs a page's content streams and collects the text shown,
// with line breaks where the text moves to a new line and spaces where a
// TJ array leaves a gap.
func (p *pdfFile) pageText(pg pdfDict) (string, error) {
	res, _ := p.resolve(p.inherited(pg, "Resources")).(pdfDict)
	if res == nil {
		res = pdfDict{}
	}
	var content []byte
	switch c := p.resolve(pg["Contents"]).(type) {
	case pdfStream:
		b, err := p.decode(c)
		if err != nil {
			return "", err
		}
		content = b
	case []any:
		for _, part := range c {
			if s, ok := p.resolve(part).(pdfStream); ok {
				b, err := p.decode(s)
				if err != nil {
					return "", err
				}
				content = append(append(content, b...), '\n')
			}
		}
	}
	var out strings.Builder
	fonts := map[string]*pdfFont{}
	cur := &pdfFont{}
	newline := func() {
		if s := out.String(); s != "" && !strings.HasSuffix(s, "\n") {
			out.WriteString("\n")
		}
	}
	show := func(s string) {
		out.WriteString(cur.decode(s))
	}
	l := &pdfLexer{b: content}
	var stack []any
	for l.i < len(l.b) {
		v, err := l.object(0)
		if err != nil {
			stack = stack[:0]
			continue
		}
		op, isOp := v.(pdfOp)
		if !isOp {
			if len(stack) < 64 {
				stack = append(stack, v)
			}
			continue
		}
		switch op {
		case "BI": // an inline image: skip its data
			if k := bytes.Index(l.b[l.i:], []byte("EI")); k >= 0 {
				l.i += k + 2
			} else {
				l.i = len(l.b)
			}
		case "Tf":
			if len(stack) >= 2 {
				if n, ok := stack[len(stack)-2].(pdfName); ok {
					cur = p.font(res, string(n), fonts)
				}
			}
		case "Tj":
			if len(stack) >= 1 {
				if s, ok := stack[len(stack)-1].(string); ok {
					show(s)
				}
			}
		case "'", "\"":
			newline()
			if len(stack) >= 1 {
				if s, ok := stack[len(stack)-1].(string); ok {
					show(s)
				}
			}
		case "TJ":
			if len(stack) >= 1 {
				if arr, ok := stack[len(stack)-1].([]any); ok {
					for _, e := range arr {
						switch x := e.(type) {
						case string:
							show(x)
						case float64:
							if x < -200 && !strings.HasSuffix(out.String(), " ") {
								out.WriteString(" ")
							}
						}
					}
				}
			}
		case "T*":
			newline()
		case "Td", "TD":
			if len(stack) >= 2 {
				if ty, ok := stack[len(stack)-1].(float64); ok && math.Abs(ty) > 0.01 {
					newline()
				} else if tx, ok := stack[len(stack)-2].(float64); ok && tx > 0 && !strings.HasSuffix(out.String(), " ") {
					out.WriteString(" ")
				}
			}
		case "Tm", "ET":
			newline()
		}
		stack = stack[:0]
	}
	return collapseLines(out.String()), nil
}

// inherited reads a page attribute that may sit on an ancestor.
func (p *pdfFile) inherited(pg pdfDict, key string) any {
	d := pg
	for range maxPDFDepth {
		if v, ok := d[key]; ok {
			return v
		}
		parent, ok := p.resolve(d["Parent"]).(pdfDict)
		if !ok {
			return nil
		}
		d = parent
	}
	return nil
}

// collapseLines trims each line and drops runs of empty lines.
func collapseLines(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, ln := range lines {
		ln = strings.Join(strings.Fields(ln), " ")
		if ln != "" {
			out = append(out, ln)
		}
	}
	return strings.Join(out, "\n")
}
