// Package tsparse is PostgreSQL's default text-search parser with the
// `simple` dictionary, extended with token positions: Vector returns what
// to_tsvector('simple', s) stores, lexemes with their positions.
//
// The parser is a verbatim copy of internal/query's port (lexeme.go, verified
// against PostgreSQL 15 on 180k inputs), because that package exports only
// the lexeme set (query.Lexemes) and the keyword ranking needs positions. The
// storage/sqlite tests check that Vector's lexeme set equals query.Lexemes for
// every golden and fuzzed input, so the two copies cannot drift apart
// unnoticed. Once internal/query exports positions this package should go.
package tsparse

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxTokenBytes is the longest token to_tsvector indexes; it skips longer
// ones with the notice "word is too long to be indexed".
const maxTokenBytes = 2047

// Limits of a tsvector's positional information (PostgreSQL's ts_type.h).
const (
	// MaxPos is the largest position a tsvector records (MAXENTRYPOS-1);
	// later tokens are all recorded at MaxPos.
	MaxPos = 1<<14 - 1
	// MaxPositions is how many positions a lexeme keeps (MAXNUMPOS-1);
	// further occurrences are dropped.
	MaxPositions = 255
)

// Lexeme is one entry of a tsvector: a lexeme and its positions, ascending,
// distinct, capped at MaxPos, at most MaxPositions of them.
type Lexeme struct {
	Word string
	Pos  []uint16
}

// Vector returns to_tsvector('simple', s): its lexemes in PostgreSQL's
// order (byte order, the order query.Lexemes uses) with their positions.
// Positions count the indexed tokens from 1, as parsetext does: blanks,
// tags, protocols, XML entities and tokens longer than 2047 bytes take no
// position.
func Vector(s string) []Lexeme {
	type occ struct {
		word string
		pos  int
	}
	var occs []occ
	p := newTokenizer(s)
	pos := 0
	for {
		tok, typ, ok := p.next()
		if !ok {
			break
		}
		if !indexed(typ) || len(tok) > maxTokenBytes {
			continue
		}
		pos++
		occs = append(occs, occ{strings.ToLower(tok), min(pos, MaxPos)})
	}
	if len(occs) == 0 {
		return nil
	}
	// uniqueWORD: sort by word then position, then gather positions.
	slices.SortStableFunc(occs, func(a, b occ) int {
		if c := strings.Compare(a.word, b.word); c != 0 {
			return c
		}
		return a.pos - b.pos
	})
	var out []Lexeme
	for _, o := range occs {
		if n := len(out); n > 0 && out[n-1].Word == o.word {
			l := &out[n-1]
			last := l.Pos[len(l.Pos)-1]
			if len(l.Pos) < MaxPositions && last != MaxPos && int(last) != o.pos {
				l.Pos = append(l.Pos, uint16(o.pos))
			}
			continue
		}
		out = append(out, Lexeme{Word: o.word, Pos: []uint16{uint16(o.pos)}})
	}
	return out
}

// tokType is a token type of PostgreSQL's default parser; the names in
// comments are the aliases ts_debug shows.
type tokType uint8

const (
	tokNone           tokType = iota
	tokASCIIWord              // asciiword
	tokWord                   // word
	tokNumWord                // numword
	tokEmail                  // email
	tokURL                    // url
	tokHost                   // host
	tokScientific             // sfloat
	tokVersion                // version
	tokNumPartHWord           // hword_numpart
	tokPartHWord              // hword_part
	tokASCIIPartHWord         // hword_asciipart
	tokSpace                  // blank
	tokTag                    // tag
	tokProtocol               // protocol
	tokNumHWord               // numhword
	tokASCIIHWord             // asciihword
	tokHWord                  // hword
	tokURLPath                // url_path
	tokFile                   // file
	tokDecimal                // float
	tokSignedInt              // int
	tokUnsignedInt            // uint
	tokXMLEntity              // entity
)

// indexed reports whether the `simple` configuration maps token type t to a
// dictionary; unmapped tokens produce no lexeme.
func indexed(t tokType) bool {
	switch t {
	case tokNone, tokSpace, tokTag, tokProtocol, tokXMLEntity:
		return false
	}
	return true
}

// pstate is a parser state.
type pstate uint8

