package apierror_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
)

// TestBackendTextNeverReachesClients: a store's failure is told by its
// public message; the driver's text, which can carry SQL, values, host
// names and paths, stays in the Go error for logs.
func TestBackendTextNeverReachesClients(t *testing.T) {
	t.Parallel()
	driver := errors.New(`ERROR: invalid byte sequence for encoding "UTF8": 0x00 near 'secret-user-content' at 10.0.0.7:5432`)
	cases := []struct {
		err    error
		code   apierror.Code
		status int
		msg    string
	}{
		{fmt.Errorf("store entity: postgres: create entity: %w", &postgram.BackendError{Kind: postgram.ErrInvalidArgument, Err: driver,
			Public: "the database rejected a value (SQLSTATE 22021)"}), apierror.Validation, 400, "the database rejected a value (SQLSTATE 22021)"},
		{fmt.Errorf("list: %w", &postgram.BackendError{Kind: postgram.ErrUnavailable, Err: driver,
			Public: "the disk is full"}), apierror.Unavailable, 503, "the disk is full"},
		{fmt.Errorf("list: postgres: list entities: %w", context.DeadlineExceeded), apierror.Unavailable, 503,
			"the operation did not finish in time; try again"},
		{fmt.Errorf("search: %w", driver), apierror.Internal, 500, "internal error"},
	}
	for _, tc := range cases {
		env := apierror.From(tc.err)
		if env.Error.Code != tc.code || env.Status() != tc.status || env.Error.Message != tc.msg {
			t.Errorf("From(%v) = %s %d %q, want %s %d %q", tc.err, env.Error.Code, env.Status(), env.Error.Message, tc.code, tc.status, tc.msg)
		}
		if js := string(env.JSON()); strings.Contains(js, "secret-user-content") || strings.Contains(js, "10.0.0.7") || strings.Contains(js, "postgres:") {
			t.Errorf("the envelope leaks backend text: %s", js)
		}
	}
	// The Go error keeps the driver's text for logs.
	be := &postgram.BackendError{Kind: postgram.ErrUnavailable, Err: driver, Public: "the disk is full"}
	if !errors.Is(be, postgram.ErrUnavailable) || !strings.Contains(be.Error(), "secret-user-content") {
		t.Errorf("BackendError: %v", be)
	}
}
