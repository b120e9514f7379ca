package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/transport/apierror"
)

// TestPurgeCommand: pgm-admin purge refuses to run without a selector or
// --yes, lists with --dry-run, purges with --yes and audits the purge, on
// both backends.
func TestPurgeCommand(t *testing.T) {
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
			ctx := context.Background()
			c, st := serverClient(t, vars, nil)
			old, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "old secret note"})
			if err != nil {
				t.Fatal(err)
			}
			keep, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "a note to keep"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Delete(ctx, old.ID); err != nil {
				t.Fatal(err)
			}
			st.Close()
			time.Sleep(5 * time.Millisecond)

			if _, errs, code := admin(t, vars, "", "purge", "--yes"); code != apierror.ExitUsage || !strings.Contains(errs, "--archived-before") {
				t.Fatalf("purge without a selector: exit %d, %s", code, errs)
			}
			if _, errs, code := admin(t, vars, "", "purge", "--archived-before", "0d"); code != apierror.ExitUsage || !strings.Contains(errs, "--yes") {
				t.Fatalf("purge without --yes: exit %d, %s", code, errs)
			}
			if _, errs, code := admin(t, vars, "", "purge", "--id", "nope", "--yes"); code != apierror.ExitUsage || !strings.Contains(errs, "nope") {
				t.Fatalf("purge of a bad id: exit %d, %s", code, errs)
			}
			out := mustAdmin(t, vars, "", "purge", "--archived-before", "0d", "--dry-run")
			if !strings.Contains(out, old.ID.String()) || strings.Contains(out, keep.ID.String()) || !strings.Contains(out, "would purge 1 entities") {
				t.Fatalf("dry run: %s", out)
			}
			var res postgram.PurgeResult
			if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "--json", "purge", "--archived-before", "0d", "--yes")), &res); err != nil {
				t.Fatal(err)
			}
			if res.Entities != 1 || res.Chunks != 1 || !res.Scrubbed || len(res.IDs) != 1 || res.IDs[0] != old.ID {
				t.Fatalf("purge: %+v", res)
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
			e := audit.Entries[0]
			if e.Operation != "admin.purge" || e.Details["entities"] != float64(1) || !strings.Contains(strings.Join(strings.Fields(fmtAny(e.Details["ids"])), " "), old.ID.String()) {
				t.Fatalf("audit: %+v", audit.Entries[0])
			}
			for _, d := range audit.Entries {
				b, _ := json.Marshal(d.Details)
				if strings.Contains(string(b), "secret") {
					t.Fatalf("the audit log holds content: %s", b)
				}
			}
			if out := mustAdmin(t, vars, "", "purge", "--id", old.ID.String()+","+keep.ID.String(), "--dry-run"); !strings.Contains(out, "would purge 1 entities") {
				t.Fatalf("dry run by id after the purge: %s", out)
			}
		})
	}
}

func fmtAny(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