const (
	psBase pstate = iota
	psInNumWord
	psInASCIIWord
	psInWord
	psInUnsignedInt
	psInSignedIntFirst
	psInSignedInt
	psInSpace
	psInUDecimalFirst
	psInUDecimal
	psInDecimalFirst
	psInDecimal
	psInVerVersion
	psInSVerVersion
	psInVersionFirst
	psInVersion
	psInMantissaFirst
	psInMantissaSign
	psInMantissa
	psInXMLEntityFirst
	psInXMLEntity
	psInXMLEntityNumFirst
	psInXMLEntityNum
	psInXMLEntityHexNumFirst
	psInXMLEntityHexNum
	psInXMLEntityEnd
	psInTagFirst
	psInXMLBegin
	psInTagCloseFirst
	psInTagName
	psInTagBeginEnd
	psInTag
	psInTagEscapeK
	psInTagEscapeKK
	psInTagBackSleshed
	psInTagEnd
	psInCommentFirst
	psInCommentLast
	psInComment
	psInCloseCommentFirst
	psInCloseCommentLast
	psInCommentEnd
	psInHostFirstDomain
	psInHostDomainSecond
	psInHostDomain
	psInPortFirst
	psInPort
	psInHostFirstAN
	psInHost
	psInEmail
	psInFileFirst
	psInFileTwiddle
	psInPathFirst
	psInPathFirstFirst
	psInPathSecond
	psInFile
	psInFileNext
	psInURLPathFirst
	psInURLPathStart
	psInURLPath
	psInFURL
	psInProtocolFirst
	psInProtocolSecond
	psInProtocolEnd
	psInHyphenASCIIWordFirst
	psInHyphenASCIIWord
	psInHyphenWordFirst
	psInHyphenWord
	psInHyphenNumWordFirst
	psInHyphenNumWord
	psInHyphenDigitLookahead
	psInParseHyphen
	psInParseHyphenHyphen
	psInHyphenWordPart
	psInHyphenASCIIWordPart
	psInHyphenNumWordPart
	psInHyphenUnsignedInt
	psNull // no state change
)

// test is a character test of a state transition.
type test uint8

const (
	tAny      test = iota // always matches; ends every action list
	tEOF                  // end of input
	tEq                   // the current character is the action's ASCII byte
	tIgnore               // inside <script> or <style>
	tASCIILet             // ASCII letter
	tAlpha                // letter
	tDigit                // ASCII digit
	tAlnum                // letter or digit
	tNotAlnum             // neither letter nor digit
	tSpecial              // zero-width or spacing mark: part of a word, not its start
	tSpace                // white space
	tXDigit               // ASCII hex digit
	tStopHost             // a host is wanted and ends here (consumes the flag)
	tHost                 // a host name starts here (consumes it)
	tURLPath              // a URL path starts here (consumes it)
	tURLChar              // character allowed in a URL path
)

// Flags of an action. Without aRerun, aPop or aBingo the parser moves to
// the next character.
const (
	aBingo  uint8 = 1 << iota // a token is complete
	aPop                      // restore the pushed position, retry its next action
	aPush                     // save the position to backtrack to
	aRerun                    // re-examine the current character
	aClear                    // drop the pushed position below the current one
	aMerge                    // merge the current position into the pushed one
	aClrAll                   // drop all pushed positions
)

// special is a side effect of an action.
type special uint8

const (
	spNone       special = iota
	spTags               // track <script>/<style> to ignore their content
	spFURL               // rewind to reparse a URL as host + path
	spHyphen             // rewind to reparse a hyphenated word's parts
	spVerVersion         // rewind before "1.2.3" seen as a decimal
)

// action is one transition: when test matches the current character, do
// flags, go to state to and, on aBingo, emit a token of type typ.
type action struct {
	test  test
	c     byte
	flags uint8
	to    pstate
	typ   tokType
	sp    special
}

