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
// success in /health without the passphrase.
func TestScheduledBackups(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "backups")
	const pass = "correct horse battery staple"
	keyFile := filepath.Join(t.TempDir(), "key")
	addr, logs := start(t, map[string]string{"BACKUP_INTERVAL": "300ms", "BACKUP_DIR": dir, "BACKUP_KEEP": "2",
		"PGM_BACKUP_PASSPHRASE": pass, "BOOTSTRAP_KEY_FILE": keyFile})
	s := &backup.Scheduler{Dir: dir}
	deadline := time.Now().Add(30 * time.Second)
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
	if strings.Contains(string(body), pass) || strings.Contains(logs.String(), pass) || strings.Contains(string(body), dir) {
		t.Fatalf("a secret or path leaked: %s", body)
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
	id, err := age.NewScryptIdentity(pass)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(files[len(files)-1])
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
