package kwindex

import (
	"fmt"
	"testing"

	"github.com/postgram-go/postgram/internal/query"
)

// TestScanMergesAndFallsBack: scan walks a tsvector and the query's
// lexemes side by side; a tsvector out of byte order (never written by
// this store, but read defensively) gets the same answer by lookups.
func TestScanMergesAndFallsBack(t *testing.T) {
	q := Compile([]string{"apple", "kiwi", "zebra-fish", "missing"}, nil)
	sorted := []query.Lexeme{{Word: "apple", Pos: []uint16{1, 5}}, {Word: "fish", Pos: []uint16{4}},
		{Word: "kiwi", Pos: []uint16{2}}, {Word: "zebra", Pos: []uint16{3}}, {Word: "zebra-fish", Pos: []uint16{3}}}
	shuffled := []query.Lexeme{sorted[4], sorted[2], sorted[0], sorted[3], sorted[1]}
	var a, b DocTerms
	if err := q.Scan(Encode(sorted), &a); err != nil {
		t.Fatal(err)
	}
	if err := q.Scan(Encode(shuffled), &b); err != nil {
		t.Fatal(err)
	}
	if q.Mask(&a) != 0b0111 || q.Mask(&b) != q.Mask(&a) || q.RankCD(&a) != q.RankCD(&b) {
		t.Fatalf("masks %b %b, ranks %v %v", q.Mask(&a), q.Mask(&b), q.RankCD(&a), q.RankCD(&b))
	}
	if fmt.Sprint(a.Pos) != fmt.Sprint(b.Pos) {
		t.Fatalf("positions %v, out of order %v", a.Pos, b.Pos)
	}
}