// actions lists, per state, the transitions tried in order. It transcribes
// the tables of PostgreSQL's wparser_def.c.
var actions = [psNull][]action{
	psBase: {
		{test: tEOF, to: psNull},
		{test: tEq, c: '<', flags: aPush, to: psInTagFirst},
		{test: tIgnore, to: psInSpace},
		{test: tASCIILet, to: psInASCIIWord},
		{test: tAlpha, to: psInWord},
		{test: tDigit, to: psInUnsignedInt},
		{test: tEq, c: '-', flags: aPush, to: psInSignedIntFirst},
		{test: tEq, c: '+', flags: aPush, to: psInSignedIntFirst},
		{test: tEq, c: '&', flags: aPush, to: psInXMLEntityFirst},
		{test: tEq, c: '~', flags: aPush, to: psInFileTwiddle},
		{test: tEq, c: '/', flags: aPush, to: psInFileFirst},
		{test: tEq, c: '.', flags: aPush, to: psInPathFirstFirst},
		{test: tAny, to: psInSpace},
	},
	psInNumWord: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokNumWord},
		{test: tAlnum, to: psInNumWord},
		{test: tSpecial, to: psInNumWord},
		{test: tEq, c: '@', flags: aPush, to: psInEmail},
		{test: tEq, c: '/', flags: aPush, to: psInFileFirst},
		{test: tEq, c: '.', flags: aPush, to: psInFileNext},
		{test: tEq, c: '-', flags: aPush, to: psInHyphenNumWordFirst},
		{test: tAny, flags: aBingo, to: psBase, typ: tokNumWord},
	},
	psInASCIIWord: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokASCIIWord},
		{test: tASCIILet, to: psNull},
		{test: tEq, c: '.', flags: aPush, to: psInHostFirstDomain},
		{test: tEq, c: '.', flags: aPush, to: psInFileNext},
		{test: tEq, c: '-', flags: aPush, to: psInHostFirstAN},
		{test: tEq, c: '-', flags: aPush, to: psInHyphenASCIIWordFirst},
		{test: tEq, c: '_', flags: aPush, to: psInHostFirstAN},
		{test: tEq, c: '@', flags: aPush, to: psInEmail},
		{test: tEq, c: ':', flags: aPush, to: psInProtocolFirst},
		{test: tEq, c: '/', flags: aPush, to: psInFileFirst},
		{test: tDigit, flags: aPush, to: psInHost},
		{test: tDigit, to: psInNumWord},
		{test: tAlpha, to: psInWord},
		{test: tSpecial, to: psInWord},
		{test: tAny, flags: aBingo, to: psBase, typ: tokASCIIWord},
	},
	psInWord: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokWord},
		{test: tAlpha, to: psNull},
		{test: tSpecial, to: psNull},
		{test: tDigit, to: psInNumWord},
		{test: tEq, c: '-', flags: aPush, to: psInHyphenWordFirst},
		{test: tAny, flags: aBingo, to: psBase, typ: tokWord},
	},
	psInUnsignedInt: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokUnsignedInt},
		{test: tDigit, to: psNull},
		{test: tEq, c: '.', flags: aPush, to: psInHostFirstDomain},
		{test: tEq, c: '.', flags: aPush, to: psInUDecimalFirst},
		{test: tEq, c: 'e', flags: aPush, to: psInMantissaFirst},
		{test: tEq, c: 'E', flags: aPush, to: psInMantissaFirst},
		{test: tEq, c: '-', flags: aPush, to: psInHostFirstAN},
		{test: tEq, c: '_', flags: aPush, to: psInHostFirstAN},
		{test: tEq, c: '@', flags: aPush, to: psInEmail},
		{test: tASCIILet, flags: aPush, to: psInHost},
		{test: tAlpha, to: psInNumWord},
		{test: tSpecial, to: psInNumWord},
		{test: tEq, c: '/', flags: aPush, to: psInFileFirst},
		{test: tAny, flags: aBingo, to: psBase, typ: tokUnsignedInt},
	},
	psInSignedIntFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, flags: aClear, to: psInSignedInt},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInSignedInt: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokSignedInt},
		{test: tDigit, to: psNull},
		{test: tEq, c: '.', flags: aPush, to: psInDecimalFirst},
		{test: tEq, c: 'e', flags: aPush, to: psInMantissaFirst},
		{test: tEq, c: 'E', flags: aPush, to: psInMantissaFirst},
		{test: tAny, flags: aBingo, to: psBase, typ: tokSignedInt},
	},
	psInSpace: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokSpace},
		{test: tEq, c: '<', flags: aBingo, to: psBase, typ: tokSpace},
		{test: tIgnore, to: psNull},
		{test: tEq, c: '-', flags: aBingo, to: psBase, typ: tokSpace},
		{test: tEq, c: '+', flags: aBingo, to: psBase, typ: tokSpace},
		{test: tEq, c: '&', flags: aBingo, to: psBase, typ: tokSpace},
		{test: tEq, c: '/', flags: aBingo, to: psBase, typ: tokSpace},
		{test: tNotAlnum, to: psInSpace},
		{test: tAny, flags: aBingo, to: psBase, typ: tokSpace},
	},
	psInUDecimalFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, flags: aClear, to: psInUDecimal},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInUDecimal: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokDecimal},
		{test: tDigit, to: psInUDecimal},
		{test: tEq, c: '.', flags: aPush, to: psInVersionFirst},
		{test: tEq, c: 'e', flags: aPush, to: psInMantissaFirst},
		{test: tEq, c: 'E', flags: aPush, to: psInMantissaFirst},
		{test: tAny, flags: aBingo, to: psBase, typ: tokDecimal},
	},
	psInDecimalFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, flags: aClear, to: psInDecimal},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInDecimal: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokDecimal},
		{test: tDigit, to: psInDecimal},
		{test: tEq, c: '.', flags: aPush, to: psInVerVersion},
		{test: tEq, c: 'e', flags: aPush, to: psInMantissaFirst},
		{test: tEq, c: 'E', flags: aPush, to: psInMantissaFirst},
		{test: tAny, flags: aBingo, to: psBase, typ: tokDecimal},
	},
	psInVerVersion: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, flags: aRerun, to: psInSVerVersion, sp: spVerVersion},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInSVerVersion: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, flags: aBingo | aClrAll, to: psInUnsignedInt, typ: tokSpace},
		{test: tAny, to: psNull},
	},
	psInVersionFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, flags: aClear, to: psInVersion},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInVersion: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokVersion},
		{test: tDigit, to: psInVersion},
		{test: tEq, c: '.', flags: aPush, to: psInVersionFirst},
		{test: tAny, flags: aBingo, to: psBase, typ: tokVersion},
	},
	psInMantissaFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, flags: aClear, to: psInMantissa},
		{test: tEq, c: '+', to: psInMantissaSign},
		{test: tEq, c: '-', to: psInMantissaSign},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInMantissaSign: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, flags: aClear, to: psInMantissa},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInMantissa: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokScientific},
		{test: tDigit, to: psInMantissa},
		{test: tAny, flags: aBingo, to: psBase, typ: tokScientific},
	},
	psInXMLEntityFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '#', to: psInXMLEntityNumFirst},
		{test: tASCIILet, to: psInXMLEntity},
		{test: tEq, c: ':', to: psInXMLEntity},
		{test: tEq, c: '_', to: psInXMLEntity},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInXMLEntity: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tAlnum, to: psInXMLEntity},
		{test: tEq, c: ':', to: psInXMLEntity},
		{test: tEq, c: '_', to: psInXMLEntity},
		{test: tEq, c: '.', to: psInXMLEntity},
		{test: tEq, c: '-', to: psInXMLEntity},
		{test: tEq, c: ';', to: psInXMLEntityEnd},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInXMLEntityNumFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: 'x', to: psInXMLEntityHexNumFirst},
		{test: tEq, c: 'X', to: psInXMLEntityHexNumFirst},
		{test: tDigit, to: psInXMLEntityNum},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInXMLEntityHexNumFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tXDigit, to: psInXMLEntityHexNum},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInXMLEntityNum: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, to: psInXMLEntityNum},
		{test: tEq, c: ';', to: psInXMLEntityEnd},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInXMLEntityHexNum: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tXDigit, to: psInXMLEntityHexNum},
		{test: tEq, c: ';', to: psInXMLEntityEnd},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInXMLEntityEnd: {
		{test: tAny, flags: aBingo | aClear, to: psBase, typ: tokXMLEntity},
	},
	psInTagFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '/', flags: aPush, to: psInTagCloseFirst},
		{test: tEq, c: '!', flags: aPush, to: psInCommentFirst},
		{test: tEq, c: '?', flags: aPush, to: psInXMLBegin},
		{test: tASCIILet, flags: aPush, to: psInTagName},
		{test: tEq, c: ':', flags: aPush, to: psInTagName},
		{test: tEq, c: '_', flags: aPush, to: psInTagName},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInXMLBegin: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: 'x', to: psInTag},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInTagCloseFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tASCIILet, to: psInTagName},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInTagName: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '/', to: psInTagBeginEnd},
		{test: tEq, c: '>', to: psInTagEnd, sp: spTags},
		{test: tSpace, to: psInTag, sp: spTags},
		{test: tAlnum, to: psNull},
		{test: tEq, c: ':', to: psNull},
		{test: tEq, c: '_', to: psNull},
		{test: tEq, c: '.', to: psNull},
		{test: tEq, c: '-', to: psNull},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInTagBeginEnd: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '>', to: psInTagEnd},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInTag: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '>', to: psInTagEnd, sp: spTags},
		{test: tEq, c: '\'', to: psInTagEscapeK},
		{test: tEq, c: '"', to: psInTagEscapeKK},
		{test: tASCIILet, to: psNull},
		{test: tDigit, to: psNull},
		{test: tEq, c: '=', to: psNull},
		{test: tEq, c: '-', to: psNull},
		{test: tEq, c: '_', to: psNull},
		{test: tEq, c: '#', to: psNull},
		{test: tEq, c: '/', to: psNull},
		{test: tEq, c: ':', to: psNull},
		{test: tEq, c: '.', to: psNull},
		{test: tEq, c: '&', to: psNull},
		{test: tEq, c: '?', to: psNull},
		{test: tEq, c: '%', to: psNull},
		{test: tEq, c: '~', to: psNull},
		{test: tSpace, to: psNull, sp: spTags},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInTagEscapeK: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '\\', flags: aPush, to: psInTagBackSleshed},
		{test: tEq, c: '\'', to: psInTag},
		{test: tAny, to: psInTagEscapeK},
	},
	psInTagEscapeKK: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '\\', flags: aPush, to: psInTagBackSleshed},
		{test: tEq, c: '"', to: psInTag},
		{test: tAny, to: psInTagEscapeKK},
	},
	psInTagBackSleshed: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tAny, flags: aMerge, to: psNull},
	},
	psInTagEnd: {
		{test: tAny, flags: aBingo | aClrAll, to: psBase, typ: tokTag},
	},
	psInCommentFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '-', to: psInCommentLast},
		{test: tEq, c: 'D', to: psInTag},
		{test: tEq, c: 'd', to: psInTag},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInCommentLast: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '-', to: psInComment},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInComment: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '-', to: psInCloseCommentFirst},
		{test: tAny, to: psNull},
	},
	psInCloseCommentFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '-', to: psInCloseCommentLast},
		{test: tAny, to: psInComment},
	},
	psInCloseCommentLast: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '-', to: psNull},
		{test: tEq, c: '>', to: psInCommentEnd},
		{test: tAny, to: psInComment},
	},
	psInCommentEnd: {
		{test: tAny, flags: aBingo | aClrAll, to: psBase, typ: tokTag},
	},
	psInHostFirstDomain: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tASCIILet, to: psInHostDomainSecond},
		{test: tDigit, to: psInHost},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInHostDomainSecond: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tASCIILet, to: psInHostDomain},
		{test: tDigit, flags: aPush, to: psInHost},
		{test: tEq, c: '-', flags: aPush, to: psInHostFirstAN},
		{test: tEq, c: '_', flags: aPush, to: psInHostFirstAN},
		{test: tEq, c: '.', flags: aPush, to: psInHostFirstDomain},
		{test: tEq, c: '@', flags: aPush, to: psInEmail},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInHostDomain: {
		{test: tEOF, flags: aBingo | aClrAll, to: psBase, typ: tokHost},
		{test: tASCIILet, to: psInHostDomain},
		{test: tDigit, flags: aPush, to: psInHost},
		{test: tEq, c: ':', flags: aPush, to: psInPortFirst},
		{test: tEq, c: '-', flags: aPush, to: psInHostFirstAN},
		{test: tEq, c: '_', flags: aPush, to: psInHostFirstAN},
		{test: tEq, c: '.', flags: aPush, to: psInHostFirstDomain},
		{test: tEq, c: '@', flags: aPush, to: psInEmail},
		{test: tDigit, flags: aPop, to: psNull},
		{test: tStopHost, flags: aBingo | aClrAll, to: psInURLPathStart, typ: tokHost},
		{test: tEq, c: '/', flags: aPush, to: psInFURL},
		{test: tAny, flags: aBingo | aClrAll, to: psBase, typ: tokHost},
	},
	psInPortFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, to: psInPort},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInPort: {
		{test: tEOF, flags: aBingo | aClrAll, to: psBase, typ: tokHost},
		{test: tDigit, to: psInPort},
		{test: tStopHost, flags: aBingo | aClrAll, to: psInURLPathStart, typ: tokHost},
		{test: tEq, c: '/', flags: aPush, to: psInFURL},
		{test: tAny, flags: aBingo | aClrAll, to: psBase, typ: tokHost},
	},
	psInHostFirstAN: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, to: psInHost},
		{test: tASCIILet, to: psInHost},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInHost: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, to: psInHost},
		{test: tASCIILet, to: psInHost},
		{test: tEq, c: '@', flags: aPush, to: psInEmail},
		{test: tEq, c: '.', flags: aPush, to: psInHostFirstDomain},
		{test: tEq, c: '-', flags: aPush, to: psInHostFirstAN},
		{test: tEq, c: '_', flags: aPush, to: psInHostFirstAN},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInEmail: {
		{test: tStopHost, flags: aPop, to: psNull},
		{test: tHost, flags: aBingo | aClrAll, to: psBase, typ: tokEmail},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInFileFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tASCIILet, to: psInFile},
		{test: tDigit, to: psInFile},
		{test: tEq, c: '.', to: psInPathFirst},
		{test: tEq, c: '_', to: psInFile},
		{test: tEq, c: '~', flags: aPush, to: psInFileTwiddle},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInFileTwiddle: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tASCIILet, to: psInFile},
		{test: tDigit, to: psInFile},
		{test: tEq, c: '_', to: psInFile},
		{test: tEq, c: '/', to: psInFileFirst},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInPathFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tASCIILet, to: psInFile},
		{test: tDigit, to: psInFile},
		{test: tEq, c: '_', to: psInFile},
		{test: tEq, c: '.', to: psInPathSecond},
		{test: tEq, c: '/', to: psInFileFirst},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInPathFirstFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '.', to: psInPathSecond},
		{test: tEq, c: '/', to: psInFileFirst},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInPathSecond: {
		{test: tEOF, flags: aBingo | aClear, to: psBase, typ: tokFile},
		{test: tEq, c: '/', flags: aPush, to: psInFileFirst},
		{test: tEq, c: '/', flags: aBingo | aClear, to: psBase, typ: tokFile},
		{test: tSpace, flags: aBingo | aClear, to: psBase, typ: tokFile},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInFile: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokFile},
		{test: tASCIILet, to: psInFile},
		{test: tDigit, to: psInFile},
		{test: tEq, c: '.', flags: aPush, to: psInFileNext},
		{test: tEq, c: '_', to: psInFile},
		{test: tEq, c: '-', to: psInFile},
		{test: tEq, c: '/', flags: aPush, to: psInFileFirst},
		{test: tAny, flags: aBingo, to: psBase, typ: tokFile},
	},
	psInFileNext: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tASCIILet, flags: aClear, to: psInFile},
		{test: tDigit, flags: aClear, to: psInFile},
		{test: tEq, c: '_', flags: aClear, to: psInFile},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInURLPathFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tURLChar, to: psInURLPath},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInURLPathStart: {
		{test: tAny, to: psInURLPath},
	},
	psInURLPath: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokURLPath},
		{test: tURLChar, to: psInURLPath},
		{test: tAny, flags: aBingo, to: psBase, typ: tokURLPath},
	},
	psInFURL: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tURLPath, flags: aBingo | aClrAll, to: psBase, typ: tokURL, sp: spFURL},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInProtocolFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '/', to: psInProtocolSecond},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInProtocolSecond: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tEq, c: '/', to: psInProtocolEnd},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInProtocolEnd: {
		{test: tAny, flags: aBingo | aClrAll, to: psBase, typ: tokProtocol},
	},
	psInHyphenASCIIWordFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tASCIILet, to: psInHyphenASCIIWord},
		{test: tAlpha, to: psInHyphenWord},
		{test: tDigit, to: psInHyphenDigitLookahead},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInHyphenASCIIWord: {
		{test: tEOF, flags: aBingo | aClrAll, to: psInParseHyphen, typ: tokASCIIHWord, sp: spHyphen},
		{test: tASCIILet, to: psInHyphenASCIIWord},
		{test: tAlpha, to: psInHyphenWord},
		{test: tSpecial, to: psInHyphenWord},
		{test: tDigit, to: psInHyphenNumWord},
		{test: tEq, c: '-', flags: aPush, to: psInHyphenASCIIWordFirst},
		{test: tAny, flags: aBingo | aClrAll, to: psInParseHyphen, typ: tokASCIIHWord, sp: spHyphen},
	},
	psInHyphenWordFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tAlpha, to: psInHyphenWord},
		{test: tDigit, to: psInHyphenDigitLookahead},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInHyphenWord: {
		{test: tEOF, flags: aBingo | aClrAll, to: psInParseHyphen, typ: tokHWord, sp: spHyphen},
		{test: tAlpha, to: psInHyphenWord},
		{test: tSpecial, to: psInHyphenWord},
		{test: tDigit, to: psInHyphenNumWord},
		{test: tEq, c: '-', flags: aPush, to: psInHyphenWordFirst},
		{test: tAny, flags: aBingo | aClrAll, to: psInParseHyphen, typ: tokHWord, sp: spHyphen},
	},
	psInHyphenNumWordFirst: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tAlpha, to: psInHyphenNumWord},
		{test: tDigit, to: psInHyphenDigitLookahead},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInHyphenNumWord: {
		{test: tEOF, flags: aBingo | aClrAll, to: psInParseHyphen, typ: tokNumHWord, sp: spHyphen},
		{test: tAlnum, to: psInHyphenNumWord},
		{test: tSpecial, to: psInHyphenNumWord},
		{test: tEq, c: '-', flags: aPush, to: psInHyphenNumWordFirst},
		{test: tAny, flags: aBingo | aClrAll, to: psInParseHyphen, typ: tokNumHWord, sp: spHyphen},
	},
	psInHyphenDigitLookahead: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, to: psInHyphenDigitLookahead},
		{test: tAlpha, to: psInHyphenNumWord},
		{test: tSpecial, to: psInHyphenNumWord},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInParseHyphen: {
		{test: tEOF, flags: aRerun, to: psBase},
		{test: tASCIILet, to: psInHyphenASCIIWordPart},
		{test: tAlpha, to: psInHyphenWordPart},
		{test: tDigit, flags: aPush, to: psInHyphenUnsignedInt},
		{test: tEq, c: '-', flags: aPush, to: psInParseHyphenHyphen},
		{test: tAny, flags: aRerun, to: psBase},
	},
	psInParseHyphenHyphen: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tAlnum, flags: aBingo | aClear, to: psInParseHyphen, typ: tokSpace},
		{test: tSpecial, flags: aBingo | aClear, to: psInParseHyphen, typ: tokSpace},
		{test: tAny, flags: aPop, to: psNull},
	},
	psInHyphenWordPart: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokPartHWord},
		{test: tAlpha, to: psInHyphenWordPart},
		{test: tSpecial, to: psInHyphenWordPart},
		{test: tDigit, to: psInHyphenNumWordPart},
		{test: tAny, flags: aBingo, to: psInParseHyphen, typ: tokPartHWord},
	},
	psInHyphenASCIIWordPart: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokASCIIPartHWord},
		{test: tASCIILet, to: psInHyphenASCIIWordPart},
		{test: tAlpha, to: psInHyphenWordPart},
		{test: tSpecial, to: psInHyphenWordPart},
		{test: tDigit, to: psInHyphenNumWordPart},
		{test: tAny, flags: aBingo, to: psInParseHyphen, typ: tokASCIIPartHWord},
	},
	psInHyphenNumWordPart: {
		{test: tEOF, flags: aBingo, to: psBase, typ: tokNumPartHWord},
		{test: tAlnum, to: psInHyphenNumWordPart},
		{test: tSpecial, to: psInHyphenNumWordPart},
		{test: tAny, flags: aBingo, to: psInParseHyphen, typ: tokNumPartHWord},
	},
	psInHyphenUnsignedInt: {
		{test: tEOF, flags: aPop, to: psNull},
		{test: tDigit, to: psNull},
		{test: tAlpha, flags: aClear, to: psInHyphenNumWordPart},
		{test: tSpecial, flags: aClear, to: psInHyphenNumWordPart},
		{test: tAny, flags: aPop, to: psNull},
	},
}

