package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/internal/tsrank"
)

// TestTermMaskMatchesPostgreSQL: the term mask the searches compute in Go,
// from the tsvector read in binary, agrees with PostgreSQL's own
// tsv @@ plainto_tsquery('simple', term) on awkward terms and texts.
func TestTermMaskMatchesPostgreSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSmall(t)
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
	tq := tsrank.Compile(lex)
	var doc tsrank.Doc
	for _, text := range texts {
		rows, err := st.pool.Query(ctx, `SELECT to_tsvector('simple', $1)`, pgx.QueryResultFormats{1}, text)
		if err != nil {
			t.Fatal(err)
		}
		if !rows.Next() {
			t.Fatalf("no row: %v", rows.Err())
		}
		err = scanTSVectorBinary(rows.RawValues()[0], tq, &doc)
		rows.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := tq.Mask(&doc)
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

// TestASCIILexemesMatchPostgreSQL: termLexemes computes ASCII terms in Go
// (no round trip); the lexemes must be the server's.
func TestASCIILexemesMatchPostgreSQL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openSmall(t)
	terms := []string{"ABC-1234", "e-mail", "foo.bar-baz", "a_b", "x@y.com", "1e10", "v1.2.3-rc1", "--x", "C++", "node.js",
		"3.14", "-0.5", "/usr/bin/env", "http://a.b/c?d=e#f", "<b>tag</b>", "&amp;x", "o'neil", "it's", "1,000", "2026-12-02T01:02",
		"a.b.c.d", "foo@bar", "$100", "#hash", "x--y", "under_score_", "CamelCase123", "12ab", "ab12", "-", "...", "a-b-c-1",
		"mailto:me@x.org", "www.example.com:8080/p", "127.0.0.1", "file.tar.gz", "+1-555-0100", "~user", "C:\\path", ""}
	got, err := st.termLexemes(ctx, terms)
	if err != nil {
		t.Fatal(err)
	}
	for i, term := range terms {
		var want []string
		if err := st.pool.QueryRow(ctx, `SELECT COALESCE(tsvector_to_array(to_tsvector('simple', $1)), '{}')`, term).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 {
			want = nil
		}
		if fmt.Sprint(got[i]) != fmt.Sprint(want) {
			t.Errorf("term %q: Go lexemes %q, PostgreSQL %q", term, got[i], want)
		}
	}
}

// openSmall opens a store with a small pool on a schema of its own
// (closed at the end of the test), for tests of the package's internals.
func openSmall(t *testing.T) *Store {
	t.Helper()
	st, err := Open(context.Background(), Config{URL: pgtest.Schema(t), MaxConns: 2})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
