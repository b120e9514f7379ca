package web

import (
	"bytes"
	"html/template"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
)

// markdown renders user content as HTML that is safe to show: goldmark
// (CommonMark with tables, strikethrough and autolinks) never passes raw
// HTML through, and bluemonday's user-content policy then removes anything
// a crafted document could still smuggle in (javascript: links, event
// handlers, styles). Links open without the referrer.
type markdown struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

func newMarkdown() *markdown {
	p := bluemonday.UGCPolicy()
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(false)
	return &markdown{md: goldmark.New(goldmark.WithExtensions(extension.GFM)), policy: p}
}

// render returns content as sanitized HTML.
func (m *markdown) render(content string) template.HTML {
	var b bytes.Buffer
	if err := m.md.Convert([]byte(content), &b); err != nil {
		return template.HTML(template.HTMLEscapeString(content))
	}
	return template.HTML(m.policy.SanitizeBytes(b.Bytes())) //nolint:gosec // sanitized above
}
