package query

import (
	"slices"
	"strings"
)

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
	defer p.release()
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
