package extract

import (
	"bytes"
	"fmt"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// htmlDoc extracts a web page's main content (Readability's algorithm:
// navigation, ads and boilerplate left out) and converts it to Markdown,
// one section per heading. A page Readability finds no article in is
// converted whole (its body), so a short page still yields its text.
func htmlDoc(data []byte) (*Document, error) {
	if _, err := text(data); err != nil {
		return nil, err
	}
	root, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%w: HTML: %v", ErrCorrupt, err)
	}
	doc := &Document{Metadata: map[string]any{}}
	content := body(root)
	if art, err := readability.FromDocument(root, nil); err == nil && art.Node != nil {
		content = art.Node
		doc.Title, doc.Author = strings.TrimSpace(art.Title()), strings.TrimSpace(art.Byline())
		if t, err := art.PublishedTime(); err == nil {
			doc.Published = t.UTC()
		}
		if s := strings.TrimSpace(art.SiteName()); s != "" {
			doc.Metadata["site_name"] = s
		}
		if s := strings.TrimSpace(art.Excerpt()); s != "" {
			doc.Metadata["excerpt"] = truncate(s, 500)
		}
		if s := strings.TrimSpace(art.Language()); s != "" {
			doc.Metadata["language"] = s
		}
	}
	if doc.Title == "" {
		doc.Title = strings.TrimSpace(textOf(find(root, atom.Title)))
	}
	doc.Sections = toMarkdown(content, nil)
	return doc, nil
}

// body is the document's <body> (or the root when there is none).
func body(root *html.Node) *html.Node {
	if b := find(root, atom.Body); b != nil {
		return b
	}
	return root
}

// find returns the first element a in n's subtree.
func find(n *html.Node, a atom.Atom) *html.Node {
	if n == nil {
		return nil
	}
	if n.Type == html.ElementNode && n.DataAtom == a {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, a); f != nil {
			return f
		}
	}
	return nil
}

// textOf is n's text content with whitespace collapsed.
func textOf(n *html.Node) string {
	if n == nil {
		return ""
	}
	return strings.Join(strings.Fields(rawText(n)), " ")
}

// mdWriter converts HTML to Markdown sections: each h1–h6 starts a section
// whose path is the enclosing headings.
type mdWriter struct {
	base     []string // path above the document's own headings (an EPUB chapter)
	headings []string // by level, 1-based: headings[0] is h1
	sections []Section
	cur      strings.Builder
}

// toMarkdown converts n's content to sections under the path base.
func toMarkdown(n *html.Node, base []string) []Section {
	w := &mdWriter{base: base}
	w.block(n)
	w.flush()
	return w.sections
}

func (w *mdWriter) path() []string {
	p := append([]string(nil), w.base...)
	for _, h := range w.headings {
		if h != "" {
			p = append(p, h)
		}
	}
	return p
}

func (w *mdWriter) flush() {
	t := strings.TrimSpace(w.cur.String())
	w.cur.Reset()
	if t != "" {
		w.sections = append(w.sections, Section{Path: w.path(), Text: t})
	}
}

// para ends the current block with a blank line.
func (w *mdWriter) para() {
	s := w.cur.String()
	if s != "" && !strings.HasSuffix(s, "\n\n") {
		if strings.HasSuffix(s, "\n") {
			w.cur.WriteString("\n")
		} else {
			w.cur.WriteString("\n\n")
		}
	}
}

var headingLevel = map[atom.Atom]int{atom.H1: 1, atom.H2: 2, atom.H3: 3, atom.H4: 4, atom.H5: 5, atom.H6: 6}

// skipped elements carry no readable text.
var skipped = map[atom.Atom]bool{atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Head: true, atom.Nav: true, atom.Form: true, atom.Button: true, atom.Svg: true, atom.Iframe: true}

// block writes n's children as Markdown blocks.
func (w *mdWriter) block(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.node(c, 0)
	}
}

