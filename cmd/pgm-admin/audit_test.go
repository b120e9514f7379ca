package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/transport/apierror"
)

// TestAuditPrune: the audit log refuses changes through pgm-admin sql, and
// pgm-admin audit prune --before DATE is its retention: --dry-run counts,
// deleting needs --yes, and the prune is itself audited. On both backends.
func TestAuditPrune(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name string
		vars func(t *testing.T) map[string]string
	}{
		{"sqlite", func(t *testing.T) map[string]string {
			return map[string]string{"POSTGRAM_DATA_DIR": t.TempDir(), "LOG_LEVEL": "error"}
		}},
		{"postgres", func(t *testing.T) map[string]string {
			return map[string]string{"DATABASE_URL": pgtest.Schema(t), "LOG_LEVEL": "error"}
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			vars := b.vars(t)
			mustAdmin(t, vars, "", "migrate")
			mustAdmin(t, vars, "", "key", "create", "ci")
			// pgm-admin sql cannot rewrite or delete the log (the attempt is
			// itself audited as admin.sql).
			for _, stmt := range []string{"UPDATE audit_log SET operation = 'forged'", "DELETE FROM audit_log"} {
				if _, errs, code := admin(t, vars, "", "sql", stmt); code == 0 || !strings.Contains(errs, "append-only") {
					t.Fatalf("sql %q: exit %d, %s", stmt, code, errs)
				}
			}
			if _, errs, code := admin(t, vars, "", "audit", "prune", "--before", "2099-01-01", "--yes"); code != apierror.ExitUsage ||
				!strings.Contains(errs, "future") {
				t.Fatalf("prune with a future cut-off: exit %d, %s", code, errs)
			}
			if _, errs, code := admin(t, vars, "", "audit", "prune"); code != apierror.ExitUsage || !strings.Contains(errs, "--before") {
				t.Fatalf("prune without --before: exit %d, %s", code, errs)
			}
			if _, errs, code := admin(t, vars, "", "audit", "prune", "--before", time.Now().UTC().Format(time.DateOnly)); code != apierror.ExitUsage ||
				!strings.Contains(errs, "--yes") {
				t.Fatalf("prune without --yes: exit %d, %s", code, errs)
			}
			if out := mustAdmin(t, vars, "", "audit", "prune", "--before", "2000-01-01", "--dry-run"); !strings.Contains(out, "would delete 0 audit entries") {
				t.Fatalf("dry run: %s", out)
			}
			time.Sleep(10 * time.Millisecond)
			cut := time.Now().UTC().Format(time.RFC3339Nano)
			var res struct {
				Count int `json:"count"`
			}
			if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "--json", "audit", "prune", "--before", cut, "--yes")), &res); err != nil {
				t.Fatal(err)
			}
			// key.create, two refused admin.sql, the dry run's nothing.
			if res.Count != 3 {
				t.Fatalf("pruned %d entries, want 3", res.Count)
			}
			var audit struct {
				Entries []struct {
					Operation string         `json:"operation"`
					Details   map[string]any `json:"details"`
				} `json:"entries"`
			}
			if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "audit", "--json")), &audit); err != nil {
				t.Fatal(err)
			}
			if len(audit.Entries) != 1 || audit.Entries[0].Operation != "audit.prune" || audit.Entries[0].Details["deleted"] != float64(3) {
				t.Fatalf("after the prune: %+v", audit.Entries)
			}
		})
	}
}
