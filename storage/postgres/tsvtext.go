package postgres

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/postgram-go/postgram/internal/kwindex"
	"github.com/postgram-go/postgram/internal/query"
	"github.com/postgram-go/postgram/internal/tsrank"
)

// scanTSVector reads a tsvector in PostgreSQL's text output form
// ('lexeme':1,5 'other':3A …: quotes and backslashes inside a lexeme are
// doubled; a position may carry a weight letter, D being unwritten) and
// records in d the positions of q's lexemes. Ranking and term matching
// then run in Go (tsrank), the same code the SQLite store uses.
func scanTSVector(s string, q *tsrank.Query, d *tsrank.Doc) error {
	q.Reset(d)
	var lex []byte
	i := 0
	for i < len(s) {
		if s[i] == ' ' {
			i++
			continue
		}
		if s[i] != '\'' {
			return fmt.Errorf("tsvector text: expected a quote at byte %d", i)
		}
		i++
		lex = lex[:0]
		closed := false
		for i < len(s) {
			c := s[i]
			switch {
			case c == '\'' && i+1 < len(s) && s[i+1] == '\'':
				lex = append(lex, '\'')
				i += 2
				continue
			case c == '\\' && i+1 < len(s):
				lex = append(lex, s[i+1])
				i += 2
				continue
			case c == '\'':
				closed = true
				i++
			default:
				lex = append(lex, c)
				i++
				continue
			}
			break
		}
		if !closed {
			return fmt.Errorf("tsvector text: unterminated lexeme")
		}
		idx, want := q.Lookup(string(lex))
		if want {
			d.Present[idx] = true
		}
		if i >= len(s) || s[i] != ':' {
			continue // a lexeme without positions
		}
		i++
		for {
			start := i
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			if i == start {
				return fmt.Errorf("tsvector text: expected a position at byte %d", i)
			}
			if want {
				p, err := strconv.ParseUint(s[start:i], 10, 16)
				if err != nil {
					return fmt.Errorf("tsvector text: position %q: %w", s[start:i], err)
				}
				d.Pos[idx] = append(d.Pos[idx], uint16(p))
			}
			if i < len(s) && (s[i] == 'A' || s[i] == 'B' || s[i] == 'C' || s[i] == 'D') {
				i++
			}
			if i < len(s) && s[i] == ',' {
				i++
				continue
			}
			break
		}
	}
	return nil
}

// scanTSVectorBinary reads a tsvector in PostgreSQL's binary send format
// (tsvectorsend: the lexeme count as int32, then per lexeme its bytes, a
// NUL, the position count as uint16 and the positions as uint16 with the
// weight in the top two bits) and records in d the positions of q's
// lexemes. It is what the scoring probe reads: cheaper for the server to
// produce than the text form.
func scanTSVectorBinary(b []byte, q *tsrank.Query, d *tsrank.Doc) error {
	_, err := scanTSVectorBinaryLen(b, q, d)
	return err
}

// scanTSVectorBinaryLen is scanTSVectorBinary that also returns the
// tsvector's length in positions (every lexeme's, ranking v2's document
// length).
func scanTSVectorBinaryLen(b []byte, q *tsrank.Query, d *tsrank.Doc) (int32, error) {
	q.Reset(d)
	if len(b) < 4 {
		return 0, fmt.Errorf("tsvector binary: %d bytes", len(b))
	}
	var length int32
	n := int(binary.BigEndian.Uint32(b))
	b = b[4:]
	for range n {
		end := bytes.IndexByte(b, 0)
		if end < 0 || len(b) < end+3 {
			return 0, fmt.Errorf("tsvector binary: truncated lexeme")
		}
		idx, want := q.Lookup(string(b[:end]))
		b = b[end+1:]
		npos := int(binary.BigEndian.Uint16(b))
		b = b[2:]
		if len(b) < 2*npos {
			return 0, fmt.Errorf("tsvector binary: truncated positions")
		}
		length += int32(npos)
		if want {
			d.Present[idx] = true
			for j := range npos {
				d.Pos[idx] = append(d.Pos[idx], binary.BigEndian.Uint16(b[2*j:])&0x3fff)
			}
		}
		b = b[2*npos:]
	}
	return length, nil
}

// encodeTSVectorBinary converts a tsvector in PostgreSQL's binary send
// format (see scanTSVectorBinaryLen) to the in-memory index's encoding
// (kwindex.Encode), weights dropped; nil stays nil (SQL NULL).
func encodeTSVectorBinary(b []byte) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	if len(b) < 4 {
		return nil, fmt.Errorf("tsvector binary: %d bytes", len(b))
	}
	n := int(binary.BigEndian.Uint32(b))
	b = b[4:]
	if n > len(b) {
		return nil, fmt.Errorf("tsvector binary: %d lexemes in %d bytes", n, len(b))
	}
	lex := make([]query.Lexeme, n)
	for i := range n {
		end := bytes.IndexByte(b, 0)
		if end < 0 || len(b) < end+3 {
			return nil, fmt.Errorf("tsvector binary: truncated lexeme")
		}
		lex[i].Word = string(b[:end])
		b = b[end+1:]
		npos := int(binary.BigEndian.Uint16(b))
		b = b[2:]
		if len(b) < 2*npos {
			return nil, fmt.Errorf("tsvector binary: truncated positions")
		}
		if npos > 0 {
			pos := make([]uint16, npos)
			for j := range pos {
				pos[j] = binary.BigEndian.Uint16(b[2*j:]) & 0x3fff
			}
			lex[i].Pos = pos
		}
		b = b[2*npos:]
	}
	return kwindex.Encode(lex), nil
}
