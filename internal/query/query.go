// Package query turns a free-text search query into the keyword terms used by
// the keyword branch of hybrid search.
//
// The contract, shared by every storage backend:
//
//   - The query is split on Unicode whitespace into terms.
//   - A term is non-empty when it contains at least one Unicode letter or
//     digit; PostgreSQL's text-search parser yields lexemes only for those, so
//     other terms ("---", "!!!", "👍") are discarded.
//   - Terms are distinct case-insensitively: they are compared lowercased and
//     the first occurrence's original text is kept.
//   - When more than one distinct non-empty term remains, terms made only of
//     English stopwords (see [IsStopwordTerm]) are dropped. A lone term is kept
//     even if it is a stopword, so searching for "the" still finds "the". A
//     query made only of stopwords ("the and of") keeps no term at all and the
//     caller relies on the vector branch.
//   - At most [MaxTerms] terms are kept, in query order.
//   - A term's cost is bounded before anything parses it: a term longer
//     than [MaxTermBytes] is cut to that length (at a character boundary),
//     and a kept term whose lexemes number more than [MaxTermLexemes] is
//     cut at the end of a word until they fit. Backends receive the cut
//     text, so PostgreSQL and the Go port parse the same string. Terms are
//     distinct after the length cut; two kept terms that the lexeme cut
//     makes equal count once.
//
// A chunk is eligible as a keyword hit when it matches at least
// [RequiredMatches] of the retained terms. [Lexemes] gives the lexemes
// PostgreSQL's `simple` configuration derives from a term, so backends
// without PostgreSQL can match terms the same way.
package query

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTerms is the maximum number of terms kept from a query. Backends report
// matched terms as bits of a uint32, so it must stay below 32.
const MaxTerms = 24

// MaxTermBytes is the longest term kept; a longer one is cut to its first
// MaxTermBytes bytes (fewer when a character would be split). It bounds
// what a term costs PostgreSQL's text-search parser, which backtracks and
// takes time quadratic in the length of some inputs ("1-a-1-a-…", "a_a_…"):
// about half a millisecond per parse at this length on the server. It is
// long enough for identifiers, e-mail addresses, paths and most URLs; a
// longer URL loses its tail (and the compound lexeme of the whole URL, so
// the cut term matches a document holding the full URL only through the
// vector branch).
const MaxTermBytes = 256

// MaxTermLexemes is the most lexemes a kept term may have; a term with
// more is cut at the end of a word until it fits. Each lexeme is a
// conjunct of the term's tsquery, an index lookup in PostgreSQL and a
// posting list in the SQLite index, so the cap bounds a term's matching
// cost. Ordinary terms have a handful ("state-of-the-art" has five).
const MaxTermLexemes = 32

// Terms is the result of [Parse].
type Terms struct {
	// Terms are the retained terms: original text, in query order, distinct
	// case-insensitively, at most MaxTerms of them.
	Terms []string
	// Dropped counts the distinct stopword terms removed from a query with
	// more than one distinct non-empty term.
	Dropped int
	// Truncated counts the distinct terms that survived stopword filtering
	// but did not fit in MaxTerms.
	Truncated int
}

// Parse splits q into keyword terms according to the package contract.
// It takes time linear in the length of q.
func Parse(q string) Terms {
	var (
		distinct []string // non-empty terms, distinct case-insensitively
		seen     lowerSet
	)
	for term := range strings.FieldsFuncSeq(q, unicode.IsSpace) {
		term = capBytes(term)
		if hasAlnum(term) && seen.add(strings.ToLower(term)) {
			distinct = append(distinct, term)
		}
	}

	var res Terms
	var kept lowerSet
	taken := 0 // terms that took a place, including those merged by the lexeme cut
	filter := len(distinct) > 1
	for _, term := range distinct {
		if filter && IsStopwordTerm(term) {
			res.Dropped++
			continue
		}
		if taken == MaxTerms {
			res.Truncated++
			continue
		}
		taken++
		// Only kept terms are parsed, so the lexeme cut costs at most
		// MaxTerms parses of MaxTermBytes each whatever the query.
		term = capLexemes(term)
		if hasAlnum(term) && kept.add(strings.ToLower(term)) {
			res.Terms = append(res.Terms, term)
		}
	}
	return res
}

