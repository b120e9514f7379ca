// Package extract turns fetched or uploaded bytes into a Document: title,
// author, date, metadata and text split into sections whose boundaries
// follow the document's structure (headings, chapters, pages).
//
// Supported: plain text, Markdown (with a front matter block of "key:
// value" lines), JSON, YAML, HTML (the main content, found with
// Readability's algorithm, converted to Markdown) and EPUB (chapters in
// reading order) and PDF (text per page, through the fonts' ToUnicode
// maps; encrypted PDFs are refused).
package extract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Errors returned by Extract, matched with errors.Is.
var (
	ErrUnsupported = errors.New("extract: unsupported content type")
	ErrInvalidUTF8 = errors.New("extract: text is not valid UTF-8")
	ErrEmpty       = errors.New("extract: document has no text")
	ErrCorrupt     = errors.New("extract: document is corrupt")
)

// Section is a run of text under one heading path, e.g. ["Guide", "Install"].
type Section struct {
	Path []string
	Text string
}

// Document is the extracted, format-independent content.
type Document struct {
	Title       string
	Author      string
	Published   time.Time
	ContentType string
	Sections    []Section
	Metadata    map[string]any
}

// Text joins all sections.
func (d *Document) Text() string {
	parts := make([]string, 0, len(d.Sections))
	for _, s := range d.Sections {
		parts = append(parts, s.Text)
	}
	return strings.Join(parts, "\n\n")
}

// Extract parses data of the given content type. When contentType is empty
// or generic, the filename extension decides, and without a known
// extension the content's first bytes do (net/http's sniffing, and an
// EPUB's mimetype entry).
func Extract(data []byte, contentType, filename string) (*Document, error) {
	mt := mediaType(contentType, filename)
	if mt == "" {
		mt = sniff(data)
	}
	var (
		doc *Document
		err error
	)
	switch mt {
	case "text/plain":
		doc, err = plain(data)
	case "text/markdown":
		doc, err = markdown(data)
	case "application/json":
		doc, err = jsonDoc(data)
	case "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
		mt = "application/yaml"
		doc, err = yamlDoc(data)
	case "text/html", "application/xhtml+xml":
		doc, err = htmlDoc(data)
	case "application/epub+zip":
		doc, err = epubDoc(data)
	case "application/pdf":
		doc, err = pdfDoc(data)
	default:
		return nil, fmt.Errorf("%w: %q (file %q)", ErrUnsupported, mt, filename)
	}
	if err != nil {
		return nil, err
	}
	doc.ContentType = mt
	if doc.Metadata == nil {
		doc.Metadata = map[string]any{}
	}
	if len(doc.Sections) == 0 {
		return nil, fmt.Errorf("%w (%s)", ErrEmpty, mt)
	}
	return doc, nil
}

var byExt = map[string]string{
	".txt": "text/plain", ".text": "text/plain",
	".md": "text/markdown", ".markdown": "text/markdown",
	".json": "application/json",
	".html": "text/html", ".htm": "text/html",
	".pdf": "application/pdf", ".epub": "application/epub+zip",
	".yaml": "application/yaml", ".yml": "application/yaml",
	".xhtml": "application/xhtml+xml",
}

func mediaType(contentType, filename string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		mt = ""
	}
	ext := byExt[strings.ToLower(path.Ext(filename))]
	switch {
	case mt == "" || mt == "application/octet-stream":
		return ext
	case mt == "text/plain" && ext != "":
		return ext
	case mt == "text/x-markdown":
		return "text/markdown"
	}
	return mt
}

// epubMagic is where an EPUB's first zip entry, the uncompressed file
// "mimetype", names its type.
const epubMagic = "mimetypeapplication/epub+zip"

// sniff names data's type from its first bytes, for content that came
// with neither a specific type nor a known extension.
func sniff(data []byte) string {
	if len(data) >= 30+len(epubMagic) && string(data[30:30+len(epubMagic)]) == epubMagic {
		return "application/epub+zip"
	}
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(data))
	return mt
}

func text(data []byte) (string, error) {
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			i += n
		}
		return "", fmt.Errorf("%w (first bad byte at offset %d)", ErrInvalidUTF8, i)
	}
	s := strings.TrimPrefix(string(data), "\ufeff")
	return strings.ReplaceAll(s, "\r\n", "\n"), nil
}

