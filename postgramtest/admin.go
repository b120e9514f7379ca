package postgramtest

import "github.com/postgram-go/postgram"

// TB is the part of testing.TB that Admin uses (so that this package does
// not link package testing into the programs that import it).
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Admin returns the operator API of an unscoped client, failing the test
// when c acts for a principal.
func Admin(t TB, c *postgram.Client) *postgram.Admin {
	t.Helper()
	a, err := c.Admin()
	if err != nil {
		t.Fatalf("postgramtest.Admin: %v", err)
	}
	return a
}
