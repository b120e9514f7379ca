// Package rank holds ranking v2 of hybrid search (DESIGN.md §4, "Beyond
// the seed"): an entity's head (its name fields), inflection and typo
// expansions of query terms, BM25 keyword scoring over features the
// backends supply, evidence aggregated per entity and fusion weighted by
// each branch's evidence. Everything here is a pure function, so every
// backend ranks identically given the same candidates and statistics.
package rank

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Head limits.
const (
	// MaxHeadBytes bounds an entity's head.
	MaxHeadBytes = 600
	// maxLeadBytes bounds the leading line or sentence taken from content.
	maxLeadBytes = 200
	// maxLeadWords bounds the leading sentence's words.
	maxLeadWords = 12
	// maxFieldBytes bounds one metadata name field or alias.
	maxFieldBytes = 120
)

// Head returns an entity's head: the words that name it, which ranking
// weighs above body text. They are its metadata.name, metadata.title and
// metadata.aliases (a string or a list of strings) and its content's name:
// the first Markdown heading, else the subject of a first sentence that
// defines it ("Dana Whitfield is a staff engineer …", "Project Lighthouse
// is …": most entities carry no title field, and the leading words of such
// a note are its de-facto name). An entity without any of those is named
// by its leading words: a title-like first line (one without a sentence
// break inside), else its first sentence, at most maxLeadWords words. One
// per line, at most MaxHeadBytes, valid UTF-8. Tags and type are matched
// apart (see Plan).
func Head(content string, metadata map[string]any) string {
	var b strings.Builder
	add := func(s string, limit int) {
		s = strings.TrimSpace(clip(s, limit))
		if s == "" || b.Len()+len(s)+1 > MaxHeadBytes {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	for _, k := range []string{"name", "title"} {
		if s, ok := metadata[k].(string); ok {
			add(s, maxFieldBytes)
		}
	}
	switch a := metadata["aliases"].(type) {
	case string:
		add(a, maxFieldBytes)
	case []any:
		for _, x := range a {
			if s, ok := x.(string); ok {
				add(s, maxFieldBytes)
			}
		}
	case []string:
		for _, s := range a {
			add(s, maxFieldBytes)
		}
	}
	named := b.Len() > 0
	if l, strong := lead(content); strong || !named {
		add(l, maxLeadBytes)
	}
	return b.String()
}

// lead returns the name a content gives itself (see Head), and whether it
// is a strong one (a heading or a defined subject) rather than leading
// words.
func lead(content string) (string, bool) {
	s := strings.TrimLeftFunc(content, unicode.IsSpace)
	line, _, _ := strings.Cut(s, "\n")
	if h, ok := heading(line); ok {
		return h, true
	}
	line = strings.TrimRightFunc(line, unicode.IsSpace)
	end := sentenceEnd(line)
	first := line
	if end > 0 {
		first = line[:end]
	}
	if subj, ok := definedSubject(first); ok {
		return subj, true
	}
	if end < 0 || end == len(line) {
		return firstWords(line, maxLeadWords), false
	}
	return firstWords(first, maxLeadWords), false
}

// copulas introduce a definition: "<subject> is a …".
var copulas = []string{" is a ", " is an ", " is the ", " are the ", " was a ", " was the "}

// maxSubjectWords bounds a defined subject.
const maxSubjectWords = 6

// definedSubject returns the subject of a sentence that defines it ("Dana
// Whitfield is a staff engineer" → "Dana Whitfield"), when it is short.
func definedSubject(sentence string) (string, bool) {
	best := -1
	for _, c := range copulas {
		if i := strings.Index(sentence, c); i > 0 && (best < 0 || i < best) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	subj := strings.TrimSpace(sentence[:best])
	if n := len(strings.Fields(subj)); n == 0 || n > maxSubjectWords {
		return "", false
	}
	return subj, true
}

// heading returns the text of a Markdown ATX heading line.
func heading(line string) (string, bool) {
	t := strings.TrimLeft(line, " ")
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (n < len(t) && t[n] != ' ' && t[n] != '\t') {
		return "", false
	}
	return strings.Trim(strings.TrimSpace(t[n:]), "#"), true
}

// sentenceEnd returns the index just after the first sentence-ending
// punctuation followed by a space or the end of s, or -1.
func sentenceEnd(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '.', '!', '?':
			if i+1 == len(s) || s[i+1] == ' ' || s[i+1] == '\t' {
				return i + 1
			}
		}
	}
	return -1
}

// firstWords returns s cut after n words (runs of non-space).
func firstWords(s string, n int) string {
	words, in := 0, false
	for i, r := range s {
		sp := unicode.IsSpace(r)
		if !sp && !in {
			if words == n {
				return s[:i]
			}
			words++
		}
		in = !sp
	}
	return s
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
