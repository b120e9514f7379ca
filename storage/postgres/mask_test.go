package postgres

import (
	"context"
	"testing"

	"github.com/postgram-go/postgram/internal/pgtest"
)

// TestTermMaskMatchesPostgreSQL: the Go term mask agrees with PostgreSQL's
// own tsv @@ plainto_tsquery('simple', term) on awkward terms and texts.
func TestTermMaskMatchesPostgreSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(ctx, Config{URL: pgtest.Schema(t), MaxConns: 2})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer st.Close()
	texts := []string{
		"Ticket ABC-1234 was filed by e-mail to ops@example.com on 2026-11-29.",
		"abc 1234 e mail",
		"Version 1.5.2 of foo.bar_baz released; see https://example.com/a/b?c=d",
		"Größe, naïve café — 東京 タワー 😀 emoji-rich",
		"the a of and",
		"",
		"-1234 ABC",
	}
	terms := []string{"ABC-1234", "abc", "1234", "e-mail", "email", "1.5.2", "foo.bar_baz", "https://example.com/a/b?c=d",
		"größe", "東京", "😀", "the", "--", "café", "ops@example.com", "2026-11-29"}
	lex, err := st.termLexemes(ctx, terms)
	if err != nil {
		t.Fatalf("term lexemes: %v", err)
	}
	for _, text := range texts {
		var doc []string
		if err := st.pool.QueryRow(ctx, `SELECT COALESCE(tsvector_to_array(to_tsvector('simple', $1)), '{}')`, text).Scan(&doc); err != nil {
			t.Fatal(err)
		}
		got := termMask(doc, lex)
		for i, term := range terms {
			var want bool
			if err := st.pool.QueryRow(ctx, `SELECT to_tsvector('simple', $1) @@ plainto_tsquery('simple', $2)`, text, term).Scan(&want); err != nil {
				t.Fatal(err)
			}
			if have := got&(1<<i) != 0; have != want {
				t.Errorf("text %q term %q: mask says %v, PostgreSQL says %v (term lexemes %q)", text, term, have, want, lex[i])
			}
		}
	}
}
