package chunk

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSectionAt(t *testing.T) {
	t.Parallel()
	doc := "# Guide\n\nIntro.\n\n## Install\n\nRun it.\n\n```\n# not a heading\n```\n\n### On Linux\n\napt install.\n\n## Use\n\nCall it.\n#hashtag is no heading\n"
	for _, tc := range []struct {
		at   string
		want []string
	}{
		{"Intro.", []string{"Guide"}},
		{"Run it.", []string{"Guide", "Install"}},
		{"apt install.", []string{"Guide", "Install", "On Linux"}},
		{"Call it.", []string{"Guide", "Use"}},
		{"#hashtag", []string{"Guide", "Use"}},
	} {
		if got := SectionAt(doc, strings.Index(doc, tc.at)); !cmp.Equal(got, tc.want) {
			t.Errorf("at %q: %q, want %q", tc.at, got, tc.want)
		}
	}
	if got := SectionAt("plain text without headings", 10); got != nil {
		t.Errorf("no headings: %q", got)
	}
	if got := SectionAt("# T", 100); !cmp.Equal(got, []string{"T"}) {
		t.Errorf("offset past the end: %q", got)
	}
}

func FuzzSectionAt(f *testing.F) {
	f.Add("# A\n## B\ntext", 9)
	f.Add("```\n# x\n", 3)
	f.Fuzz(func(t *testing.T, s string, off int) {
		if off < 0 {
			off = -off
		}
		for _, h := range SectionAt(s, off) {
			if h == "" {
				t.Fatal("empty heading in a path")
			}
		}
	})
}
