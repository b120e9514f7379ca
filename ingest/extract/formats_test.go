package extract

import (
	"archive/zip"
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const samplePage = `<!doctype html>
<html><head><title>Lighthouse decision | Acme wiki</title>
<meta name="author" content="Dana Whitfield">
<meta property="article:published_time" content="2026-11-02T09:00:00Z">
<script>var tracking = "nothing to see";</script>
</head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article>
<h1>Project Lighthouse: storage decision</h1>
<p>After two weeks of <strong>benchmarks</strong> the team chose <a href="https://www.postgresql.org/">PostgreSQL</a>
with pgvector over a separate vector database. The main reasons were operational simplicity, transactional writes and one
backup story for everything the product stores.</p>
<h2>Options</h2>
<ul><li>PostgreSQL with pgvector</li><li>A dedicated vector database<ul><li>hosted</li></ul></li></ul>
<h2>Consequences</h2>
<p>Search p95 must stay under thirty milliseconds; the HNSW index is rebuilt after bulk imports, which the operations runbook
now describes in detail for the on-call engineer.</p>
<pre><code>CREATE INDEX ON chunks USING hnsw (embedding vector_cosine_ops);
</code></pre>
<table><tr><th>Option</th><th>Cost</th></tr><tr><td>pgvector</td><td>low</td></tr></table>
</article>
<footer>© Acme — <a href="/privacy">Privacy</a></footer>
</body></html>`

func TestHTML(t *testing.T) {
	t.Parallel()
	doc, err := Extract([]byte(samplePage), "text/html; charset=utf-8", "")
	if err != nil {
		t.Fatal(err)
	}
	if doc.ContentType != "text/html" || !strings.Contains(doc.Title, "Lighthouse") || doc.Author != "Dana Whitfield" ||
		!doc.Published.Equal(time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("fields: %q %q %q %v", doc.ContentType, doc.Title, doc.Author, doc.Published)
	}
	all := doc.Text()
	for _, want := range []string{"**benchmarks**", "[PostgreSQL](https://www.postgresql.org/)", "- PostgreSQL with pgvector",
		"- A dedicated vector database\n  - hosted", "```\nCREATE INDEX ON chunks", "| Option | Cost |\n| --- | --- |\n| pgvector | low |"} {
		if !strings.Contains(all, want) {
			t.Errorf("Markdown lacks %q:\n%s", want, all)
		}
	}
	for _, gone := range []string{"tracking", "Home", "Privacy"} {
		if strings.Contains(all, gone) {
			t.Errorf("boilerplate %q kept:\n%s", gone, all)
		}
	}
	var paths []string
	for _, s := range doc.Sections {
		paths = append(paths, strings.Join(s.Path, " > "))
	}
	want := []string{"Project Lighthouse: storage decision", "Project Lighthouse: storage decision > Options",
		"Project Lighthouse: storage decision > Consequences"}
	if d := cmp.Diff(want, paths); d != "" {
		t.Errorf("section paths (-want +got):\n%s", d)
	}
	// A page with no article still yields its text.
	small, err := Extract([]byte("<p>Just a note.</p>"), "", "note.html")
	if err != nil || small.Text() != "Just a note." {
		t.Fatalf("small page: %v %q", err, small.Text())
	}
}

func TestYAML(t *testing.T) {
	t.Parallel()
	doc, err := Extract([]byte("title: Runbook\nauthor: Ops\nsteps:\n  - drain\n  - restart\n---\nnotes: second document\n"), "", "runbook.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if doc.ContentType != "application/yaml" || doc.Title != "Runbook" || doc.Author != "Ops" {
		t.Fatalf("fields: %+v", doc)
	}
	var got []string
	for _, s := range doc.Sections {
		got = append(got, strings.Join(s.Path, "/")+"="+s.Text)
	}
	want := []string{"author=author: Ops", "steps=steps:\n  - drain\n  - restart", "title=title: Runbook",
		"document 2/notes=notes: second document"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("sections (-want +got):\n%s", d)
	}
	// Aliases that expand a small file into a huge tree are refused.
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n" +
		"d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
	if _, err := Extract([]byte(bomb), "application/yaml", ""); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("alias bomb: %v", err)
	}
	if _, err := Extract([]byte("a: [unclosed"), "text/yaml", ""); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("bad YAML: %v", err)
	}
}

