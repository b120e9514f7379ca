package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/postgram-go/postgram/backup"
)

// TestScheduledBackups: with BACKUP_INTERVAL the server writes encrypted
// backups into BACKUP_DIR, keeps BACKUP_KEEP of them and shows the last
// success in /health. Rotation is checked with an X25519 recipient (a
// passphrase costs a deliberately slow scrypt per backup, seconds under the
// race detector on a loaded machine); TestScheduledBackupPassphrase covers
// the passphrase.
func TestScheduledBackups(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "backups")
	ident, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(t.TempDir(), "key")
	addr, logs := start(t, map[string]string{"BACKUP_INTERVAL": "300ms", "BACKUP_DIR": dir, "BACKUP_KEEP": "2",
		"BACKUP_RECIPIENTS": ident.Recipient().String(), "BOOTSTRAP_KEY_FILE": keyFile})
	s := &backup.Scheduler{Dir: dir}
	deadline := time.Now().Add(60 * time.Second)
	for {
		files, _ := s.Scheduled()
		if len(files) == 2 && strings.Count(logs.String(), "scheduled backup written") >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("scheduled backups: %v\n%s", files, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Backup *backup.Status `json:"backup"`
	}
	body, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatal(err)
	}
	if h.Backup == nil || h.Backup.State != "ok" || h.Backup.LastSuccess == nil || !h.Backup.Encrypted || h.Backup.Keep != 2 {
		t.Fatalf("/health backup: %s", body)
	}
	if strings.Contains(string(body), dir) {
		t.Fatalf("the backup path leaked: %s", body)
	}
	// The admin API lists them to the (all-scopes) bootstrap key.
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "http://"+addr+"/api/admin/backups", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(key)))
	lresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Schedule *backup.Status         `json:"schedule"`
		Items    []backup.ScheduledFile `json:"items"`
	}
	lbody, _ := io.ReadAll(lresp.Body)
	lresp.Body.Close()
	if err := json.Unmarshal(lbody, &list); err != nil || lresp.StatusCode != 200 || list.Schedule == nil || len(list.Items) < 1 ||
		!strings.HasSuffix(list.Items[0].File, backup.ScheduledExt) || list.Items[0].Bytes == 0 || strings.Contains(string(lbody), dir) {
		t.Fatalf("GET /api/admin/backups: %d %s", lresp.StatusCode, lbody)
	}
	files, _ := s.Scheduled()
	openBackup(t, files[len(files)-1], ident)
}

// TestScheduledBackupPassphrase: a passphrase-encrypted scheduled backup
// opens with the passphrase, which appears neither in /health nor in the log.
func TestScheduledBackupPassphrase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "backups")
	const pass = "correct horse battery staple"
	addr, logs := start(t, map[string]string{"BACKUP_INTERVAL": "1h", "BACKUP_DIR": dir, "PGM_BACKUP_PASSPHRASE": pass})
	s := &backup.Scheduler{Dir: dir}
	deadline := time.Now().Add(60 * time.Second)
	var files []string
	for {
		files, _ = s.Scheduled()
		if len(files) == 1 && strings.Contains(logs.String(), "scheduled backup written") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("scheduled backup: %v\n%s", files, logs)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Get("http://" + addr + "/health")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"encrypted":true`) || strings.Contains(string(body), pass) || strings.Contains(logs.String(), pass) {
		t.Fatalf("/health or the log: %s\n%s", body, logs)
	}
	id, err := age.NewScryptIdentity(pass)
	if err != nil {
		t.Fatal(err)
	}
	openBackup(t, files[0], id)
}

// openBackup decrypts and scans a scheduled backup file.
func openBackup(t *testing.T, file string, id age.Identity) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := backup.Open(f, []age.Identity{id})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := backup.Scan(r); err != nil {
		t.Fatal(err)
	}
}

func TestBackupConfigRefused(t *testing.T) {
	for _, vars := range []map[string]string{
		{"BACKUP_INTERVAL": "soon"},
		{"BACKUP_INTERVAL": "1h", "BACKUP_KEEP": "-1"},
		{"BACKUP_INTERVAL": "1h", "BACKUP_RECIPIENTS": "not-a-key"},
	} {
		env := map[string]string{"POSTGRAM_DATA_DIR": t.TempDir(), "PORT": "0", "LOG_LEVEL": "error"}
		for k, v := range vars {
			env[k] = v
		}
		err := run(context.Background(), func(k string) string { return env[k] }, &lockedBuffer{}, nil)
		if err == nil || !strings.Contains(err.Error(), "BACKUP_") {
			t.Fatalf("%v: %v", vars, err)
		}
	}
}
