package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"filippo.io/age"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/cmd/internal/config"
	"github.com/postgram-go/postgram/driver"
)

// defaultBackupKeep is BACKUP_KEEP's default.
const defaultBackupKeep = 7

// backupScheduler builds the scheduled backups BACKUP_INTERVAL asks for
// (nil when it is unset, empty, "0" or "off"): into BACKUP_DIR (default
// backups/ in the data directory), keeping BACKUP_KEEP backups (default 7,
// 0 keeps all), encrypted to BACKUP_RECIPIENTS (age public keys, comma- or
// space-separated) and/or under PGM_BACKUP_PASSPHRASE when set.
func backupScheduler(get config.Getenv, env *config.Env, store driver.Storage, client *postgram.Admin, log *slog.Logger) (*backup.Scheduler, error) {
	iv := strings.TrimSpace(get("BACKUP_INTERVAL"))
	if iv == "" || iv == "0" || strings.EqualFold(iv, "off") {
		return nil, nil
	}
	interval, err := parseInterval(iv)
	if err != nil {
		return nil, fmt.Errorf("BACKUP_INTERVAL: %w", err)
	}
	dir := strings.TrimSpace(get("BACKUP_DIR"))
	if dir == "" {
		if env.DataDir == "" {
			return nil, fmt.Errorf("BACKUP_INTERVAL is set but BACKUP_DIR is not (and there is no data directory to default to)")
		}
		dir = filepath.Join(env.DataDir, "backups")
	}
	keep := defaultBackupKeep
	if k := strings.TrimSpace(get("BACKUP_KEEP")); k != "" {
		if keep, err = strconv.Atoi(k); err != nil || keep < 0 {
			return nil, fmt.Errorf("BACKUP_KEEP: %q is not a count (0 keeps every backup)", k)
		}
	}
	var recips []age.Recipient
	if rs := strings.TrimSpace(get("BACKUP_RECIPIENTS")); rs != "" {
		for _, r := range strings.FieldsFunc(rs, func(c rune) bool { return c == ',' || c == ' ' || c == '\n' || c == '\t' }) {
			rec, err := age.ParseX25519Recipient(r)
			if err != nil {
				return nil, fmt.Errorf("BACKUP_RECIPIENTS: %q is not an age public key (age1...)", r)
			}
			recips = append(recips, rec)
		}
	}
	if p := get("PGM_BACKUP_PASSPHRASE"); p != "" {
		if len(recips) > 0 {
			// age does not mix a passphrase with other recipients.
			return nil, fmt.Errorf("set either PGM_BACKUP_PASSPHRASE or BACKUP_RECIPIENTS for scheduled backups, not both")
		}
		sr, err := age.NewScryptRecipient(p)
		if err != nil {
			return nil, fmt.Errorf("PGM_BACKUP_PASSPHRASE: %w", err)
		}
		recips = append(recips, sr)
	}
	src, ok := store.(backup.Source)
	if !ok {
		return nil, fmt.Errorf("BACKUP_INTERVAL: the %s store cannot be backed up", store.Name())
	}
	if len(recips) == 0 {
		log.Warn("scheduled backups are not encrypted: set PGM_BACKUP_PASSPHRASE or BACKUP_RECIPIENTS", "dir", dir)
	}
	return &backup.Scheduler{Src: src, Dir: dir, Interval: interval, Keep: keep, Recipients: recips, Log: log,
		OnSuccess: func(ctx context.Context, file string, m *backup.Manifest) {
			if err := client.RecordAudit(ctx, nil, "admin.backup", map[string]any{"file": filepath.Base(file), "scheduled": true,
				"encrypted": len(recips) > 0, "entities": m.Counts[driver.BackupEntities]}); err != nil {
				log.Warn("scheduled backup: audit failed", "err", err)
			}
		}}, nil
}

// parseInterval reads a Go duration (30m, 24h) or a number of days (7d).
func parseInterval(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := strconv.Atoi(n); err == nil && d > 0 {
			return time.Duration(d) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration (30m, 24h, 7d; off disables)", s)
	}
	return d, nil
}
