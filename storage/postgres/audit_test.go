package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
)

// TestAuditAppendOnly: the audit table refuses UPDATE, DELETE and TRUNCATE
// from any connection (migration 012); only the library's prune deletes,
// and its permission ends with its transaction (issue 14).
func TestAuditAppendOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	c, err := postgram.New(ctx, postgram.Config{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := postgramtest.Admin(t, c).RecordAudit(ctx, nil, "admin.sql", map[string]any{"statement": "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	refused := func(stmt string) {
		t.Helper()
		_, err := st.Pool().Exec(ctx, stmt)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Fatalf("%s: %v, want a refusal", stmt, err)
		}
	}
	for _, stmt := range []string{
		`UPDATE audit_log SET operation = 'forged'`,
		`UPDATE audit_log SET details = '{}'`,
		`DELETE FROM audit_log`,
		`TRUNCATE audit_log`,
	} {
		refused(stmt)
	}
	// The prune's permission is its own transaction's: neither a later
	// statement on the same connections nor a concurrent one may delete.
	if n, err := postgramtest.Admin(t, c).PruneAudit(ctx, time.Now(), false); err != nil || n != 1 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	for range 3 {
		refused(`DELETE FROM audit_log`)
	}
	if all, _ := postgramtest.Admin(t, c).Audit(ctx, postgram.AuditFilter{}); len(all) != 1 || all[0].Operation != "audit.prune" {
		t.Fatalf("after the prune: %+v", all)
	}
}