func plain(data []byte) (*Document, error) {
	s, err := text(data)
	if err != nil {
		return nil, err
	}
	doc := &Document{}
	if s = strings.TrimSpace(s); s != "" {
		doc.Sections = []Section{{Text: s}}
		doc.Title, _, _ = strings.Cut(s, "\n")
		doc.Title = truncate(strings.TrimSpace(doc.Title), 120)
	}
	return doc, nil
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// markdown splits at ATX headings (# .. ######), ignoring headings inside
// fenced code blocks; a leading "---" block of "key: value" lines becomes
// metadata (title, author, date/published are lifted into the Document).
func markdown(data []byte) (*Document, error) {
	s, err := text(data)
	if err != nil {
		return nil, err
	}
	doc := &Document{Metadata: map[string]any{}}
	s = frontMatter(s, doc)
	var (
		stack []string // heading path
		buf   strings.Builder
		fence string
	)
	flush := func() {
		if t := strings.TrimSpace(buf.String()); t != "" {
			doc.Sections = append(doc.Sections, Section{Path: append([]string(nil), stack...), Text: t})
		}
		buf.Reset()
	}
	for _, line := range strings.Split(s, "\n") {
		trim := strings.TrimSpace(line)
		if fence != "" {
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			buf.WriteString(line + "\n")
			continue
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
			buf.WriteString(line + "\n")
			continue
		}
		if level, title, ok := heading(line); ok {
			flush()
			if level > len(stack)+1 {
				level = len(stack) + 1
			}
			stack = append(stack[:level-1], title)
			if doc.Title == "" && level == 1 {
				doc.Title = title
			}
			buf.WriteString(line + "\n")
			continue
		}
		buf.WriteString(line + "\n")
	}
	flush()
	return doc, nil
}

func heading(line string) (int, string, bool) {
	if !strings.HasPrefix(line, "#") {
		return 0, "", false
	}
	n := len(line) - len(strings.TrimLeft(line, "#"))
	if n > 6 || (len(line) > n && line[n] != ' ' && line[n] != '\t') {
		return 0, "", false
	}
	title := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(line[n:]), "#"))
	if title == "" {
		return 0, "", false
	}
	return n, title, true
}

func frontMatter(s string, doc *Document) string {
	if !strings.HasPrefix(s, "---\n") {
		return s
	}
	end := strings.Index(s[4:], "\n---")
	if end < 0 {
		return s
	}
	block, rest := s[4:4+end], s[4+end+4:]
	rest = strings.TrimPrefix(rest, "\n")
	for _, line := range strings.Split(block, "\n") {
		k, v, ok := strings.Cut(line, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" || strings.HasPrefix(k, "#") {
			continue
		}
		v = strings.Trim(strings.TrimSpace(v), `"'`)
		doc.Metadata[k] = v
		switch strings.ToLower(k) {
		case "title":
			doc.Title = v
		case "author":
			doc.Author = v
		case "date", "published":
			doc.Published = parseDate(v)
		}
	}
	return rest
}

// jsonDoc renders a JSON document as indented text; each top-level key of
// an object is one section, so large records split along their structure.
func jsonDoc(data []byte) (*Document, error) {
	if _, err := text(data); err != nil {
		return nil, err
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%w: JSON: %v", ErrCorrupt, err)
	}
	doc := &Document{Metadata: map[string]any{}}
	obj, ok := v.(map[string]any)
	if !ok {
		out, _ := json.MarshalIndent(v, "", "  ")
		if s := string(out); s != "null" {
			doc.Sections = []Section{{Text: s}}
		}
		return doc, nil
	}
	for _, k := range sortedKeys(obj) {
		val := obj[k]
		doc.fieldFrom(k, val)
		out, _ := json.MarshalIndent(val, "", "  ")
		doc.Sections = append(doc.Sections, Section{Path: []string{k}, Text: k + ": " + string(out)})
	}
	return doc, nil
}

// sortedKeys lists a record's keys in order.
func sortedKeys(obj map[string]any) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// fieldFrom fills the title (from a "title" or "name" key) and the author
// from a structured record's top-level string values; the first wins.
func (d *Document) fieldFrom(key string, val any) {
	s, ok := val.(string)
	if !ok {
		return
	}
	switch strings.ToLower(key) {
	case "title", "name":
		if d.Title == "" {
			d.Title = s
		}
	case "author":
		if d.Author == "" {
			d.Author = s
		}
	}
}