func (w *mdWriter) node(n *html.Node, depth int) {
	switch n.Type {
	case html.TextNode:
		w.inlineText(n.Data)
		return
	case html.ElementNode, html.DocumentNode:
	default:
		return
	}
	if skipped[n.DataAtom] {
		return
	}
	if lvl, ok := headingLevel[n.DataAtom]; ok {
		title := textOf(n)
		if title == "" {
			return
		}
		w.flush()
		for len(w.headings) < lvl {
			w.headings = append(w.headings, "")
		}
		w.headings = append(w.headings[:lvl-1], title)
		return
	}
	switch n.DataAtom {
	case atom.P, atom.Div, atom.Section, atom.Article, atom.Main, atom.Header, atom.Footer, atom.Aside, atom.Figure, atom.Dl:
		w.para()
		w.children(n, depth)
		w.para()
	case atom.Br:
		w.cur.WriteString("  \n")
	case atom.Hr:
		w.para()
		w.cur.WriteString("---")
		w.para()
	case atom.Pre:
		w.para()
		w.cur.WriteString("```\n" + strings.TrimRight(rawText(n), "\n") + "\n```")
		w.para()
	case atom.Blockquote:
		w.para()
		inner := &mdWriter{}
		inner.block(n)
		inner.flush()
		var lines []string
		for _, s := range inner.sections {
			for _, l := range strings.Split(s.Text, "\n") {
				lines = append(lines, strings.TrimRight("> "+l, " "))
			}
		}
		w.cur.WriteString(strings.Join(lines, "\n"))
		w.para()
	case atom.Ul, atom.Ol:
		w.para()
		i := 0
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type != html.ElementNode || c.DataAtom != atom.Li {
				continue
			}
			i++
			marker := "- "
			if n.DataAtom == atom.Ol {
				marker = fmt.Sprintf("%d. ", i)
			}
			item := &mdWriter{}
			item.children(c, depth+1)
			text := strings.TrimSpace(item.cur.String())
			for strings.Contains(text, "\n\n") {
				text = strings.ReplaceAll(text, "\n\n", "\n")
			}
			// Continuation lines (a nested list) are indented under the
			// item; the enclosing list indents this one in turn.
			text = strings.ReplaceAll(text, "\n", "\n  ")
			w.cur.WriteString(marker + text + "\n")
		}
		w.para()
	case atom.Tr:
		var cells []string
		header := true
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && (c.DataAtom == atom.Td || c.DataAtom == atom.Th) {
				cells = append(cells, strings.ReplaceAll(textOf(c), "|", "\\|"))
				header = header && c.DataAtom == atom.Th
			}
		}
		if len(cells) == 0 {
			return
		}
		w.cur.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		if header {
			w.cur.WriteString("|" + strings.Repeat(" --- |", len(cells)) + "\n")
		}
	case atom.Table, atom.Tbody, atom.Thead, atom.Tfoot:
		w.para()
		w.children(n, depth)
		w.para()
	case atom.A:
		t, href := textOf(n), attr(n, "href")
		switch {
		case t == "":
		case href == "" || strings.HasPrefix(href, "#") || strings.HasPrefix(strings.ToLower(href), "javascript:"):
			w.inlineText(t)
		default:
			w.inlineText("[" + t + "](" + href + ")")
		}
	case atom.Strong, atom.B:
		w.wrap(n, "**")
	case atom.Em, atom.I:
		w.wrap(n, "*")
	case atom.Code:
		if t := textOf(n); t != "" {
			w.inlineText("`" + t + "`")
		}
	case atom.Img:
		if alt := strings.TrimSpace(attr(n, "alt")); alt != "" {
			w.inlineText("[image: " + alt + "]")
		}
	case atom.Dt:
		w.para()
		w.inlineText("**" + textOf(n) + "**")
		w.cur.WriteString("\n")
	case atom.Dd:
		w.inlineText(": ")
		w.children(n, depth)
		w.para()
	default:
		w.children(n, depth)
	}
}

func (w *mdWriter) children(n *html.Node, depth int) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.node(c, depth)
	}
}

func (w *mdWriter) wrap(n *html.Node, mark string) {
	if t := textOf(n); t != "" {
		w.inlineText(mark + t + mark)
	}
}

// inlineText appends text with whitespace collapsed to single spaces.
func (w *mdWriter) inlineText(s string) {
	f := strings.Fields(s)
	if len(f) == 0 {
		if s != "" && w.cur.Len() > 0 && !strings.HasSuffix(w.cur.String(), " ") && !strings.HasSuffix(w.cur.String(), "\n") {
			w.cur.WriteString(" ")
		}
		return
	}
	cur := w.cur.String()
	lead := s[0] == ' ' || s[0] == '\n' || s[0] == '\t'
	if lead && cur != "" && !strings.HasSuffix(cur, " ") && !strings.HasSuffix(cur, "\n") {
		w.cur.WriteString(" ")
	}
	w.cur.WriteString(strings.Join(f, " "))
	last := s[len(s)-1]
	if last == ' ' || last == '\n' || last == '\t' {
		w.cur.WriteString(" ")
	}
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// rawText is n's text with its whitespace kept (preformatted blocks).
func rawText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}