// position is a parser position; pushed copies allow backtracking.
type position struct {
	posByte  int    // position in the input
	charLen  int    // byte length of the character at posByte, 0 at the end
	lenByte  int    // bytes of the token so far
	lenChar  int    // characters of the token so far
	state    pstate // current state
	pushedAt int    // index of the action that pushed this position, or -1
}

// tokenizer is PostgreSQL's default parser over one input string.
type tokenizer struct {
	s        string
	stack    []position // the last element is the current position
	ignore   bool       // inside <script> or <style>
	wantHost bool       // the next host ends where a URL path starts

	// The last token.
	tokStart int
	tokLen   int
	tokChars int
	typ      tokType
}

func newTokenizer(s string) *tokenizer {
	t := &tokenizer{s: s}
	t.stack = append(make([]position, 0, 8), position{state: psBase, pushedAt: -1})
	return t
}

// next returns the next token and its type; ok is false at the end.
func (t *tokenizer) next() (tok string, typ tokType, ok bool) {
	if !t.get() {
		return "", tokNone, false
	}
	return t.s[t.tokStart : t.tokStart+t.tokLen], t.typ, true
}

func (t *tokenizer) top() *position { return &t.stack[len(t.stack)-1] }

// get advances to the next token, as TParserGet does.
func (t *tokenizer) get() bool {
	cur := t.top()
	if cur.posByte >= len(t.s) {
		return false
	}
	t.tokStart = cur.posByte
	cur.pushedAt = -1

	var item *action
	for t.top().posByte <= len(t.s) {
		cur = t.top()
		if cur.posByte == len(t.s) {
			cur.charLen = 0
		} else {
			_, cur.charLen = utf8.DecodeRuneInString(t.s[cur.posByte:])
		}

		list := actions[cur.state]
		i := 0
		if cur.pushedAt >= 0 {
			// After a pop, resume with the action after the push.
			i = cur.pushedAt + 1
			cur.pushedAt = -1
		}
		for list[i].test != tAny && !t.match(&list[i]) {
			i++
		}
		item = &list[i]
		cur = t.top() // match may not change the stack, but be explicit

		switch item.sp {
		case spTags:
			t.specialTags()
		case spFURL:
			t.wantHost = true
			cur.posByte -= cur.lenByte
		case spHyphen:
			cur.posByte -= cur.lenByte
		case spVerVersion:
			cur.posByte -= cur.lenByte
			cur.lenByte, cur.lenChar = 0, 0
		}

		if item.flags&aBingo != 0 {
			t.tokLen, t.tokChars = cur.lenByte, cur.lenChar
			cur.lenByte, cur.lenChar = 0, 0
			t.typ = item.typ
		}

		if item.flags&(aPop|aClear|aMerge) != 0 && len(t.stack) < 2 {
			// Unreachable with PostgreSQL's tables, which only pop,
			// clear or merge after a push; stop rather than panic.
			return false
		}
		switch {
		case item.flags&aPop != 0:
			t.stack = t.stack[:len(t.stack)-1]
		case item.flags&aPush != 0:
			cur.pushedAt = i
			n := *cur
			n.pushedAt = -1
			t.stack = append(t.stack, n)
		case item.flags&aClear != 0:
			// Drop the pushed position just below the current one.
			last := len(t.stack) - 1
			t.stack[last-1] = t.stack[last]
			t.stack = t.stack[:last]
		case item.flags&aClrAll != 0:
			t.stack[0] = *cur
			t.stack = t.stack[:1]
		case item.flags&aMerge != 0:
			last := len(t.stack) - 1
			prev := &t.stack[last-1]
			prev.posByte = cur.posByte
			prev.charLen = cur.charLen
			prev.lenByte = cur.lenByte
			prev.lenChar = cur.lenChar
			t.stack = t.stack[:last]
		}
		cur = t.top()

		if item.to != psNull {
			cur.state = item.to
		}

		if item.flags&aBingo != 0 || (cur.posByte >= len(t.s) && item.flags&aRerun == 0) {
			break
		}
		if item.flags&(aRerun|aPop) != 0 {
			continue
		}
		if cur.charLen > 0 {
			cur.posByte += cur.charLen
			cur.lenByte += cur.charLen
			cur.lenChar++
		}
	}
	return item != nil && item.flags&aBingo != 0
}