// capBytes cuts term to at most MaxTermBytes bytes, at a character
// boundary.
func capBytes(term string) string {
	if len(term) <= MaxTermBytes {
		return term
	}
	return term[:runeStartAtOrBefore(term, MaxTermBytes)]
}

// runeStartAtOrBefore returns the largest i <= n that does not split a
// valid UTF-8 sequence of s (n itself when s[n] starts one, or is a stray
// byte).
func runeStartAtOrBefore(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for i := n; i >= 0 && i > n-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if _, size := utf8.DecodeRuneInString(s[i:]); i+size > n {
				return i
			}
			return n
		}
	}
	return n
}

// capLexemes cuts term until Lexemes(term) has at most MaxTermLexemes
// lexemes, keeping a prefix that ends at the end of a word (a run of
// letters and digits) when there is one.
func capLexemes(term string) string {
	if len(term) <= MaxTermLexemes {
		// A term has no more lexemes than bytes (FuzzLexemes checks it),
		// so the common short term needs no parse here.
		return term
	}
	for {
		n := len(Lexemes(term))
		if n <= MaxTermLexemes {
			return term
		}
		// Keep a share of the text proportional to the lexemes allowed;
		// it is shorter than term, so the loop ends.
		term = term[:wordEndAtOrBefore(term, len(term)*MaxTermLexemes/n)]
	}
}

// wordEndAtOrBefore returns the largest i <= n (and > 0 when n > 0) at
// which a word of s ends, or, when no word ends by then, the largest
// character boundary at or before n.
func wordEndAtOrBefore(s string, n int) int {
	end, inWord := 0, false
	for i, r := range s {
		if i > n {
			break
		}
		w := isAlnum(r)
		if inWord && !w {
			end = i
		}
		inWord = w
	}
	if inWord && n >= len(s) {
		end = len(s)
	}
	if end == 0 {
		end = runeStartAtOrBefore(s, n)
	}
	return end
}

// lowerSet is a set of lowercased terms. Typical queries have a handful of
// terms, which a slice scan handles without hashing; a map takes over for
// long pasted queries so Parse stays linear.
type lowerSet struct {
	list []string
	m    map[string]struct{}
}

// smallSet is the size up to which lowerSet scans a slice.
const smallSet = 32

// add inserts s and reports whether it was absent.
func (ls *lowerSet) add(s string) bool {
	if ls.m != nil {
		if _, ok := ls.m[s]; ok {
			return false
		}
		ls.m[s] = struct{}{}
		return true
	}
	for _, v := range ls.list {
		if v == s {
			return false
		}
	}
	if len(ls.list) < smallSet {
		ls.list = append(ls.list, s)
		return true
	}
	ls.m = make(map[string]struct{}, 2*smallSet)
	for _, v := range ls.list {
		ls.m[v] = struct{}{}
	}
	ls.list = nil
	ls.m[s] = struct{}{}
	return true
}

// hasAlnum reports whether s contains a Unicode letter or digit.
func hasAlnum(s string) bool {
	for _, r := range s {
		if isAlnum(r) {
			return true
		}
	}
	return false
}

