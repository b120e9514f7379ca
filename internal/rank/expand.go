package rank

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// Expansion limits. Both bound the work per term: a term yields at most
// about 60 inflection candidates and 54·n+25 typo candidates (n ≤
// MaxTypoRunes), each a single lookup in the workspace vocabulary.
const (
	// MinStemRunes is the shortest term expanded by inflection.
	MinStemRunes = 3
	// MinTypoRunes and MaxTypoRunes bound the terms expanded by typo.
	MinTypoRunes = 4
	MaxTypoRunes = 24
)

// Expandable reports whether a term's lexemes admit expansions: a single
// lexeme of letters only (identifiers, numbers and compound terms such as
// ABC-1234 or e-mail stay exact).
func Expandable(lexemes []string) bool {
	if len(lexemes) != 1 {
		return false
	}
	for _, r := range lexemes[0] {
		if !unicode.IsLetter(r) {
			return false
		}
	}
	return lexemes[0] != ""
}

// Stem returns the English (Porter2) stem of a lowercase word.
func Stem(word string) string { return english.Stem(word, true) }

// inflections are the suffixes tried on a stem: English inflection and the
// common derivations Porter2 folds together.
var inflections = []string{
	"", "s", "es", "ed", "ing", "er", "ers", "e", "es", "ed", "y", "ies", "ied", "ion", "ions",
	"ation", "ations", "ment", "ments", "al", "ly", "ness", "ity", "ive", "able", "ize", "ized", "izes", "izing",
	"ise", "ised", "ises", "ising", "ization", "er", "est", "ful", "ance", "ence", "ant", "ent",
}

// Inflections returns the candidate inflections of lexeme: the words
// formed by adding a common suffix to its English stem (with a trailing
// "i" read back as "y", and a final consonant doubled before -ed and
// -ing), other than lexeme. An inflection expansion looks them up in the
// workspace's vocabulary and keeps those that exist and share lexeme's
// stem (SameStem): stemming only the few that exist costs far less than
// stemming every candidate. Only ASCII words are expanded (the stemmer is
// English).
func Inflections(lexeme string) []string {
	if utf8.RuneCountInString(lexeme) < MinStemRunes || !isASCIILower(lexeme) {
		return nil
	}
	stem := Stem(lexeme)
	bases := []string{stem}
	if strings.HasSuffix(stem, "i") {
		bases = append(bases, stem[:len(stem)-1]+"y")
	}
	seen := map[string]bool{lexeme: true}
	var out []string
	try := func(w string) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	for _, b := range bases {
		for _, suf := range inflections {
			if strings.HasSuffix(b, "y") && suf != "" && suf != "s" && strings.HasPrefix(suf, "i") {
				try(b[:len(b)-1] + suf)
			}
			try(b + suf)
		}
		if n := len(b); n >= 3 && isConsonant(b[n-1]) && !isConsonant(b[n-2]) && isConsonant(b[n-3]) {
			try(b + b[n-1:] + "ed")
			try(b + b[n-1:] + "ing")
		}
	}
	return out
}

func isASCIILower(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 'a' || s[i] > 'z' {
			return false
		}
	}
	return s != ""
}

func isConsonant(c byte) bool {
	return c >= 'a' && c <= 'z' && !strings.ContainsRune("aeiouwxy", rune(c))
}

// Typos returns every word at optimal-string-alignment distance 1 from
// lexeme (one letter deleted, inserted or replaced, or two neighbours
// swapped) that keeps its first letter, over the letters a–z and the
// lexeme's own: the candidates a typo expansion looks up in the
// workspace's vocabulary. People rarely mistype a word's first letter, and
// a correction that changes it mostly turns a real word into another one
// ("right" into "night"). Terms shorter than MinTypoRunes or longer than
// MaxTypoRunes get none.
func Typos(lexeme string) []string {
	r := []rune(lexeme)
	n := len(r)
	if n < MinTypoRunes || n > MaxTypoRunes {
		return nil
	}
	alphabet := []rune("abcdefghijklmnopqrstuvwxyz")
	for _, c := range r {
		if !slices.Contains(alphabet, c) {
			alphabet = append(alphabet, c)
		}
	}
	// Every candidate is written into one buffer and sliced out of one
	// string: a 24-letter term has about 1,400 of them. Duplicates (a
	// deletion in a run of equal letters) are left for the lookup.
	var buf []byte
	var ends []int
	emit := func(parts ...[]rune) {
		for _, p := range parts {
			for _, c := range p {
				buf = utf8.AppendRune(buf, c)
			}
		}
		ends = append(ends, len(buf))
	}
	one := make([]rune, 1)
	two := make([]rune, 2)
	for i := 1; i < n; i++ { // deletions
		emit(r[:i], r[i+1:])
	}
	for i := 1; i+1 < n; i++ { // transpositions
		if r[i] != r[i+1] {
			two[0], two[1] = r[i+1], r[i]
			emit(r[:i], two, r[i+2:])
		}
	}
	for i := 1; i < n; i++ { // substitutions
		for _, c := range alphabet {
			if c != r[i] {
				one[0] = c
				emit(r[:i], one, r[i+1:])
			}
		}
	}
	for i := 1; i <= n; i++ { // insertions
		for _, c := range alphabet {
			one[0] = c
			emit(r[:i], one, r[i:])
		}
	}
	all := string(buf)
	out := make([]string, len(ends))
	start := 0
	for k, end := range ends {
		out[k] = all[start:end]
		start = end
	}
	return out
}
