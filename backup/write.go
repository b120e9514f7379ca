package backup

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"filippo.io/age"
	"github.com/klauspost/compress/zstd"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// Source is a store that can be backed up.
type Source interface {
	driver.BackupStorage
	Name() string
}

// Options configures a backup.
type Options struct {
	// Recipients, when set, encrypt the backup with age (a passphrase is
	// an age.ScryptRecipient). Nothing unencrypted is written then.
	Recipients []age.Recipient
	// Now returns the current time. Default time.Now.
	Now func() time.Time
}

// encoder frames records, hashing them per table and as a stream.
type encoder struct {
	w      io.Writer
	stream hash.Hash
	tables map[string]hash.Hash
	counts map[string]int64
	model  *postgram.ModelInfo
	frame  []byte
	vec    []byte
}

func newEncoder(w io.Writer) *encoder {
	e := &encoder{w: w, stream: sha256.New(), tables: map[string]hash.Hash{}, counts: map[string]int64{}}
	for _, t := range Tables {
		e.tables[t] = sha256.New()
		e.counts[t] = 0
	}
	return e
}

// record writes one record (vec only for entities).
func (e *encoder) record(kind byte, v any, vec []byte) error {
	js, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode record %q: %w", kind, err)
	}
	f := append(e.frame[:0], kind)
	f = binary.AppendUvarint(f, uint64(len(js)))
	f = append(f, js...)
	f = binary.AppendUvarint(f, uint64(len(vec)))
	e.frame = f
	if t, ok := tableOf[kind]; ok {
		h := e.tables[t]
		h.Write(f)
		h.Write(vec)
		e.counts[t]++
	}
	if kind != kindManifest {
		e.stream.Write(f)
		e.stream.Write(vec)
	}
	if _, err := e.w.Write(f); err != nil {
		return err
	}
	if len(vec) > 0 {
		if _, err := e.w.Write(vec); err != nil {
			return err
		}
	}
	return nil
}

// entityLine is an entity record's JSON: the entity, and the length of
// each chunk's embedding in the record's vectors (0: none).
type entityLine struct {
	*driver.BackupEntity
	Dims []int `json:"dims"`
}

// sink returns the BackupSink that encodes every record.
func (e *encoder) sink() driver.BackupSink {
	return driver.BackupSink{
		Model: func(m *driver.BackupModel) error {
			if m.Active {
				mi := m.ModelInfo
				e.model = &mi
			}
			m.CreatedAt = m.CreatedAt.UTC()
			return e.record(kindModel, m, nil)
		},
		Entity: func(r *driver.BackupEntity) error {
			meta, err := canonicalJSON(r.Metadata)
			if err != nil {
				return fmt.Errorf("metadata of entity %s: %w", r.Entity.ID, err)
			}
			r.Metadata = meta
			r.Entity.Metadata = nil
			if r.Entity.Tags == nil {
				r.Entity.Tags = []string{}
			}
			dims := make([]int, len(r.Chunks))
			vec := e.vec[:0]
			for i, c := range r.Chunks {
				if c.Embedding == nil {
					continue
				}
				dims[i] = len(c.Embedding)
				for _, f := range c.Embedding {
					vec = binary.LittleEndian.AppendUint32(vec, math.Float32bits(f))
				}
				e.counts[driver.BackupVectors]++
			}
			e.vec = vec
			e.counts[driver.BackupChunks] += int64(len(r.Chunks))
			return e.record(kindEntity, entityLine{BackupEntity: r, Dims: dims}, vec)
		},
		Edge: func(ed *driver.BackupEdge) error {
			ed.Confidence = float32Value(ed.Confidence)
			if ed.Metadata == nil {
				ed.Metadata = map[string]any{}
			}
			return e.record(kindEdge, ed, nil)
		},
		Key:   func(k *driver.BackupKey) error { return e.record(kindKey, k, nil) },
		Audit: func(a *driver.BackupAudit) error { return e.record(kindAudit, a, nil) },
		SyncFile: func(f *driver.BackupSyncFile) error {
			return e.record(kindSyncFile, f, nil)
		},
	}
}