// epub builds an EPUB archive from name → content.
func epub(t testing.TB, files map[string]string) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, name := range []string{"mimetype", "META-INF/container.xml", "OEBPS/content.opf", "OEBPS/one.xhtml", "OEBPS/two.xhtml"} {
		body, ok := files[name]
		if !ok {
			continue
		}
		h := &zip.FileHeader{Name: name, Method: zip.Deflate}
		if name == "mimetype" { // stored first and uncompressed, as the EPUB spec asks
			h.Method = zip.Store
		}
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var sampleEPUB = map[string]string{
	"mimetype":               "application/epub+zip",
	"META-INF/container.xml": `<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>`,
	"OEBPS/content.opf": `<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
<dc:title>Field Notes</dc:title><dc:creator>Ada Lovelace</dc:creator><dc:date>1843-07-01</dc:date><dc:language>en</dc:language></metadata>
<manifest><item id="c2" href="two.xhtml" media-type="application/xhtml+xml"/><item id="c1" href="one.xhtml" media-type="application/xhtml+xml"/><item id="css" href="s.css" media-type="text/css"/></manifest>
<spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>`,
	"OEBPS/one.xhtml": `<html xmlns="http://www.w3.org/1999/xhtml"><body><h1>The Engine</h1><p>It weaves algebraic patterns.</p><h2>Notes</h2><p>Note G.</p></body></html>`,
	"OEBPS/two.xhtml": `<html xmlns="http://www.w3.org/1999/xhtml"><body><p>An untitled chapter.</p></body></html>`,
}

func TestEPUB(t *testing.T) {
	t.Parallel()
	doc, err := Extract(epub(t, sampleEPUB), "", "notes.epub")
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "Field Notes" || doc.Author != "Ada Lovelace" || doc.Published.Year() != 1843 || doc.Metadata["chapters"] != 2 {
		t.Fatalf("fields: %+v", doc)
	}
	var got []string
	for _, s := range doc.Sections {
		got = append(got, strings.Join(s.Path, " > ")+": "+s.Text)
	}
	want := []string{"The Engine: It weaves algebraic patterns.", "The Engine > Notes: Note G.", "Chapter 2: An untitled chapter."}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("sections in reading order (-want +got):\n%s", d)
	}
	for name, mutate := range map[string]func(map[string]string){
		"no container": func(m map[string]string) { delete(m, "META-INF/container.xml") },
		"bad package":  func(m map[string]string) { m["OEBPS/content.opf"] = "<package" },
		"missing file": func(m map[string]string) { delete(m, "OEBPS/two.xhtml") },
	} {
		files := map[string]string{}
		for k, v := range sampleEPUB {
			files[k] = v
		}
		mutate(files)
		if _, err := Extract(epub(t, files), "application/epub+zip", ""); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := Extract([]byte("not a zip"), "application/epub+zip", ""); !errors.Is(err, ErrCorrupt) {
		t.Errorf("not a zip: %v", err)
	}
}

func FuzzExtractHTML(f *testing.F) {
	fuzzExtract(f, "text/html", samplePage, "<p>x", "<h1></h1><h3>a</h3>b", "<ul><li><ol><li>x", "<pre>\n\n</pre><blockquote><p>q")
}

func FuzzExtractYAML(f *testing.F) {
	fuzzExtract(f, "application/yaml", "a: 1\n", "- x\n- y", "---\n---\n", "a: &x 1\nb: *x", "title: [1]")
}

func FuzzExtractEPUB(f *testing.F) {
	f.Add(epub(f, sampleEPUB))
	f.Add([]byte("PK\x03\x04"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Extract(data, "application/epub+zip", "")
		if err == nil && len(doc.Sections) == 0 {
			t.Fatal("nil error with no sections")
		}
	})
}

// TestSniff: content with neither a type nor a known extension is named
// by its first bytes.
func TestSniff(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		data []byte
		want string
	}{
		{[]byte("Plain notes\nwith two lines"), "text/plain"},
		{[]byte("<!DOCTYPE html><html><head><title>T</title></head><body><article><h1>T</h1><p>" + strings.Repeat("Body text of the page. ", 20) + "</p></article></body></html>"), "text/html"},
		{epub(t, sampleEPUB), "application/epub+zip"},
		{samplePDF(), "application/pdf"},
	} {
		doc, err := Extract(c.data, "application/octet-stream", "upload")
		if err != nil || doc.ContentType != c.want {
			t.Errorf("Extract(%.20q) = %v, %v; want %s", c.data, doc, err, c.want)
		}
	}
}
