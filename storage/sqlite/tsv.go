package sqlite

import (
	"github.com/postgram-go/postgram/internal/query"
)

// chunkVector returns to_tsvector('simple', content): the lexemes of the
// library's verified port of PostgreSQL's parser, with their positions.
func chunkVector(content string) []query.Lexeme {
	return query.Vector(content)
}
