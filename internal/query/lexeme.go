package query

import (
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// maxTokenBytes is the longest token to_tsvector indexes; it skips longer
// ones with the notice "word is too long to be indexed".
const maxTokenBytes = 2047

// Lexemes returns the lexemes PostgreSQL derives from term with the `simple`
// text-search configuration, i.e. the lexeme set of to_tsvector('simple',
// term): sorted (byte order), without duplicates, nil when there are none.
//
// It reimplements PostgreSQL's default text-search parser (the state machine
// of src/backend/tsearch/wparser_def.c, PostgreSQL License) and the `simple`
// dictionary, which lowercases every token: words, numbers, hyphenated
// compounds and their parts ("e-mail" gives e-mail, e and mail), e-mail
// addresses, host names, URLs and their paths, file paths, decimals, version
// numbers, scientific notation. Like `simple`, it drops blanks, XML/HTML tags,
// XML entities and protocol heads ("https://"). Note that PostgreSQL reads a
// digit after a hyphen as a signed integer: "ABC-1234" gives abc and -1234,
// not the compound; and that emoji, ZWJ and punctuation separate words.
//
// Character classes approximate glibc's C.UTF-8 locale, which PostgreSQL
// uses through isw*() for a database with LC_CTYPE C.UTF-8: letters are the
// Unicode Alphabetic property plus non-ASCII decimal digits, digits are ASCII
// only. Remaining differences concern characters unknown to the server's
// Unicode tables and a few rare zero-width characters; the golden tests list
// them. Lowercasing uses unicode.ToLower, which agrees with glibc's towlower.
//
// PostgreSQL's parser backtracks and takes time quadratic in the length of
// some inputs ("1-a-1-a-…", "a_a_a_…": 32 KiB take seconds); this port
// gives the same tokens in linear time (see tokenizer). The server still
// does not, which is why Parse caps a query term's length.
func Lexemes(term string) []string {
	var out []string
	p := newTokenizer(term)
	defer p.release()
	for {
		tok, typ, ok := p.next()
		if !ok {
			break
		}
		if !indexed(typ) || len(tok) > maxTokenBytes {
			continue
		}
		out = append(out, strings.ToLower(tok))
	}
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return slices.Compact(out)
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
//
// PostgreSQL's parser backtracks: a push saves the position, a branch is
// explored from there, and a pop returns to the saved position to try the
// next action. Explored naively, inputs such as "1-a-1-a-…", "a_a_a_…" or
// "<!--<!--…" make every token start a branch that runs to the end of the
// input and fails, so the work is quadratic in the length. The tokenizer
// stays linear by remembering failures (see get): the path from a
// configuration (position, state, the ignore and wantHost flags) is
// deterministic, so once a branch has failed without side effects, every
// configuration it passed through at its own stack level is known to fail,
// and a later branch reaching one of them pops at once. The tokens are
// exactly those of the naive exploration.
type tokenizer struct {
	s        string
	stack    []position // the last element is the current position
	ignore   bool       // inside <script> or <style>
	wantHost bool       // the next host ends where a URL path starts
	r        rune       // the character at the current position, 0 at the end

	// The last token.
	tokStart int
	tokLen   int
	tokChars int
	typ      tokType

	// memo holds the failed configurations and sub-parse results, shared
	// with the sub-parsers (positions are offsets in s for all of them).
	memo *memo
	// trail lists the configurations entered afresh since the last side
	// effect, with the stack level they were entered at, innermost last.
	trail []visit
	// spare is the sub-parser reused by subparse.
	spare *tokenizer
}

// visit is a configuration the parser entered at a stack level.
type visit struct {
	key   uint64
	level int
}

// memo is what a tokenizer and its sub-parsers have learnt about the input.
type memo struct {
	failed keySet // configurations whose branch pops
	sub    map[uint64]subResult
	steps  int // transitions taken, by the tokenizer and its sub-parsers
	// naive turns the memo off (PostgreSQL's exploration as it is); tests
	// compare the two.
	naive bool
}

// keySet is a set of configuration keys: open addressing over a slice,
// which costs less than a map for the many small insertions and lookups
// of a parse. It stores key+1 so that zero marks a free slot.
type keySet struct {
	slots []uint64
	n     int
}

func (ks *keySet) slot(key uint64) int {
	mask := uint64(len(ks.slots) - 1)
	h := (key * 0x9E3779B97F4A7C15) >> 32
	for {
		h &= mask
		if v := ks.slots[h]; v == 0 || v == key+1 {
			return int(h)
		}
		h++
	}
}

func (ks *keySet) reset() {
	if ks.n > 0 {
		clear(ks.slots)
		ks.n = 0
	}
}

func (ks *keySet) has(key uint64) bool {
	return ks.n > 0 && ks.slots[ks.slot(key)] != 0
}

func (ks *keySet) add(key uint64) {
	if 2*(ks.n+1) > len(ks.slots) {
		old := ks.slots
		ks.slots = make([]uint64, max(64, 2*len(old)))
		for _, v := range old {
			if v != 0 {
				ks.slots[ks.slot(v-1)] = v
			}
		}
	}
	if i := ks.slot(key); ks.slots[i] == 0 {
		ks.slots[i] = key + 1
		ks.n++
	}
}

// subResult is the outcome of a sub-parse (p_ishost, p_isURLPath).
type subResult struct {
	ok                        bool
	tokLen, tokChars, charLen int
}

// tokenizers recycles tokenizers with their stack, trail and memo, which a
// parse of a few hundred bytes would otherwise allocate anew (tens of KB).
var tokenizers = sync.Pool{New: func() any { return &tokenizer{memo: &memo{}} }}

// maxPooled bounds the slots a recycled tokenizer keeps (for its stack,
// trail and memo each), so one huge input does not pin its memory.
const maxPooled = 1 << 14

// newTokenizer returns a tokenizer over s; release it when done.
func newTokenizer(s string) *tokenizer {
	t := tokenizers.Get().(*tokenizer)
	m := t.memo
	m.failed.reset()
	clear(m.sub)
	m.steps, m.naive = 0, false
	*t = tokenizer{s: s, stack: t.stack[:0], trail: t.trail[:0], memo: m, spare: t.spare}
	t.stack = append(t.stack, position{state: psBase, pushedAt: -1})
	return t
}

// release returns t to the pool; t must not be used afterwards.
func (t *tokenizer) release() {
	if cap(t.stack) > maxPooled || cap(t.trail) > maxPooled ||
		len(t.memo.failed.slots) > maxPooled || len(t.memo.sub) > maxPooled {
		return
	}
	for x := t; x != nil; x = x.spare {
		x.s = "" // keep no input alive in the pool
	}
	tokenizers.Put(t)
}

// next returns the next token and its type; ok is false at the end.
func (t *tokenizer) next() (tok string, typ tokType, ok bool) {
	if !t.get() {
		return "", tokNone, false
	}
	return t.s[t.tokStart : t.tokStart+t.tokLen], t.typ, true
}

func (t *tokenizer) top() *position { return &t.stack[len(t.stack)-1] }

// configKey identifies what the parser's future depends on when it enters
// cur afresh (no action of cur's state tried yet) and nothing it does
// depends on the token so far: the position, the state and the two flags.
func (t *tokenizer) configKey(cur *position) uint64 {
	k := uint64(cur.posByte)<<9 | uint64(cur.state)<<2
	if t.ignore {
		k |= 2
	}
	if t.wantHost {
		k |= 1
	}
	return k
}

// sideEffect forgets the trail: the configurations on it led to something
// that depends on more than their key (a token, a flag change, a rewind by
// the token's length), so their failure, if it comes, proves nothing.
func (t *tokenizer) sideEffect() { t.trail = t.trail[:0] }

// dropTrail forgets the configurations entered at stack level from or
// above: an action is about to change the stack below them.
func (t *tokenizer) dropTrail(from int) {
	n := len(t.trail)
	for n > 0 && t.trail[n-1].level >= from {
		n--
	}
	t.trail = t.trail[:n]
}

// failTrail records that the configurations entered at stack level from or
// above fail: the position at level from is being popped. Deeper levels
// were dropped or recorded when they ended.
func (t *tokenizer) failTrail(from int) {
	n := len(t.trail)
	for n > 0 && t.trail[n-1].level >= from {
		n--
		t.memo.failed.add(t.trail[n].key)
	}
	t.trail = t.trail[:n]
}

// memoPop stands for the pop that ends a branch known to fail.
var memoPop = action{test: tAny, flags: aPop, to: psNull}

// get advances to the next token, as TParserGet does.
//
// Besides PostgreSQL's algorithm it keeps the trail and the memo (see
// tokenizer). Why a recorded failure may be reused: a configuration
// entered afresh at stack level L, whose path pops level L (returning to
// level L-1) with no side effect on the way, never looked at the stack
// below L (pushes, clears and merges above or at L touch only levels >= L;
// a clear or merge that touches level L-1 drops the trail of level L), so
// the same configuration entered at any level fails the same way, and
// reaching it is the same as popping at once.
func (t *tokenizer) get() bool {
	cur := t.top()
	if cur.posByte >= len(t.s) {
		return false
	}
	t.tokStart = cur.posByte
	cur.pushedAt = -1
	t.sideEffect()

	var item *action
	for t.top().posByte <= len(t.s) {
		t.memo.steps++
		cur = t.top()
		if cur.posByte == len(t.s) {
			t.r, cur.charLen = 0, 0
		} else if c := t.s[cur.posByte]; c < utf8.RuneSelf {
			t.r, cur.charLen = rune(c), 1
		} else {
			t.r, cur.charLen = utf8.DecodeRuneInString(t.s[cur.posByte:])
		}

		list := actions[cur.state]
		i := 0
		if cur.pushedAt >= 0 {
			// After a pop, resume with the action after the push.
			i = cur.pushedAt + 1
			cur.pushedAt = -1
			item = nil
		} else if level := len(t.stack) - 1; level > 0 {
			// Entered afresh above the bottom: a known failure pops now,
			// anything else goes on the trail.
			key := t.configKey(cur)
			if !t.memo.naive && t.memo.failed.has(key) {
				item = &memoPop
			} else {
				t.trail = append(t.trail, visit{key: key, level: level})
				item = nil
			}
		} else {
			item = nil
		}
		if item == nil {
			for list[i].test != tAny && !t.match(&list[i]) {
				i++
			}
			item = &list[i]
		}
		cur = t.top() // match may not change the stack, but be explicit

		switch item.sp {
		case spTags:
			t.sideEffect()
			t.specialTags()
		case spFURL:
			t.sideEffect()
			t.wantHost = true
			cur.posByte -= cur.lenByte
		case spHyphen:
			t.sideEffect()
			cur.posByte -= cur.lenByte
		case spVerVersion:
			t.sideEffect()
			cur.posByte -= cur.lenByte
			cur.lenByte, cur.lenChar = 0, 0
		}

		if item.flags&aBingo != 0 {
			t.sideEffect()
			t.tokLen, t.tokChars = cur.lenByte, cur.lenChar
			cur.lenByte, cur.lenChar = 0, 0
			t.typ = item.typ
		}

		if item.flags&(aPop|aClear|aMerge) != 0 && len(t.stack) < 2 {
			// Unreachable with PostgreSQL's tables, which only pop,
			// clear or merge after a push; stop rather than panic.
			return false
		}
		last := len(t.stack) - 1
		switch {
		case item.flags&aPop != 0:
			t.failTrail(last)
			t.stack = t.stack[:last]
		case item.flags&aPush != 0:
			cur.pushedAt = i
			n := *cur
			n.pushedAt = -1
			t.stack = append(t.stack, n)
		case item.flags&aClear != 0:
			// Drop the pushed position just below the current one.
			t.dropTrail(last)
			t.stack[last-1] = t.stack[last]
			t.stack = t.stack[:last]
		case item.flags&aClrAll != 0:
			t.sideEffect()
			t.stack[0] = *cur
			t.stack = t.stack[:1]
		case item.flags&aMerge != 0:
			t.dropTrail(last)
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
	r := t.r
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
			t.sideEffect()
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
// p_isURLPath). Its outcome depends only on the position and start, so it
// is computed once per position.
func (t *tokenizer) subparse(start pstate, wantHost bool, want tokType) bool {
	cur := t.top()
	key := uint64(cur.posByte)<<8 | uint64(start)
	res, ok := t.memo.sub[key]
	if !ok || t.memo.naive {
		// The sub-parser reads the same string from cur's position, so
		// it shares the memo: its positions mean the same.
		sub := t.spare
		if sub == nil {
			sub = &tokenizer{}
			t.spare = sub
		}
		*sub = tokenizer{s: t.s, wantHost: wantHost, memo: t.memo,
			stack: sub.stack[:0], trail: sub.trail[:0], spare: sub.spare}
		sub.stack = append(sub.stack, position{posByte: cur.posByte, state: psBase, pushedAt: -1})
		if start != psBase {
			sub.stack = append(sub.stack, position{posByte: cur.posByte, state: start, pushedAt: -1})
		}
		if sub.get() && sub.typ == want {
			res = subResult{ok: true, tokLen: sub.tokLen, tokChars: sub.tokChars, charLen: sub.top().charLen}
		}
		if t.memo.sub == nil {
			t.memo.sub = make(map[uint64]subResult)
		}
		t.memo.sub[key] = res
	}
	if !res.ok {
		return false
	}
	cur.posByte += res.tokLen
	cur.lenByte += res.tokLen
	cur.lenChar += res.tokChars
	cur.charLen = res.charLen
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