// match runs the character test of a.
func (t *tokenizer) match(a *action) bool {
	cur := t.top()
	if a.test == tEOF {
		return cur.posByte == len(t.s) || cur.charLen == 0
	}
	var r rune
	if cur.charLen > 0 {
		r, _ = utf8.DecodeRuneInString(t.s[cur.posByte:])
	}
	switch a.test {
	case tAny:
		return true
	case tEq:
		return cur.charLen == 1 && t.s[cur.posByte] == a.c
	case tIgnore:
		return t.ignore
	case tASCIILet:
		return cur.charLen == 1 && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
	case tAlpha:
		return cur.charLen > 0 && isPGAlpha(r)
	case tDigit:
		return '0' <= r && r <= '9'
	case tAlnum:
		return cur.charLen > 0 && ('0' <= r && r <= '9' || isPGAlpha(r))
	case tNotAlnum:
		return !('0' <= r && r <= '9' || cur.charLen > 0 && isPGAlpha(r))
	case tSpecial:
		return cur.charLen > 0 && isPGSpecial(r)
	case tSpace:
		return cur.charLen > 0 && isPGSpace(r)
	case tXDigit:
		return '0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F'
	case tStopHost:
		if t.wantHost {
			t.wantHost = false
			return true
		}
		return false
	case tHost:
		return t.subparse(psBase, true, tokHost)
	case tURLPath:
		return t.subparse(psInURLPathFirst, false, tokURLPath)
	case tURLChar:
		return isURLChar(cur.charLen, r)
	}
	return false
}

