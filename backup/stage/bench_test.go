package stage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/backup/stage"
	"github.com/postgram-go/postgram/driver"
)

// BenchmarkBackupRestore backs up and restores a SQLite fixture of
// BACKUP_BENCH_ENTITIES entities (default 5,000; 1.2 chunks each, 1,536-dim
// embeddings) and reports seconds and MiB, plain and encrypted.
//
//	BACKUP_BENCH_ENTITIES=100000 go test -run - -bench BackupRestore -benchtime 1x ./backup/stage/
func BenchmarkBackupRestore(b *testing.B) {
	n := 5000
	if v, err := strconv.Atoi(os.Getenv("BACKUP_BENCH_ENTITIES")); err == nil && v > 0 {
		n = v
	}
	ctx := context.Background()
	dir := b.TempDir()
	st := openSQLite(&testing.T{}, filepath.Join(dir, "src.db"))
	defer st.Close()
	const d = 1536
	if err := st.RestoreModels(ctx, []driver.BackupModel{{ID: 1, ModelInfo: postgram.ModelInfo{Provider: "test", Name: "bench", Dimensions: d}, Active: true, CreatedAt: time.Now()}}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"orion", "ledger", "kestrel", "harbor", "quartz", "meadow", "migration", "invoice", "design", "review"}
	var batch []*driver.BackupEntity
	now := time.Now().UTC().Truncate(time.Microsecond)
	for i := range n {
		e := &driver.BackupEntity{Workspace: "default", ChunkGeneration: 1, Metadata: []byte(`{"n":` + strconv.Itoa(i) + `}`)}
		e.Entity = postgram.Entity{ID: uuid.New(), Type: postgram.TypeMemory, Visibility: postgram.VisibilityPersonal, Status: postgram.StatusActive,
			Version: 1, EnrichmentStatus: postgram.StageCompleted, ExtractionStatus: postgram.StageSkipped, CreatedAt: now, UpdatedAt: now, Tags: []string{}}
		chunks := 1
		if i%5 == 0 {
			chunks = 2
		}
		for c := range chunks {
			text := ""
			for range 60 {
				text += words[rng.IntN(len(words))] + " "
			}
			e.Entity.Content += text
			v := make([]float32, d)
			for j := range v {
				v[j] = rng.Float32()*2 - 1
			}
			e.Chunks = append(e.Chunks, driver.BackupChunk{ID: uuid.New(), Index: c, Content: text, ModelID: 1, Embedding: v})
		}
		batch = append(batch, e)
		if len(batch) == 500 || i == n-1 {
			if err := st.RestoreEntities(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = nil
		}
	}
	recip, idents := passphrase(&testing.T{}, "bench")
	b.ResetTimer()
	for i := range b.N {
		for _, enc := range []bool{false, true} {
			opts := backup.Options{}
			var ids = idents[:0]
			if enc {
				opts.Recipients, ids = recip, idents
			}
			path := filepath.Join(dir, fmt.Sprintf("b%d-%v.pgmb", i, enc))
			start := time.Now()
			m, err := backup.WriteFile(ctx, path, st, opts)
			if err != nil {
				b.Fatal(err)
			}
			bt := time.Since(start)
			fi, _ := os.Stat(path)
			target := filepath.Join(dir, fmt.Sprintf("r%d-%v.db", i, enc))
			start = time.Now()
			f, _ := os.Open(path)
			r, err := backup.Open(f, ids)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := stage.Restore(ctx, r, stage.SQLite{Path: target}, stage.Options{}); err != nil {
				b.Fatal(err)
			}
			r.Close()
			f.Close()
			rt := time.Since(start)
			b.Logf("entities=%d chunks=%d encrypted=%v backup=%.1fs size=%.1fMiB restore=%.1fs", m.Counts[driver.BackupEntities],
				m.Counts[driver.BackupChunks], enc, bt.Seconds(), float64(fi.Size())/(1<<20), rt.Seconds())
		}
	}
}
