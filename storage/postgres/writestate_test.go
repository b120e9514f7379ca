package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/writestate"
)

// TestWriteTracer: a statement failing with disk_full (53100) marks the
// store read-only, a write that changes rows clears it, and the error a
// caller gets is UNAVAILABLE with a public message free of the server's.
func TestWriteTracer(t *testing.T) {
	t.Parallel()
	st := &writestate.Tracker{}
	w := writeTracer{st: st}
	full := &pgconn.PgError{Code: "53100", Message: `could not extend file "base/16384/2619": No space left on device`}
	w.note(pgconn.CommandTag{}, fmt.Errorf("insert: %w", full))
	if ro, why := st.ReadOnly(); !ro || why != "disk full" {
		t.Fatalf("after 53100: %v %q", ro, why)
	}
	w.note(pgconn.NewCommandTag("SELECT 1"), nil)
	w.note(pgconn.NewCommandTag("UPDATE 0"), nil)
	if ro, _ := st.ReadOnly(); !ro {
		t.Fatal("a read or a write changing nothing proves nothing")
	}
	w.note(pgconn.NewCommandTag("INSERT 0 1"), nil)
	if ro, _ := st.ReadOnly(); ro {
		t.Fatal("an insert that committed rows must clear the state")
	}
	var be *postgram.BackendError
	if err := mapErr(full); !errors.Is(err, postgram.ErrUnavailable) || !errors.As(err, &be) || be.Public == "" ||
		be.Public != "the database's disk is full; the write was rolled back (SQLSTATE 53100)" {
		t.Fatalf("mapErr(53100) = %v", err)
	}
}
