package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestWritePanicIsAnError: a write that panics fails alone with an error;
// the writer goroutine survives and later writes commit.
func TestWritePanicIsAnError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "panic.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	err = st.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "INSERT INTO change_log (kind, rid) VALUES (9, 1)"); err != nil {
			return err
		}
		panic("boom")
	})
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("panicking write: %v", err)
	}
	if err := st.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO change_log (kind, rid) VALUES (9, 2)")
		return err
	}); err != nil {
		t.Fatalf("write after a panic: %v", err)
	}
	var rids []int64
	rows, err := st.r.QueryContext(ctx, "SELECT rid FROM change_log WHERE kind = 9")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r int64
		rows.Scan(&r)
		rids = append(rids, r)
	}
	rows.Close()
	if len(rids) != 1 || rids[0] != 2 {
		t.Fatalf("rows written: %v, want only the second write's", rids)
	}
	st.Close()
	if err := st.write(ctx, func(*sql.Tx) error { return nil }); !errors.Is(err, errStoreClosed) {
		t.Fatalf("write after Close: %v", err)
	}
}