// sums returns the hex digests of every table.
func (e *encoder) sums() map[string]string {
	out := make(map[string]string, len(e.tables))
	for t, h := range e.tables {
		if t == driver.BackupChunks || t == driver.BackupVectors {
			continue // inside the entities' records
		}
		out[t] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// float32Value returns the shortest decimal that reads back as v's
// float32 value (PostgreSQL stores confidences as real).
func float32Value(v float64) float64 {
	f, err := strconv.ParseFloat(strconv.FormatFloat(float64(float32(v)), 'g', -1, 32), 64)
	if err != nil {
		return v
	}
	return f
}

// canonicalJSON returns raw compact with object keys sorted and numbers
// as written ("{}" for empty input).
func canonicalJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("{}"), nil
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// Write writes a plain (unencrypted) backup of src to w: the magic, then
// the zstd-compressed records of one snapshot. It returns the manifest.
func Write(ctx context.Context, w io.Writer, src Source, opts Options) (*Manifest, error) {
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	start := now()
	if _, err := io.WriteString(w, Magic); err != nil {
		return nil, fmt.Errorf("backup: write: %w", err)
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(2))
	if err != nil {
		return nil, fmt.Errorf("backup: zstd: %w", err)
	}
	bw := bufio.NewWriterSize(zw, 1<<20)
	enc := newEncoder(bw)
	// The header's model is the active one when the header is written;
	// the manifest's is the snapshot's.
	hdr := Header{Format: FormatName, Version: FormatVersion, CreatedAt: start.UTC().Truncate(time.Microsecond), Store: src.Name()}
	if err := enc.record(kindHeader, hdr, nil); err != nil {
		zw.Close()
		return nil, fmt.Errorf("backup: write: %w", err)
	}
	if err := src.ReadBackup(ctx, enc.sink()); err != nil {
		zw.Close()
		return nil, fmt.Errorf("backup: %w", err)
	}
	m := &Manifest{Format: FormatName, Version: FormatVersion, CreatedAt: hdr.CreatedAt, Store: src.Name(), Model: enc.model,
		Counts: enc.counts, SHA256: enc.sums(), StreamSHA256: hex.EncodeToString(enc.stream.Sum(nil))}
	m.Seconds = math.Round(now().Sub(start).Seconds()*1000) / 1000
	if err := enc.record(kindManifest, m, nil); err != nil {
		zw.Close()
		return nil, fmt.Errorf("backup: write: %w", err)
	}
	if err := bw.Flush(); err != nil {
		zw.Close()
		return nil, fmt.Errorf("backup: write: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("backup: write: %w", err)
	}
	return m, nil
}

// WriteTo writes a backup of src to w, encrypted when opts has
// recipients.
func WriteTo(ctx context.Context, w io.Writer, src Source, opts Options) (*Manifest, error) {
	if len(opts.Recipients) == 0 {
		return Write(ctx, w, src, opts)
	}
	aw, err := age.Encrypt(w, opts.Recipients...)
	if err != nil {
		return nil, fmt.Errorf("backup: encrypt: %w", err)
	}
	m, err := Write(ctx, aw, src, opts)
	if err != nil {
		return nil, err
	}
	if err := aw.Close(); err != nil {
		return nil, fmt.Errorf("backup: encrypt: %w", err)
	}
	return m, nil
}

// ErrExists is returned by WriteFile when the output file exists.
var ErrExists = errors.New("the output file already exists")

// WriteFile writes a backup of src to path: into a temporary file in the
// same directory (mode 0600), fsynced, then renamed to path, and the
// directory fsynced. A backup that fails or is killed leaves no file at
// path (and its temporary file, when left by a kill, has no manifest, so
// it never passes as complete). An existing path is refused.
func WriteFile(ctx context.Context, path string, src Source, opts Options) (*Manifest, error) {
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("backup: %s: %w", path, ErrExists)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("backup: %w", err)
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return nil, fmt.Errorf("backup: cannot write in %s: %w", dir, err)
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	m, err := WriteTo(ctx, bw, src, opts)
	if err != nil {
		return nil, err
	}
	if err := bw.Flush(); err != nil {
		return nil, fmt.Errorf("backup: write %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("backup: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("backup: close %s: %w", tmp, err)
	}
	// Link, not rename: it fails instead of replacing a file created at
	// path meanwhile.
	if err := os.Link(tmp, path); err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	os.Remove(tmp)
	ok = true
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return m, nil
}
