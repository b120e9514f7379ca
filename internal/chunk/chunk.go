// Package chunk splits text into overlapping chunks for embedding and
// keyword indexing.
//
// Splitting is deterministic and measured in runes. A chunk ends, in order of
// preference, at a paragraph break (a blank line), a line break, the end of a
// sentence, a word boundary (white space) and only when none of those is
// available at a hard cut between two runes, which never falls inside a UTF-8
// sequence and avoids falling inside a grapheme cluster (a character followed
// by combining marks, an emoji ZWJ sequence, a flag, a keycap).
package chunk

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Defaults used for zero Config fields.
const (
	// DefaultSize is the default maximum chunk length in runes.
	DefaultSize = 1000
	// DefaultOverlap is the default overlap in runes for sizes of at least
	// 1000 runes; smaller sizes default to a tenth of the size.
	DefaultOverlap = 100
)

// NoOverlap, as Config.Overlap, makes consecutive chunks not overlap (zero
// selects the default overlap). Any negative Overlap means the same.
const NoOverlap = -1

// Config controls Split. The zero value selects the defaults.
type Config struct {
	// Size is the maximum length of a chunk in runes. Zero means
	// DefaultSize.
	Size int
	// Overlap is how many runes at most the start of a chunk reaches back
	// into the previous chunk. It must be less than Size. Zero means
	// DefaultOverlap, or Size/10 when that is smaller; NoOverlap means none.
	Overlap int
}

// Validate reports whether c is usable: Size is not negative and the
// effective Overlap is less than the effective Size.
func (c Config) Validate() error {
	if c.Size < 0 {
		return fmt.Errorf("chunk: size %d is negative", c.Size)
	}
	if size, overlap := c.effective(); overlap >= size {
		return fmt.Errorf("chunk: overlap %d must be less than size %d", overlap, size)
	}
	return nil
}

// effective returns the size and overlap with defaults applied.
func (c Config) effective() (size, overlap int) {
	size = c.Size
	if size == 0 {
		size = DefaultSize
	}
	switch overlap = c.Overlap; {
	case overlap == 0:
		overlap = min(DefaultOverlap, size/10)
	case overlap < 0:
		overlap = 0
	}
	return size, overlap
}

// normalized is effective made safe for any Config, valid or not: a
// negative Size means DefaultSize and an Overlap not below Size is reduced
// to Size/2.
func (c Config) normalized() (size, overlap int) {
	if c.Size < 0 {
		c.Size = 0
	}
	size, overlap = c.effective()
	if overlap >= size {
		overlap = size / 2
	}
	return size, overlap
}

// Chunk is a piece of the input text.
type Chunk struct {
	// Index is the chunk's position in the result, from 0.
	Index int
	// Text is the chunk's text, without leading or trailing white space.
	Text string
	// Start and End are byte offsets into the input: Text ==
	// input[Start:End].
	Start, End int
}

// Split cuts text into chunks of at most cfg.Size runes.
//
// Empty or white-space-only text gives no chunk (nil). Text whose content
// fits in Size gives one chunk. Otherwise each chunk is cut at the last
// boundary of the most preferred kind (see the package documentation) within
// Size runes; a boundary counts only past Overlap plus a quarter of the
// remaining Size-Overlap runes, so chunks are not needlessly short and each
// one advances by that much. Each chunk after the first starts up to Overlap
// runes before the end of the previous one, moved forward to the first word
// start in that stretch when there is one (in CJK text, to the start of a
// sentence), else to a grapheme boundary.
// Chunks are trimmed of white space, never empty and strictly increasing in
// both Start and End; together they cover every non-space rune of text.
//
// Split does not fail: cfg is used as described by Config, and a Config that
// fails Validate is clamped (a negative Size means DefaultSize; an Overlap
// not below Size is reduced to Size/2).
func Split(text string, cfg Config) []Chunk {
	size, overlap := cfg.normalized()
	start, end := trim(text, 0, len(text))
	if start == end {
		return nil
	}
	sp := splitter{s: text, end: end, size: size, overlap: overlap}
	// A chunk must reach past the overlap by a quarter of the rest of the
	// window before a boundary is accepted, so every chunk advances by that
	// much and the whole split stays linear.
	sp.minRunes = overlap + max(1, (size-overlap)/4)

	var chunks []Chunk
	prevEnd := -1 // End of the last chunk
	if n := utf8.RuneCountInString(text[start:end]); n > size {
		chunks = make([]Chunk, 0, n/max(1, size-overlap)+1)
	}
	for {
		w, fits := sp.scan(start)
		if fits {
			chunks = append(chunks, Chunk{Index: len(chunks), Text: text[start:end], Start: start, End: end})
			return chunks
		}
		cut := sp.cut(start, w)
		_, chunkEnd := trim(text, start, cut)
		next := -1
		if chunkEnd > prevEnd {
			chunks = append(chunks, Chunk{Index: len(chunks), Text: text[start:chunkEnd], Start: start, End: chunkEnd})
			prevEnd = chunkEnd
			if overlap > 0 {
				next = sp.overlapStart(start, chunkEnd)
			}
		}
		// Otherwise the window was the overlap followed by a hard cut in a
		// long run of white space: the chunk would only repeat the end of
		// the previous one, so skip it and resume after the run.
		if next < 0 {
			next, _ = trim(text, cut, end)
		}
		if next <= start || next >= end {
			// Unreachable: next > start by construction and the content
			// ends with a non-space rune. Stop rather than loop.
			return chunks
		}
		start = next
	}
}

