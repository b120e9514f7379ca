package extract

import (
	"archive/zip"
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// EPUB bounds: an archive is untrusted input (a zip bomb inflates a small
// file enormously).
const (
	maxEPUBEntries = 10_000
	maxEPUBBytes   = 64 << 20 // decompressed, all chapters together
)

// epubDoc extracts an EPUB's chapters in reading order (the package's
// spine); each chapter's headings become its sections' paths under the
// chapter's title. Title, author and date come from the package metadata.
func epubDoc(data []byte) (*Document, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%w: EPUB: not a zip archive: %v", ErrCorrupt, err)
	}
	if len(zr.File) > maxEPUBEntries {
		return nil, fmt.Errorf("%w: EPUB: more than %d entries", ErrCorrupt, maxEPUBEntries)
	}
	files := map[string]*zip.File{}
	for _, f := range zr.File {
		files[f.Name] = f
	}
	budget := int64(maxEPUBBytes)
	read := func(name string) ([]byte, error) {
		f := files[name]
		if f == nil {
			return nil, fmt.Errorf("%w: EPUB: %q is missing", ErrCorrupt, name)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("%w: EPUB: %s: %v", ErrCorrupt, name, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(io.LimitReader(rc, budget+1))
		if err != nil {
			return nil, fmt.Errorf("%w: EPUB: %s: %v", ErrCorrupt, name, err)
		}
		if budget -= int64(len(b)); budget < 0 {
			return nil, fmt.Errorf("%w: EPUB: more than %d bytes once decompressed", ErrCorrupt, maxEPUBBytes)
		}
		return b, nil
	}
	var container struct {
		Rootfiles []struct {
			Path string `xml:"full-path,attr"`
		} `xml:"rootfiles>rootfile"`
	}
	raw, err := read("META-INF/container.xml")
	if err != nil {
		return nil, err
	}
	if err := xml.Unmarshal(raw, &container); err != nil || len(container.Rootfiles) == 0 {
		return nil, fmt.Errorf("%w: EPUB: META-INF/container.xml names no package", ErrCorrupt)
	}
	opfPath := container.Rootfiles[0].Path
	var pkg struct {
		Title    []string `xml:"metadata>title"`
		Creator  []string `xml:"metadata>creator"`
		Date     []string `xml:"metadata>date"`
		Language []string `xml:"metadata>language"`
		Items    []struct {
			ID   string `xml:"id,attr"`
			Href string `xml:"href,attr"`
			Type string `xml:"media-type,attr"`
		} `xml:"manifest>item"`
		Spine []struct {
			IDRef string `xml:"idref,attr"`
		} `xml:"spine>itemref"`
	}
	if raw, err = read(opfPath); err != nil {
		return nil, err
	}
	if err := xml.Unmarshal(raw, &pkg); err != nil {
		return nil, fmt.Errorf("%w: EPUB: package %s: %v", ErrCorrupt, opfPath, err)
	}
	doc := &Document{Metadata: map[string]any{}}
	if len(pkg.Title) > 0 {
		doc.Title = strings.TrimSpace(pkg.Title[0])
	}
	if len(pkg.Creator) > 0 {
		doc.Author = strings.TrimSpace(strings.Join(pkg.Creator, ", "))
	}
	if len(pkg.Date) > 0 {
		doc.Published = parseDate(strings.TrimSpace(pkg.Date[0]))
	}
	if len(pkg.Language) > 0 {
		doc.Metadata["language"] = strings.TrimSpace(pkg.Language[0])
	}
	hrefs := map[string]string{}
	for _, it := range pkg.Items {
		if it.Type == "application/xhtml+xml" || it.Type == "text/html" {
			hrefs[it.ID] = path.Join(path.Dir(opfPath), it.Href)
		}
	}
	chapters := 0
	for _, ref := range pkg.Spine {
		name, ok := hrefs[ref.IDRef]
		if !ok {
			continue
		}
		if i := strings.IndexByte(name, '#'); i >= 0 {
			name = name[:i]
		}
		raw, err := read(name)
		if err != nil {
			return nil, err
		}
		root, err := html.Parse(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("%w: EPUB: %s: %v", ErrCorrupt, name, err)
		}
		chapters++
		title := firstHeading(root)
		base := []string{fmt.Sprintf("Chapter %d", chapters)}
		if title != "" {
			base = []string{title}
		}
		secs := toMarkdown(body(root), nil)
		for i := range secs {
			// The chapter's own heading is the base; deeper ones follow.
			p := secs[i].Path
			if len(p) > 0 && p[0] == title {
				p = p[1:]
			}
			secs[i].Path = append(append([]string(nil), base...), p...)
		}
		doc.Sections = append(doc.Sections, secs...)
	}
	doc.Metadata["chapters"] = chapters
	return doc, nil
}

// firstHeading is the text of n's first h1–h3.
func firstHeading(n *html.Node) string {
	if n.Type == html.ElementNode {
		if lvl, ok := headingLevel[n.DataAtom]; ok && lvl <= 3 {
			return textOf(n)
		}
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if h := firstHeading(c); h != "" {
			return h
		}
	}
	return ""
}

// parseDate reads the dates EPUB packages and front matter use (zero
// when none fits).
func parseDate(s string) time.Time {
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02", "2006-01", "2006"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}
