package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/transport/apierror"
)

// TestWorkspaceCommands: pgm-admin workspace create prints a working key
// of the new workspace, list shows each workspace's statistics,
// --workspace points the other commands at one, and delete (with --yes)
// removes one workspace with its keys and nothing of
// another, on both backends.
func TestWorkspaceCommands(t *testing.T) {
	t.Parallel()
	for _, b := range []struct {
		name string
		vars func(t *testing.T) map[string]string
	}{
		{"sqlite", func(t *testing.T) map[string]string {
			return map[string]string{"POSTGRAM_DATA_DIR": t.TempDir(), "LOG_LEVEL": "error"}
		}},
		{"postgres", func(t *testing.T) map[string]string {
			return map[string]string{"DATABASE_URL": pgtest.Schema(t), "LOG_LEVEL": "error", "POSTGRAM_DATA_DIR": t.TempDir()}
		}},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			vars := b.vars(t)
			mustAdmin(t, vars, "", "migrate")
			acmeKey := strings.TrimSpace(mustAdmin(t, vars, "", "workspace", "create", "acme"))
			if !strings.HasPrefix(acmeKey, postgram.KeyPrefix) {
				t.Fatalf("create printed %q, want the key", acmeKey)
			}
			var created struct {
				Workspace string `json:"workspace"`
				Key       string `json:"key"`
			}
			if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "--json", "workspace", "create", "bravo", "--scopes", "read,write")), &created); err != nil {
				t.Fatal(err)
			}
			if created.Workspace != "bravo" || !strings.HasPrefix(created.Key, postgram.KeyPrefix) {
				t.Fatalf("create --json: %+v", created)
			}
			if _, errs, code := admin(t, vars, "", "workspace", "create", "acme"); code == 0 || !strings.Contains(errs, "exists") {
				t.Fatalf("create twice: exit %d, %s", code, errs)
			}
			if _, errs, code := admin(t, vars, "", "workspace", "create", "bad name"); code != apierror.ExitUsage || !strings.Contains(errs, "workspace") {
				t.Fatalf("create with a bad name: exit %d, %s", code, errs)
			}

			// The keys open their own workspaces only.
			ctx := context.Background()
			c, st := serverClient(t, vars, nil)
			adm, err := c.Admin()
			if err != nil {
				t.Fatal(err)
			}
			for key, want := range map[string]string{acmeKey: "acme", created.Key: "bravo"} {
				ws, err := adm.KeyWorkspace(ctx, key)
				if err != nil || ws != want {
					t.Fatalf("the key's workspace: %q %v, want %s", ws, err, want)
				}
			}
			acmeVars := map[string]string{}
			for k, v := range vars {
				acmeVars[k] = v
			}
			acmeVars["POSTGRAM_WORKSPACE"] = "acme"
			ac, _ := serverClient(t, acmeVars, nil)
			if _, err := ac.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: "acme's note"}); err != nil {
				t.Fatal(err)
			}
			st.Close()

			out := mustAdmin(t, vars, "", "workspace", "list")
			for _, want := range []string{"WORKSPACE", "acme", "bravo", "ENTITIES"} {
				if !strings.Contains(out, want) {
					t.Errorf("list lacks %q:\n%s", want, out)
				}
			}
			var listed struct {
				Workspaces []struct {
					Name  string              `json:"name"`
					Stats postgram.StoreStats `json:"stats"`
				} `json:"workspaces"`
			}
			if err := json.Unmarshal([]byte(mustAdmin(t, vars, "", "--json", "workspace", "list")), &listed); err != nil {
				t.Fatal(err)
			}
			stats := map[string]postgram.StoreStats{}
			for _, w := range listed.Workspaces {
				stats[w.Name] = w.Stats
			}
			if stats["acme"].Entities != 1 || stats["acme"].Keys != 1 || stats["bravo"].Entities != 0 || stats["bravo"].Keys != 1 {
				t.Fatalf("list --json: %+v", listed)
			}
			// --workspace points a command at one workspace.
			if out := mustAdmin(t, vars, "", "--workspace", "acme", "stats"); !strings.Contains(out, "acme") {
				t.Errorf("stats --workspace acme:\n%s", out)
			}
			if out := mustAdmin(t, vars, "", "--workspace", "bravo", "key", "list"); !strings.Contains(out, "bravo-admin") || strings.Contains(out, "acme-admin") {
				t.Errorf("key list --workspace bravo:\n%s", out)
			}

			if _, errs, code := admin(t, vars, "", "workspace", "delete", "acme"); code != apierror.ExitUsage || !strings.Contains(errs, "--yes") {
				t.Fatalf("delete without --yes: exit %d, %s", code, errs)
			}
			if out := mustAdmin(t, vars, "", "workspace", "delete", "acme", "--dry-run"); !strings.Contains(out, "would delete workspace acme: 1 entities") {
				t.Fatalf("delete --dry-run: %s", out)
			}
			if out := mustAdmin(t, vars, "", "workspace", "delete", "acme", "--yes"); !strings.Contains(out, "deleted workspace acme: 1 entities, 1 chunks, 0 edges, 1 keys") {
				t.Fatalf("delete: %s", out)
			}
			if _, errs, code := admin(t, vars, "", "workspace", "delete", "acme", "--yes"); code == 0 || !strings.Contains(errs, "not found") {
				t.Fatalf("delete twice: exit %d, %s", code, errs)
			}
			out = mustAdmin(t, vars, "", "workspace", "list")
			if strings.Contains(out, "acme") || !strings.Contains(out, "bravo") {
				t.Fatalf("list after delete:\n%s", out)
			}
			if out := mustAdmin(t, vars, "", "audit", "--operation", "admin.workspace.delete"); !strings.Contains(out, "admin.workspace.delete") {
				t.Errorf("the delete is not audited:\n%s", out)
			}
			c2, _ := serverClient(t, vars, nil)
			adm2, _ := c2.Admin()
			if _, err := adm2.KeyWorkspace(ctx, acmeKey); err == nil {
				t.Error("a deleted workspace's key still finds it")
			}
			if ws, err := adm2.KeyWorkspace(ctx, created.Key); err != nil || ws != "bravo" {
				t.Errorf("bravo's key after acme's delete: %q %v", ws, err)
			}
		})
	}
}
