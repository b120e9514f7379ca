package sqlite

import (
	"encoding/binary"
	"errors"

	"github.com/postgram-go/postgram/internal/query"
	"github.com/postgram-go/postgram/internal/tsrank"
)

// chunkVector returns to_tsvector('simple', content): the lexemes of the
// library's verified port of PostgreSQL's parser, with their positions.
func chunkVector(content string) []query.Lexeme {
	return query.Vector(content)
}

// tsvFormat versions the encoding of chunks.tsv.
const tsvFormat = 1

// encodeTSV encodes a tsvector for chunks.tsv: a format byte, the number of
// lexemes, then per lexeme (in byte order) its length and bytes, the number
// of positions, the byte length of the positions and the positions as
// ascending deltas, all unsigned varints.
func encodeTSV(v []query.Lexeme) []byte {
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

var errBadTSV = errors.New("malformed chunk tsvector")

// tsvReader reads an encoded tsvector's lexemes in order (see encodeTSV).
type tsvReader struct {
	b    []byte
	left uint64 // lexemes not read yet
	err  error
}

func newTSVReader(b []byte) tsvReader {
	if len(b) == 0 || b[0] != tsvFormat {
		return tsvReader{err: errBadTSV}
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 {
		return tsvReader{err: errBadTSV}
	}
	return tsvReader{b: b[1+k:], left: n}
}

// next returns the next lexeme, its number of positions and their raw
// bytes (decode them with decodePositions); ok is false at the end or on
// malformed input (r.err).
func (r *tsvReader) next() (word []byte, npos int, pos []byte, ok bool) {
	if r.err != nil || r.left == 0 {
		return nil, 0, nil, false
	}
	r.left--
	b := r.b
	wl, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < wl {
		r.err = errBadTSV
		return nil, 0, nil, false
	}
	word = b[k : k+int(wl)]
	b = b[k+int(wl):]
	np, k := binary.Uvarint(b)
	if k <= 0 {
		r.err = errBadTSV
		return nil, 0, nil, false
	}
	b = b[k:]
	pl, k := binary.Uvarint(b)
	if k <= 0 || uint64(len(b)-k) < pl {
		r.err = errBadTSV
		return nil, 0, nil, false
	}
	pos = b[k : k+int(pl)]
	r.b = b[k+int(pl):]
	return word, int(np), pos, true
}

// walkTSV calls fn for every lexeme of an encoded tsvector with its raw
// position bytes (decode them with decodePositions).
func walkTSV(b []byte, fn func(word []byte, npos int, pos []byte)) error {
	r := newTSVReader(b)
	for {
		word, npos, pos, ok := r.next()
		if !ok {
			return r.err
		}
		fn(word, npos, pos)
	}
}

// tsvLength returns an encoded tsvector's number of positions.
func tsvLength(b []byte) int32 {
	var n int32
	_ = walkTSV(b, func(_ []byte, npos int, _ []byte) { n += int32(npos) })
	return n
}

func decodePositions(npos int, b []byte, dst []uint16) []uint16 {
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

// terms is a compiled keyword query (see tsrank.Query): each term's
// lexemes are PostgreSQL's plainto_tsquery('simple', term), ANDed.
type terms struct{ *tsrank.Query }

func compileTerms(ts []string, alternatives [][]string) *terms {
	ls := make([][]string, len(ts))
	for i, t := range ts {
		ls[i] = query.Lexemes(t)
	}
	return &terms{tsrank.CompileWith(ls, alternatives)}
}

// withLexemes returns the indexes of the terms that have lexemes (a term
// without any matches nothing and drops out of a conjunction).
func (q *terms) withLexemes() []int {
	var out []int
	for i, ls := range q.Of {
		if len(ls) > 0 {
			out = append(out, i)
		}
	}
	return out
}

// docTerms is what one chunk's tsvector holds of the query's lexemes.
type docTerms = tsrank.Doc

// scan decodes an encoded tsvector against the query's lexemes. Both are
// in byte order, so it walks them side by side (no hashing per lexeme of
// the chunk); a tsvector out of order falls back to lookups.
func (q *terms) scan(tsv []byte, d *docTerms) error {
	q.Reset(d)
	j := 0 // the first query lexeme not below the chunk's lexemes so far
	var prev []byte
	merge := true
	return walkTSV(tsv, func(word []byte, npos int, pos []byte) {
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
			d.Pos[i] = decodePositions(npos, pos, d.Pos[i])
		}
	})
}

// firstPositions sets first[i] to the first position of query lexeme i in
// an encoded tsvector, 0 when absent (ranking v2's head features: cheaper
// than scan, which decodes every position).
func (q *terms) firstPositions(tsv []byte, first []uint16) error {
	clear(first)
	r := newTSVReader(tsv)
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

// mask returns the bitmask of the terms whose lexemes are all present.
func (q *terms) mask(d *docTerms) uint32 { return q.Mask(d) }

// rankCD is PostgreSQL's ts_rank_cd of the chunk (see tsrank.Query.RankCD).
func (q *terms) rankCD(d *docTerms) float32 { return q.RankCD(d) }
