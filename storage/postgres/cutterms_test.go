package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/postgram-go/postgram/internal/query"
)

// TestCutTermsMatchPostgreSQL: the terms query.Parse cuts from 32 KiB
// queries built to make the parser backtrack (ASCII and not) have the same
// lexemes in the Go port as on the server, which parses the cut text for
// non-ASCII terms and for every tsquery: both backends match the same.
func TestCutTermsMatchPostgreSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSmall(t)
	var ws []string
	for i := range 50 {
		ws = append(ws, fmt.Sprintf("w%02d", i))
	}
	var terms []string
	for _, pat := range []string{"1-a-", "a-1-", "a_", "<!--", "p@t2-", "x-xx@&", "a.b:1/", "1.2.", "é-1-", "1-é-", "ⓐ_", "日本-1-",
		strings.Join(ws, "-") + "-"} {
		q := strings.Repeat(pat, (32<<10)/len(pat))
		terms = append(terms, query.Parse(q).Terms...)
	}
	if len(terms) < 10 {
		t.Fatalf("only %d cut terms", len(terms))
	}
	for _, term := range terms {
		if len(term) > query.MaxTermBytes {
			t.Fatalf("term of %d bytes", len(term))
		}
		var want []string
		if err := st.pool.QueryRow(ctx, `SELECT COALESCE(tsvector_to_array(to_tsvector('simple', $1)), '{}')`, term).Scan(&want); err != nil {
			t.Fatal(err)
		}
		slices.Sort(want)
		if got := query.Lexemes(term); !slices.Equal(got, want) {
			t.Errorf("term %.40q…: Go lexemes %q, PostgreSQL %q", term, got, want)
		}
	}
}
