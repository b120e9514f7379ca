package extract

import (
	"bytes"
	"compress/zlib"
	"encoding/ascii85"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
)

// PDF bounds: the file is untrusted (compressed streams inflate, page
// trees can loop).
const (
	maxPDFObjects = 200_000
	maxPDFBytes   = 64 << 20 // decompressed, all streams together
	maxPDFDepth   = 64
)

// pdfDoc extracts a PDF's text page by page: each page is a section
// ("Page N"), its text in content-stream order, decoded through the fonts'
// ToUnicode maps (or their single-byte encodings). Title, author and the
// creation date come from the document information dictionary. Encrypted
// PDFs and pages drawn only as images yield no text.
func pdfDoc(data []byte) (*Document, error) {
	if !bytes.HasPrefix(bytes.TrimLeft(data, " \r\n\t\x00"), []byte("%PDF-")) {
		return nil, fmt.Errorf("%w: PDF: no %%PDF- header", ErrCorrupt)
	}
	p := &pdfFile{objs: map[int]pdfObj{}, budget: maxPDFBytes}
	if err := p.scan(data); err != nil {
		return nil, err
	}
	if p.encrypted {
		return nil, fmt.Errorf("%w: encrypted PDF", ErrUnsupported)
	}
	doc := &Document{Metadata: map[string]any{}}
	if info, ok := p.resolve(p.info).(pdfDict); ok {
		doc.Title = strings.TrimSpace(p.text(info["Title"]))
		doc.Author = strings.TrimSpace(p.text(info["Author"]))
		doc.Published = pdfDate(p.text(info["CreationDate"]))
	}
	pages := p.pages()
	doc.Metadata["pages"] = len(pages)
	for i, pg := range pages {
		t, err := p.pageText(pg)
		if err != nil {
			return nil, err
		}
		if t = strings.TrimSpace(t); t != "" {
			doc.Sections = append(doc.Sections, Section{Path: []string{fmt.Sprintf("Page %d", i+1)}, Text: t})
		}
	}
	return doc, nil
}

// PDF values: nil, bool, float64, string (a literal or hex string's
// bytes), pdfName, []any (array), pdfDict, pdfRef, pdfStream.
type (
	pdfName   string
	pdfDict   map[string]any
	pdfRef    struct{ num, gen int }
	pdfStream struct {
		dict pdfDict
		raw  []byte
	}
	pdfObj any
)

type pdfFile struct {
	objs      map[int]pdfObj
	info      any
	root      any
	encrypted bool
	budget    int64
}

var objHeader = regexp.MustCompile(`(\d+)\s+(\d+)\s+obj\b`)

// scan reads every "N G obj … endobj" in the file (the cross-reference
// table is not trusted: damaged files are common), then the objects inside
// object streams, and the trailers.
func (p *pdfFile) scan(data []byte) error {
	locs := objHeader.FindAllSubmatchIndex(data, -1)
	if len(locs) > maxPDFObjects {
		return fmt.Errorf("%w: PDF: more than %d objects", ErrCorrupt, maxPDFObjects)
	}
	for _, l := range locs {
		num, _ := strconv.Atoi(string(data[l[2]:l[3]]))
		lx := &pdfLexer{b: data, i: l[1]}
		v, err := lx.object(0)
		if err != nil {
			continue // a damaged object: skip it
		}
		if d, ok := v.(pdfDict); ok {
			if s, ok := lx.stream(d); ok {
				v = s
			}
		}
		p.objs[num] = v // a later definition (an update) wins
	}
	// Trailers: the classic "trailer << … >>" and cross-reference streams.
	for _, m := range regexp.MustCompile(`trailer\s*<<`).FindAllIndex(data, -1) {
		lx := &pdfLexer{b: data, i: m[1] - 2}
		if d, err := lx.object(0); err == nil {
			p.trailer(d)
		}
	}
	nums := make([]int, 0, len(p.objs))
	for n := range p.objs {
		nums = append(nums, n)
	}
	sort.Ints(nums)
	for _, n := range nums {
		s, ok := p.objs[n].(pdfStream)
		if !ok {
			continue
		}
		switch s.dict["Type"] {
		case pdfName("XRef"):
			p.trailer(s.dict)
		case pdfName("ObjStm"):
			if err := p.objStream(s); err != nil {
				return err
			}
		}
	}
	return nil
}

func (p *pdfFile) trailer(v any) {
	d, ok := v.(pdfDict)
	if !ok {
		return
	}
	if d["Encrypt"] != nil {
		p.encrypted = true
	}
	if d["Root"] != nil {
		p.root = d["Root"]
	}
	if d["Info"] != nil {
		p.info = d["Info"]
	}
}

