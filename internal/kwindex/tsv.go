package kwindex

import (
	"encoding/binary"
	"errors"

	"github.com/postgram-go/postgram/internal/query"
	"github.com/postgram-go/postgram/internal/tsrank"
)

// tsvFormat versions the encoding (Encode).
const tsvFormat = 1

// Encode encodes a tsvector as the index holds it (and the SQLite store's
// chunks.tsv): a format byte, the number of
// lexemes, then per lexeme (in byte order) its length and bytes, the number
// of positions, the byte length of the positions and the positions as
// ascending deltas, all unsigned varints.
func Encode(v []query.Lexeme) []byte {
	n := 1 + binary.MaxVarintLen32
	for _, l := range v {
		n += len(l.Word) + 3 + 2*len(l.Pos)
	}
	b := make([]byte, 0, n)
	b = append(b, tsvFormat)
	b = binary.AppendUvarint(b, uint64(len(v)))
	var pb []byte
	for _, l := range v {
		b = binary.AppendUvarint(b, uint64(len(l.Word)))
		b = append(b, l.Word...)
		pb = pb[:0]
		prev := 0
		for _, p := range l.Pos {
			pb = binary.AppendUvarint(pb, uint64(int(p)-prev))
			prev = int(p)
		}
		b = binary.AppendUvarint(b, uint64(len(l.Pos)))
		b = binary.AppendUvarint(b, uint64(len(pb)))
		b = append(b, pb...)
	}
	return b
}

// ErrBadTSV reports an encoded tsvector that cannot be read.
var ErrBadTSV = errors.New("malformed chunk tsvector")

// reader reads an encoded tsvector's lexemes in order (see Encode).
type reader struct {
	b    []byte
	left uint64 // lexemes not read yet
	err  error
}

func newReader(b []byte) reader {
	if len(b) == 0 || b[0] != tsvFormat {
		return reader{err: ErrBadTSV}
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 {
		return reader{err: ErrBadTSV}
	}
	return reader{b: b[1+k:], left: n}
}

// next returns the next lexeme, its number of positions and their raw
// bytes (decode them with DecodePositions); ok is false at the end or on
// malformed input (r.err).
func (r *reader) next() (word []byte, npos int, pos []byte, ok bool) {
	if r.err != nil || r.left == 0 {
		return nil, 0, nil, false
	}
	r.left--
	b := r.b
	wl, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < wl {
		r.err = ErrBadTSV
		return nil, 0, nil, false
	}
	word = b[k : k+int(wl)]
	b = b[k+int(wl):]
	np, k := binary.Uvarint(b)
	if k <= 0 {
		r.err = ErrBadTSV
		return nil, 0, nil, false
	}
	b = b[k:]
	pl, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < pl {
		r.err = ErrBadTSV
		return nil, 0, nil, false
	}
	pos = b[k : k+int(pl)]
	r.b = b[k+int(pl):]
	return word, int(np), pos, true
}

// Walk calls fn for every lexeme of an encoded tsvector with its raw
// position bytes (decode them with DecodePositions).
func Walk(b []byte, fn func(word []byte, npos int, pos []byte)) error {
	r := newReader(b)
	for {
		word, npos, pos, ok := r.next()
		if !ok {
			return r.err
		}
		fn(word, npos, pos)
	}
}

// Length returns an encoded tsvector's number of positions.
func Length(b []byte) int32 {
	var n int32
	_ = Walk(b, func(_ []byte, npos int, _ []byte) { n += int32(npos) })
	return n
}

// DecodePositions appends npos positions encoded as ascending deltas (see
// Walk) to dst.
func DecodePositions(npos int, b []byte, dst []uint16) []uint16 {
	prev := uint64(0)
	for range npos {
		d, k := binary.Uvarint(b)
		if k <= 0 {
			break
		}
		b = b[k:]
		prev += d
		dst = append(dst, uint16(prev))
	}
	return dst
}

// Terms is a compiled keyword query (see tsrank.Query): each term's
// lexemes are PostgreSQL's plainto_tsquery('simple', term), ANDed.
type Terms struct{ *tsrank.Query }

// Compile compiles the terms with the Go port of PostgreSQL's parser.
func Compile(ts []string, alternatives [][]string) *Terms {
	ls := make([][]string, len(ts))
	for i, t := range ts {
		ls[i] = query.Lexemes(t)
	}
	return CompileLexemes(ls, alternatives)
}

// CompileLexemes compiles terms whose lexemes are known.
func CompileLexemes(termLexemes, alternatives [][]string) *Terms {
	return &Terms{tsrank.CompileWith(termLexemes, alternatives)}
}

// WithLexemes returns the indexes of the terms that have lexemes (a term
// without any matches nothing and drops out of a conjunction).
func (q *Terms) WithLexemes() []int {
	var out []int
	for i, ls := range q.Of {
		if len(ls) > 0 {
			out = append(out, i)
		}
	}
	return out
}

// DocTerms is what one chunk's tsvector holds of the query's lexemes.
type DocTerms = tsrank.Doc

// Scan decodes an encoded tsvector against the query's lexemes. Both are
// in byte order, so it walks them side by side (no hashing per lexeme of
// the chunk); a tsvector out of order falls back to lookups.
func (q *Terms) Scan(tsv []byte, d *DocTerms) error {
	q.Reset(d)
	j := 0 // the first query lexeme not below the chunk's lexemes so far
	var prev []byte
	merge := true
	return Walk(tsv, func(word []byte, npos int, pos []byte) {
		if merge && prev != nil && string(word) <= string(prev) {
			merge = false
		}
		prev = word
		var i int
		var ok bool
		if merge {
			for j < len(q.Lexemes) && q.Lexemes[j] < string(word) {
				j++
			}
			i, ok = j, j < len(q.Lexemes) && q.Lexemes[j] == string(word)
		} else {
			i, ok = q.Lookup(string(word))
		}
		if ok {
			d.Present[i] = true
			d.Pos[i] = DecodePositions(npos, pos, d.Pos[i])
		}
	})
}

// FirstPositions sets first[i] to the first position of query lexeme i in
// an encoded tsvector, 0 when absent (ranking v2's head features: cheaper
// than scan, which decodes every position).
func (q *Terms) FirstPositions(tsv []byte, first []uint16) error {
	clear(first)
	r := newReader(tsv)
	j := 0
	var prev []byte
	merge := true
	for {
		word, npos, pos, ok := r.next()
		if !ok {
			return r.err
		}
		if merge && prev != nil && string(word) <= string(prev) {
			merge = false
		}
		prev = word
		var i int
		var found bool
		if merge {
			for j < len(q.Lexemes) && q.Lexemes[j] < string(word) {
				j++
			}
			if j == len(q.Lexemes) {
				return nil // every later lexeme sorts after the query's
			}
			i, found = j, q.Lexemes[j] == string(word)
		} else {
			i, found = q.Lookup(string(word))
		}
		if found && npos > 0 {
			if p, k := binary.Uvarint(pos); k > 0 {
				first[i] = uint16(p)
			}
		}
	}
}