// splitter holds the state of one Split call.
type splitter struct {
	s        string // the input
	end      int    // end of the content (trailing space trimmed)
	size     int    // maximum runes per chunk
	overlap  int    // overlap in runes
	minRunes int    // runes a chunk needs before a soft boundary counts
}

// window describes the size runes after a chunk's start: where they end and
// the last boundary of each kind at or after minPos, -1 when there is none.
type window struct {
	minPos, end                int
	para, line, sentence, word int
}

// scan walks up to size runes from start, recording the boundaries a chunk
// may end at. It reports fits when the content ends within the window, and
// then the window is not filled in.
func (sp *splitter) scan(start int) (w window, fits bool) {
	s := sp.s
	w = window{minPos: -1, para: -1, line: -1, sentence: -1, word: -1}
	var prev rune
	for p, n := start, 0; ; n++ {
		if p >= sp.end {
			return w, true
		}
		r, size := decodeRune(s[p:])
		if n >= sp.minRunes {
			// p may end the chunk: examine the boundary between prev
			// and r.
			if w.minPos < 0 {
				w.minPos = p
			}
			space := isSpace(r)
			if space && !isSpace(prev) {
				switch newlines(s[p:]) {
				case 0:
					w.word = p
				case 1:
					w.line = p
				default:
					w.para = p
				}
			}
			if mayEndSentence(prev) && isSentenceEnd(s, start, p, r) {
				w.sentence = p
			}
		}
		if n == sp.size {
			w.end = p
			return w, false
		}
		prev = r
		p += size
	}
}

// cut returns where the chunk starting at start ends: the last boundary of
// the most preferred kind in its window, or a hard cut near the window's end.
func (sp *splitter) cut(start int, w window) int {
	for _, b := range [...]int{w.para, w.line, w.sentence, w.word} {
		if b > start {
			return b
		}
	}
	// Hard cut: step back to a grapheme boundary, but not below minPos;
	// a cluster longer than that is cut anyway.
	for p := w.end; p >= w.minPos; {
		if graphemeBoundary(sp.s, start, p) {
			return p
		}
		_, size := utf8.DecodeLastRuneInString(sp.s[:p])
		p -= size
	}
	return w.end
}

// overlapStart returns where the chunk after [chunkStart, chunkEnd) starts:
// up to overlap runes before chunkEnd, moved forward to the first word start
// (or the first rune after a CJK sentence end) in that stretch, else to the
// first grapheme boundary. It returns -1 when there is no overlap to take:
// the chunk is not longer than the overlap.
func (sp *splitter) overlapStart(chunkStart, chunkEnd int) int {
	s := sp.s
	ov := chunkEnd
	for n := 0; n < sp.overlap && ov > chunkStart; n++ {
		_, w := utf8.DecodeLastRuneInString(s[:ov])
		ov -= w
	}
	if ov <= chunkStart {
		return -1
	}
	for p := ov; p < chunkEnd; {
		prev, _ := utf8.DecodeLastRuneInString(s[:p])
		r, w := utf8.DecodeRuneInString(s[p:])
		if !isSpace(r) && (isSpace(prev) || isCJKTerminator(prev)) {
			return p
		}
		p += w
	}
	// No word boundary (CJK text, a long word): start mid-word, at a
	// grapheme boundary.
	for p := ov; p < chunkEnd; {
		if graphemeBoundary(s, chunkStart, p) {
			return p
		}
		_, w := utf8.DecodeRuneInString(s[p:])
		p += w
	}
	return -1
}

// trim returns the bounds of s[start:end] without leading and trailing white
// space; start == end when it is all space.
func trim(s string, start, end int) (int, int) {
	for start < end {
		r, w := utf8.DecodeRuneInString(s[start:end])
		if !isSpace(r) {
			break
		}
		start += w
	}
	for end > start {
		r, w := utf8.DecodeLastRuneInString(s[start:end])
		if !isSpace(r) {
			break
		}
		end -= w
	}
	return start, end
}

