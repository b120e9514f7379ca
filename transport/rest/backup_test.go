package rest_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/postgramtest"
)

// TestBackupDownload: GET /api/admin/backup streams a backup that reads
// back whole, to a key with the backup scope and no limits only, on both
// backends; a store holding another workspace ends the stream without its
// manifest.
func TestBackupDownload(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			t.Parallel()
			e := newEnvOn(t, b)
			for _, c := range []string{"first note", "second note"} {
				e.store(e.admin, map[string]any{"type": "memory", "content": c})
			}
			reader := e.key(postgram.KeySpec{Name: "reader", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite, postgram.ScopeDelete, postgram.ScopeSync}})
			limited := e.key(postgram.KeySpec{Name: "limited", Scopes: []postgram.Scope{postgram.ScopeBackup},
				AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
			backer := e.key(postgram.KeySpec{Name: "backer", Scopes: []postgram.Scope{postgram.ScopeBackup}})
			e.do("GET", "/api/admin/backup", "", nil).want(http.StatusUnauthorized)
			if r := e.do("GET", "/api/admin/backup", reader, nil).want(http.StatusForbidden); !strings.Contains(string(r.Body), "backup") {
				t.Fatalf("refusal: %s", r.Body)
			}
			e.do("GET", "/api/admin/backup", limited, nil).want(http.StatusForbidden)
			e.do("GET", "/api/admin/backups", reader, nil).want(http.StatusForbidden)
			if r := e.do("GET", "/api/admin/backups", backer, nil).want(http.StatusOK); string(r.Body) != `{"schedule":null,"items":[]}`+"\n" {
				t.Fatalf("backups without a schedule: %q", r.Body)
			}

			r := e.do("GET", "/api/admin/backup", backer, nil).want(http.StatusOK)
			if r.Header.Get("Content-Type") != "application/octet-stream" || !strings.Contains(r.Header.Get("Content-Disposition"), ".pgmbackup") {
				t.Fatalf("headers: %v", r.Header)
			}
			br, err := backup.Open(bytes.NewReader(r.Body), nil)
			if err != nil {
				t.Fatal(err)
			}
			m, err := backup.Scan(br)
			br.Close()
			if err != nil || m.Counts[driver.BackupEntities] != 2 || m.Counts[driver.BackupKeys] != 4 || m.Store != b {
				t.Fatalf("manifest %+v, %v", m, err)
			}
			audit, err := postgramtest.Admin(t, e.client).Audit(context.Background(), postgram.AuditFilter{Operation: "backup.download"})
			if err != nil || len(audit) != 1 {
				t.Fatalf("audit: %+v %v", audit, err)
			}

			// Another workspace in the store: the backup holds the key's
			// workspace only, and is whole.
			other, err := postgram.New(context.Background(), postgram.Config{Store: postgramtest.Admin(t, e.client).Storage(), Workspace: "other"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.Store(context.Background(), postgram.StoreInput{Type: postgram.TypeMemory, Content: "another tenant"}); err != nil {
				t.Fatal(err)
			}
			r = e.do("GET", "/api/admin/backup", backer, nil).want(http.StatusOK)
			br, err = backup.Open(bytes.NewReader(r.Body), nil)
			if err != nil {
				t.Fatal(err)
			}
			m2, err := backup.Scan(br)
			br.Close()
			if err != nil {
				t.Fatalf("a backup beside another workspace: %v", err)
			}
			if m2.Counts[driver.BackupEntities] != m.Counts[driver.BackupEntities] {
				t.Fatalf("a backup beside another workspace counts %v, want %v", m2.Counts, m.Counts)
			}
			if bytes.Contains(r.Body, []byte("another tenant")) {
				t.Fatal("the other workspace's content was sent")
			}
		})
	}
}