func isAlnum(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// IsStopwordTerm reports whether term consists only of English stopwords:
// the term is split on every rune that is not a Unicode letter or digit and
// each resulting word, lowercased, must be in PostgreSQL's english stopword
// list (snowball english.stop). So "the", "The" and "don't" (don + t) are
// stopword terms while "the-matrix" and "I'm" ('m' is not a stopword) are not.
// A term without any letter or digit is not a stopword term.
func IsStopwordTerm(term string) bool {
	words := 0
	for i := 0; i < len(term); {
		// Skip separators.
		r, size := utf8.DecodeRuneInString(term[i:])
		if !isAlnum(r) {
			i += size
			continue
		}
		// Collect one word.
		j := i + size
		for j < len(term) {
			r, size := utf8.DecodeRuneInString(term[j:])
			if !isAlnum(r) {
				break
			}
			j += size
		}
		if !isStopword(term[i:j]) {
			return false
		}
		words++
		i = j
	}
	return words > 0
}

// isStopword reports whether word, lowercased, is an English stopword. ASCII
// words, the common case, are lowercased without allocating.
func isStopword(word string) bool {
	var buf [maxStopwordLen]byte
	if len(word) > len(buf) {
		// Lowercasing can shrink a word (U+0130 "İ" becomes "i"), so a
		// long non-ASCII word may still be a stopword.
		return !isASCII(word) && isStopwordLower(strings.ToLower(word))
	}
	for i := 0; i < len(word); i++ {
		c := word[i]
		if c >= utf8.RuneSelf {
			return isStopwordLower(strings.ToLower(word))
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	return isStopwordLower(string(buf[:len(word)]))
}

// isStopwordLower reports whether the lowercase word is an English stopword.
func isStopwordLower(word string) bool {
	_, ok := englishStopwords[word]
	return ok
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// RequiredMatches returns how many of n retained distinct terms a chunk must
// match to be eligible: half of them rounded up, so a single-term query
// requires its term. It returns 0 when n <= 0.
func RequiredMatches(n int) int {
	if n <= 0 {
		return 0
	}
	return (n + 1) / 2
}

// maxStopwordLen is the length of the longest word in englishStopwords
// ("themselves", "yourselves").
const maxStopwordLen = 10

// englishStopwords is PostgreSQL's english stopword list
// (share/tsearch_data/english.stop, from the Snowball project): 127 words.
// It was checked against PostgreSQL 15: to_tsvector('english', w) is empty for
// every word here.
var englishStopwords = map[string]struct{}{
	"i": {}, "me": {}, "my": {}, "myself": {}, "we": {}, "our": {}, "ours": {},
	"ourselves": {}, "you": {}, "your": {}, "yours": {}, "yourself": {},
	"yourselves": {}, "he": {}, "him": {}, "his": {}, "himself": {}, "she": {},
	"her": {}, "hers": {}, "herself": {}, "it": {}, "its": {}, "itself": {},
	"they": {}, "them": {}, "their": {}, "theirs": {}, "themselves": {},
	"what": {}, "which": {}, "who": {}, "whom": {}, "this": {}, "that": {},
	"these": {}, "those": {}, "am": {}, "is": {}, "are": {}, "was": {},
	"were": {}, "be": {}, "been": {}, "being": {}, "have": {}, "has": {},
	"had": {}, "having": {}, "do": {}, "does": {}, "did": {}, "doing": {},
	"a": {}, "an": {}, "the": {}, "and": {}, "but": {}, "if": {}, "or": {},
	"because": {}, "as": {}, "until": {}, "while": {}, "of": {}, "at": {},
	"by": {}, "for": {}, "with": {}, "about": {}, "against": {}, "between": {},
	"into": {}, "through": {}, "during": {}, "before": {}, "after": {},
	"above": {}, "below": {}, "to": {}, "from": {}, "up": {}, "down": {},
	"in": {}, "out": {}, "on": {}, "off": {}, "over": {}, "under": {},
	"again": {}, "further": {}, "then": {}, "once": {}, "here": {}, "there": {},
	"when": {}, "where": {}, "why": {}, "how": {}, "all": {}, "any": {},
	"both": {}, "each": {}, "few": {}, "more": {}, "most": {}, "other": {},
	"some": {}, "such": {}, "no": {}, "nor": {}, "not": {}, "only": {},
	"own": {}, "same": {}, "so": {}, "than": {}, "too": {}, "very": {}, "s": {},
	"t": {}, "can": {}, "will": {}, "just": {}, "don": {}, "should": {},
	"now": {},
}