// newlines counts the line breaks in the white-space run at the start of s,
// stopping at 2: 0 for a word break, 1 for a line break, 2 for a paragraph
// break (a blank line). CR LF counts once; U+2029 PARAGRAPH SEPARATOR counts
// as a paragraph break by itself.
func newlines(s string) int {
	n := 0
	for i := 0; i < len(s) && n < 2; {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !isSpace(r) {
			break
		}
		switch r {
		case '\n', '\v', '\f', 0x85, 0x2028:
			n++
		case '\r':
			if i+1 >= len(s) || s[i+1] != '\n' {
				n++
			}
		case 0x2029:
			n += 2
		}
		i += w
	}
	return n
}

// isSentenceEnd reports whether p, followed by rune r, ends a sentence: it
// follows a terminator and optional closing quotes or brackets, and either
// the terminator is a CJK one or white space follows. The look-back stays
// within s[lo:p].
func isSentenceEnd(s string, lo, p int, r rune) bool {
	if isCloser(r) {
		return false // end after the closer instead
	}
	q := p
	for i := 0; i < maxClosers && q > lo; i++ {
		prev, w := utf8.DecodeLastRuneInString(s[lo:q])
		if !isCloser(prev) {
			break
		}
		q -= w
	}
	if q <= lo {
		return false
	}
	term, _ := utf8.DecodeLastRuneInString(s[lo:q])
	switch {
	case isCJKTerminator(term):
		return true
	case term == '.' || term == '!' || term == '?':
		return isSpace(r)
	}
	return false
}

// mayEndSentence reports whether r can be the last rune before a sentence
// end: a terminator or a closing quote or bracket.
func mayEndSentence(r rune) bool {
	return r == '.' || r == '!' || r == '?' || isCJKTerminator(r) || isCloser(r)
}

// decodeRune is utf8.DecodeRuneInString with an ASCII fast path.
func decodeRune(s string) (rune, int) {
	if len(s) > 0 && s[0] < utf8.RuneSelf {
		return rune(s[0]), 1
	}
	return utf8.DecodeRuneInString(s)
}

// maxClosers bounds how many closing quotes or brackets may follow a
// sentence terminator.
const maxClosers = 3

func isCJKTerminator(r rune) bool {
	switch r {
	case '。', '！', '？', '．', '｡':
		return true
	}
	return false
}

func isCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '”', '’', '»', '›', '」', '』', '）', '】', '〕', '〉', '》', '］', '｝':
		return true
	}
	return false
}

// isSpace is unicode.IsSpace with an ASCII fast path.
func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || '\t' <= r && r <= '\r'
	}
	return unicode.IsSpace(r)
}

// graphemeBoundary approximates the extended grapheme cluster rules
// (UAX #29) at byte offset p, looking back no further than lo: no break
// inside CR LF, before a combining or spacing mark, ZWJ, variation selector,
// emoji modifier or tag character, after a ZWJ, or between the two regional
// indicators of a flag.
func graphemeBoundary(s string, lo, p int) bool {
	if p <= lo || p >= len(s) {
		return true
	}
	prev, _ := utf8.DecodeLastRuneInString(s[lo:p])
	r, _ := utf8.DecodeRuneInString(s[p:])
	switch {
	case prev == '\r' && r == '\n':
		return false
	case prev < 0x20 || prev == 0x7F || prev == '\u0085':
		return true // break after controls
	case isExtend(r):
		return false
	case prev == zwj:
		return false
	case isRegionalIndicator(prev) && isRegionalIndicator(r):
		// Break only after an even number of regional indicators.
		n := 0
		for q := p; q > lo; {
			ri, w := utf8.DecodeLastRuneInString(s[lo:q])
			if !isRegionalIndicator(ri) {
				break
			}
			n++
			q -= w
		}
		return n%2 == 0
	}
	return true
}

const zwj = '\u200D'

// isExtend reports whether r attaches to the preceding character.
func isExtend(r rune) bool {
	switch {
	case r < 0x300:
		return false
	case r == zwj,
		0xFE00 <= r && r <= 0xFE0F,   // variation selectors
		0x1F3FB <= r && r <= 0x1F3FF, // emoji skin tone modifiers
		0xE0020 <= r && r <= 0xE007F, // tags (subdivision flags)
		0xE0100 <= r && r <= 0xE01EF: // variation selectors supplement
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc)
}

func isRegionalIndicator(r rune) bool { return 0x1F1E6 <= r && r <= 0x1F1FF }