// subparse runs a parser over the rest of the input, starting in state
// start, and consumes its first token when it has type want (p_ishost and
// p_isURLPath).
func (t *tokenizer) subparse(start pstate, wantHost bool, want tokType) bool {
	cur := t.top()
	sub := &tokenizer{s: t.s[cur.posByte:], wantHost: wantHost}
	sub.stack = []position{{state: psBase, pushedAt: -1}}
	if start != psBase {
		sub.stack = append(sub.stack, position{state: start, pushedAt: -1})
	}
	if !sub.get() || sub.typ != want {
		return false
	}
	cur.posByte += sub.tokLen
	cur.lenByte += sub.tokLen
	cur.lenChar += sub.tokChars
	cur.charLen = sub.top().charLen
	return true
}

// specialTags tracks whether the parser is inside <script> or <style>,
// whose content PostgreSQL treats as blank.
func (t *tokenizer) specialTags() {
	cur := t.top()
	tok := t.s[t.tokStart:]
	switch cur.lenChar {
	case 8:
		if hasPrefixFold(tok, "</script") {
			t.ignore = false
		}
	case 7:
		if hasPrefixFold(tok, "</style") {
			t.ignore = false
		} else if hasPrefixFold(tok, "<script") {
			t.ignore = true
		}
	case 6:
		if hasPrefixFold(tok, "<style") {
			t.ignore = true
		}
	}
}

