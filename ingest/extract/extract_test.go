package extract

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const sampleMD = `---
title: "Field Guide"
author: Ada
date: 2024-05-01
tags: birds
---
Intro text.

# Birds
About birds.

## Owls
` + "```" + `
# not a heading
` + "```" + `
Owls hunt at night.

### Barn owl
Pale.

## Crows
Clever.
`

func TestMarkdown(t *testing.T) {
	t.Parallel()
	doc, err := Extract([]byte(sampleMD), "", "guide.md")
	if err != nil {
		t.Fatal(err)
	}
	var paths [][]string
	for _, s := range doc.Sections {
		paths = append(paths, s.Path)
	}
	want := [][]string{nil, {"Birds"}, {"Birds", "Owls"}, {"Birds", "Owls", "Barn owl"}, {"Birds", "Crows"}}
	if d := cmp.Diff(want, paths); d != "" {
		t.Fatalf("section paths (-want +got):\n%s", d)
	}
	if doc.Title != "Field Guide" || doc.Author != "Ada" || !doc.Published.Equal(time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("header = %q %q %v", doc.Title, doc.Author, doc.Published)
	}
	if doc.Metadata["tags"] != "birds" || doc.ContentType != "text/markdown" {
		t.Fatalf("metadata = %v, type %q", doc.Metadata, doc.ContentType)
	}
	if !strings.Contains(doc.Sections[2].Text, "# not a heading") {
		t.Fatalf("fenced code lost: %q", doc.Sections[2].Text)
	}
}

func TestPlainAndJSON(t *testing.T) {
	t.Parallel()
	doc, err := Extract([]byte("\ufeffFirst line\r\nsecond"), "text/plain; charset=utf-8", "")
	if err != nil || doc.Title != "First line" || doc.Sections[0].Text != "First line\nsecond" {
		t.Fatalf("plain = %+v, %v", doc, err)
	}
	doc, err = Extract([]byte(`{"title":"T","body":{"a":1},"author":"Bo"}`), "application/json", "")
	if err != nil {
		t.Fatal(err)
	}
	if doc.Title != "T" || doc.Author != "Bo" || len(doc.Sections) != 3 || doc.Sections[1].Path[0] != "body" {
		t.Fatalf("json = %+v", doc)
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	cases := []struct {
		data, ct, name string
		want           error
	}{
		{"ok \xff\xfe", "text/plain", "", ErrInvalidUTF8},
		{"# h\n\xc3", "", "a.md", ErrInvalidUTF8},
		{"   \n", "text/plain", "", ErrEmpty},
		{"{", "application/json", "", ErrCorrupt},
		{"null", "application/json", "", ErrEmpty},
		{"x", "application/x-unknown", "", ErrUnsupported},
		{"\x00\x01\x02\x03", "", "file.bin", ErrUnsupported},
		{"PK\x03\x04\x14\x00", "application/octet-stream", "", ErrUnsupported},
	}
	for _, c := range cases {
		_, err := Extract([]byte(c.data), c.ct, c.name)
		if !errors.Is(err, c.want) {
			t.Errorf("Extract(%q, %q, %q) err = %v, want %v", c.data, c.ct, c.name, err, c.want)
		}
	}
}

func fuzzExtract(f *testing.F, ct string, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := Extract(data, ct, "")
		if err == nil && len(doc.Sections) == 0 {
			t.Fatal("nil error with no sections")
		}
	})
}

func FuzzExtractMarkdown(f *testing.F) {
	fuzzExtract(f, "text/markdown", sampleMD, "---\n---", "#\n##x\n# a #", "---\ntitle: x\n")
}

func FuzzExtractText(f *testing.F) { fuzzExtract(f, "text/plain", "a\nb", "\ufeff") }

func FuzzExtractJSON(f *testing.F) {
	fuzzExtract(f, "application/json", `{"a":[1,2]}`, `[1]`, `"s"`, `{"title":3}`)
}

func BenchmarkExtractMarkdown(b *testing.B) {
	data := []byte(strings.Repeat(sampleMD[strings.Index(sampleMD, "# Birds"):], 200))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Extract(data, "text/markdown", ""); err != nil {
			b.Fatal(err)
		}
	}
}