// objStream reads the objects packed in an object stream.
func (p *pdfFile) objStream(s pdfStream) error {
	body, err := p.decode(s)
	if err != nil || body == nil {
		return err
	}
	n, _ := s.dict["N"].(float64)
	first, _ := s.dict["First"].(float64)
	if n <= 0 || n > maxPDFObjects || first < 0 || int(first) > len(body) {
		return nil
	}
	lx := &pdfLexer{b: body[:int(first)]}
	for range int(n) {
		num, err1 := lx.object(0)
		off, err2 := lx.object(0)
		nf, ok1 := num.(float64)
		of, ok2 := off.(float64)
		if err1 != nil || err2 != nil || !ok1 || !ok2 {
			return nil
		}
		if _, defined := p.objs[int(nf)]; defined {
			continue
		}
		at := int(first) + int(of)
		if at < 0 || at >= len(body) {
			continue
		}
		if v, err := (&pdfLexer{b: body, i: at}).object(0); err == nil {
			p.objs[int(nf)] = v
		}
	}
	return nil
}

// resolve follows references (a bounded number of times).
func (p *pdfFile) resolve(v any) any {
	for range 16 {
		r, ok := v.(pdfRef)
		if !ok {
			return v
		}
		v = p.objs[r.num]
	}
	return nil
}

// decode applies a stream's filters; an unsupported filter (an image
// codec) gives nil.
func (p *pdfFile) decode(s pdfStream) ([]byte, error) {
	var filters []any
	switch f := p.resolve(s.dict["Filter"]).(type) {
	case pdfName:
		filters = []any{f}
	case []any:
		filters = f
	}
	b := s.raw
	for _, f := range filters {
		var out []byte
		var err error
		switch p.resolve(f) {
		case pdfName("FlateDecode"), pdfName("Fl"):
			var zr io.ReadCloser
			if zr, err = zlib.NewReader(bytes.NewReader(b)); err == nil {
				out, err = io.ReadAll(io.LimitReader(zr, p.budget+1))
				if err == io.ErrUnexpectedEOF && len(out) > 0 {
					err = nil // a truncated stream: keep what inflated
				}
			}
		case pdfName("ASCIIHexDecode"), pdfName("AHx"):
			s := strings.Map(func(r rune) rune {
				if strings.ContainsRune(" \t\r\n\f", r) {
					return -1
				}
				return r
			}, strings.TrimSuffix(strings.TrimSpace(string(b)), ">"))
			if len(s)%2 == 1 {
				s += "0"
			}
			out, err = hex.DecodeString(s)
		case pdfName("ASCII85Decode"), pdfName("A85"):
			src := bytes.TrimSuffix(bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(b), []byte("<~"))), []byte("~>"))
			out = make([]byte, 4*len(src)/5+4)
			var n int
			n, _, err = ascii85.Decode(out, src, true)
			out = out[:n]
		default:
			return nil, nil
		}
		if err != nil {
			return nil, nil // undecodable: no text from it
		}
		if p.budget -= int64(len(out)); p.budget < 0 {
			return nil, fmt.Errorf("%w: PDF: more than %d bytes once decompressed", ErrCorrupt, maxPDFBytes)
		}
		b = out
	}
	return b, nil
}

// pages lists the page dictionaries in document order.
func (p *pdfFile) pages() []pdfDict {
	var out []pdfDict
	seen := map[pdfRef]bool{}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if r, ok := v.(pdfRef); ok {
			if seen[r] {
				return
			}
			seen[r] = true
		}
		d, ok := p.resolve(v).(pdfDict)
		if !ok || depth > maxPDFDepth {
			return
		}
		if d["Type"] == pdfName("Page") || (d["Kids"] == nil && d["Contents"] != nil) {
			out = append(out, d)
			return
		}
		kids, _ := p.resolve(d["Kids"]).([]any)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	if cat, ok := p.resolve(p.root).(pdfDict); ok {
		walk(cat["Pages"], 0)
	}
	if len(out) == 0 { // no catalog: every page object, in object order
		nums := make([]int, 0)
		for n, v := range p.objs {
			if d, ok := v.(pdfDict); ok && d["Type"] == pdfName("Page") {
				nums = append(nums, n)
			}
		}
		sort.Ints(nums)
		for _, n := range nums {
			out = append(out, p.objs[n].(pdfDict))
		}
	}
	return out
}

// text decodes a text string of the document (info dictionary): UTF-16BE
// with a byte-order mark, else PDFDocEncoding (taken as Latin-1).
func (p *pdfFile) text(v any) string {
	s, ok := p.resolve(v).(string)
	if !ok {
		return ""
	}
	return textString([]byte(s))
}

func textString(b []byte) string {
	if len(b) >= 2 && b[0] == 0xFE && b[1] == 0xFF {
		u := make([]uint16, 0, len(b)/2)
		for i := 2; i+1 < len(b); i += 2 {
			u = append(u, uint16(b[i])<<8|uint16(b[i+1]))
		}
		return string(utf16.Decode(u))
	}
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = rune(c)
	}
	return string(r)
}

// pdfDate reads "D:YYYYMMDDHHmmSS…".
func pdfDate(s string) time.Time {
	s = strings.TrimPrefix(strings.TrimSpace(s), "D:")
	for _, layout := range []string{"20060102150405", "200601021504", "2006010215", "20060102", "200601", "2006"} {
		if len(s) >= len(layout) {
			if t, err := time.Parse(layout, s[:len(layout)]); err == nil {
				return t.UTC()
			}
		}
	}
	return time.Time{}
}