// hasPrefixFold reports whether s starts with the lowercase ASCII prefix,
// ignoring ASCII case only (as pg_strncasecmp does).
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// isPGAlpha approximates iswalpha() of glibc's C.UTF-8 locale: the Unicode
// Alphabetic property (letters, letter numbers, Other_Alphabetic marks)
// plus non-ASCII decimal digits. For every character assigned in Unicode 14
// (glibc 2.36) this matches glibc exactly.
func isPGAlpha(r rune) bool {
	if r < utf8.RuneSelf {
		return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) ||
		unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r)
}

// isPGSpecial approximates p_isspecial: characters that continue a word
// without starting one. PostgreSQL counts those its display-width table
// gives zero width (nonspacing and enclosing marks) plus a list of spacing
// marks, of which only the five below are not already alphabetic. Its width
// table also spans some unassigned code points, which are ignored here.
func isPGSpecial(r rune) bool {
	if r < utf8.RuneSelf {
		return false
	}
	switch r {
	case 0x0F3E, 0x0F3F, // TIBETAN SIGN YAR TSHES, MAR TSHES
		0x1B44, // BALINESE ADEG ADEG
		0x1BAA, // SUNDANESE SIGN PAMAAEH
		0xA953: // REJANG VIRAMA
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me)
}

// isPGSpace is iswspace() of glibc's C.UTF-8 locale: Unicode white space
// except the no-break spaces and NEL.
func isPGSpace(r rune) bool {
	switch r {
	case 0x85, 0xA0, 0x2007, 0x202F:
		return false
	}
	return unicode.IsSpace(r)
}

// isURLChar is p_isurlchar: printable ASCII allowed in a URL by RFC 3986.
func isURLChar(charLen int, r rune) bool {
	if charLen != 1 || r <= 0x20 || r >= 0x7F {
		return false
	}
	switch r {
	case '"', '<', '>', '\\', '^', '`', '{', '|', '}':
		return false
	}
	return true
}
