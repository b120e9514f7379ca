package sqlite_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/sqlite"
)

// TestAuditAppendOnly: the audit table refuses UPDATE and DELETE from any
// connection (migration 010), another process's included; only the
// library's prune deletes, and its gate closes with its transaction
// (issue 14).
func TestAuditAppendOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := openStore(t)
	c := newClient(t, st, nil)
	if err := postgramtest.Admin(t, c).RecordAudit(ctx, nil, "admin.sql", map[string]any{"statement": "SELECT 1"}); err != nil {
		t.Fatal(err)
	}
	other := openAt(t, st.Path()) // another process sharing the file
	refused := func(stmt string) {
		t.Helper()
		for _, s := range []*sqlite.Store{st, other} {
			conn, err := s.AdminConn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = conn.ExecContext(ctx, stmt)
			conn.Close()
			if err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Fatalf("%s: %v, want a refusal", stmt, err)
			}
		}
	}
	for _, stmt := range []string{
		`UPDATE audit_log SET operation = 'forged'`,
		`UPDATE audit_log SET details = '{}'`,
		`DELETE FROM audit_log`,
		`DELETE FROM audit_log WHERE operation = 'admin.sql'`,
	} {
		refused(stmt)
	}
	if n, err := postgramtest.Admin(t, c).PruneAudit(ctx, time.Now(), false); err != nil || n != 1 {
		t.Fatalf("prune: %d, %v", n, err)
	}
	refused(`DELETE FROM audit_log`)
	if all, _ := postgramtest.Admin(t, c).Audit(ctx, postgram.AuditFilter{}); len(all) != 1 || all[0].Operation != "audit.prune" {
		t.Fatalf("after the prune: %+v", all)
	}
}
