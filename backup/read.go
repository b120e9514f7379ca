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
	"math"
	"sort"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/klauspost/compress/zstd"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// Errors a backup can be refused with (wrapped with details).
var (
	ErrNotBackup  = errors.New("not a Postgram backup")
	ErrEncrypted  = errors.New("the backup is encrypted: give its passphrase (PGM_BACKUP_PASSPHRASE, or the prompt) or an age identity")
	ErrWrongKey   = errors.New("cannot decrypt the backup: wrong passphrase or identity")
	ErrCorrupt    = errors.New("the backup is corrupt")
	ErrTruncated  = errors.New("the backup is truncated (no manifest): it is incomplete")
	ErrNewer      = errors.New("the backup was written by a newer Postgram")
	ErrMismatch   = errors.New("the restored store does not match the backup's manifest")
	ErrNotRestore = errors.New("the store cannot be restored into")
)

// Reader reads a backup stream record by record.
type Reader struct {
	// Header is the backup's header; Encrypted says whether it was.
	Header    Header
	Encrypted bool

	zr     *zstd.Decoder
	br     *bufio.Reader
	dec    *decoder
	models map[int64]postgram.ModelInfo
}

// decoder hashes what it reads, as the encoder did.
type decoder struct {
	stream hash.Hash
	tables map[string]hash.Hash
	counts map[string]int64
}

// IsEncrypted reports whether the stream starting with head (its first
// bytes) is an age file.
func IsEncrypted(head []byte) bool {
	return bytes.HasPrefix(head, []byte(ageMagic)) || bytes.HasPrefix(head, []byte(ageArmorMagic))
}

// Open starts reading a backup from r, decrypting it with identities when
// it is encrypted, and reads its header. A backup of a newer format
// version is refused (ErrNewer).
func Open(r io.Reader, identities []age.Identity) (*Reader, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, _ := br.Peek(len(ageArmorMagic))
	rd := &Reader{models: map[int64]postgram.ModelInfo{}}
	var plain io.Reader = br
	if IsEncrypted(head) {
		rd.Encrypted = true
		if len(identities) == 0 {
			return nil, ErrEncrypted
		}
		var src io.Reader = br
		if bytes.HasPrefix(head, []byte(ageArmorMagic)) {
			src = armor.NewReader(br)
		}
		ar, err := age.Decrypt(src, identities...)
		if err != nil {
			var nm *age.NoIdentityMatchError
			if errors.As(err, &nm) || strings.Contains(err.Error(), "incorrect passphrase") {
				return nil, ErrWrongKey
			}
			return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		plain = ar
	}
	pb := bufio.NewReaderSize(plain, 1<<20)
	magic := make([]byte, len(Magic))
	if _, err := io.ReadFull(pb, magic); err != nil || string(magic) != Magic {
		if rd.Encrypted && err != nil {
			// age authenticates every 64 KiB chunk: a flipped bit or a cut
			// fails here.
			return nil, fmt.Errorf("%w: the encrypted data does not authenticate (damaged or truncated): %v", ErrCorrupt, err)
		}
		return nil, ErrNotBackup
	}
	zr, err := zstd.NewReader(pb, zstd.WithDecoderConcurrency(2), zstd.WithDecoderMaxMemory(4<<30))
	if err != nil {
		return nil, fmt.Errorf("backup: zstd: %w", err)
	}
	rd.zr = zr
	rd.br = bufio.NewReaderSize(zr, 1<<20)
	rd.dec = &decoder{stream: sha256.New(), tables: map[string]hash.Hash{}, counts: map[string]int64{}}
	for _, t := range Tables {
		rd.dec.tables[t] = sha256.New()
		rd.dec.counts[t] = 0
	}
	kind, js, _, err := rd.next()
	if err != nil {
		rd.Close()
		return nil, err
	}
	if kind != kindHeader {
		rd.Close()
		return nil, fmt.Errorf("%w: it does not start with a header", ErrCorrupt)
	}
	if err := json.Unmarshal(js, &rd.Header); err != nil {
		rd.Close()
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	if rd.Header.Format != FormatName {
		rd.Close()
		return nil, fmt.Errorf("%w: format %q", ErrNotBackup, rd.Header.Format)
	}
	if rd.Header.Version > FormatVersion {
		rd.Close()
		return nil, fmt.Errorf("%w: format version %d, this program reads up to %d: upgrade Postgram to restore it", ErrNewer, rd.Header.Version, FormatVersion)
	}
	if rd.Header.Version < 1 {
		rd.Close()
		return nil, fmt.Errorf("%w: format version %d", ErrCorrupt, rd.Header.Version)
	}
	return rd, nil
}

// Close releases the decompressor.
func (r *Reader) Close() {
	if r.zr != nil {
		r.zr.Close()
		r.zr = nil
	}
}

// next reads one record, hashing it.
func (r *Reader) next() (kind byte, js, vec []byte, err error) {
	kind, err = r.br.ReadByte()
	if err != nil {
		return 0, nil, nil, r.readErr(err)
	}
	frame := []byte{kind}
	n, err := binary.ReadUvarint(r.br)
	if err != nil {
		return 0, nil, nil, r.readErr(err)
	}
	if n > maxRecordBytes {
		return 0, nil, nil, fmt.Errorf("%w: a record of %d bytes", ErrCorrupt, n)
	}
	frame = binary.AppendUvarint(frame, n)
	js = make([]byte, n)
	if _, err := io.ReadFull(r.br, js); err != nil {
		return 0, nil, nil, r.readErr(err)
	}
	frame = append(frame, js...)
	vn, err := binary.ReadUvarint(r.br)
	if err != nil {
		return 0, nil, nil, r.readErr(err)
	}
	if vn > maxRecordBytes || vn%4 != 0 {
		return 0, nil, nil, fmt.Errorf("%w: vectors of %d bytes", ErrCorrupt, vn)
	}
	frame = binary.AppendUvarint(frame, vn)
	if vn > 0 {
		vec = make([]byte, vn)
		if _, err := io.ReadFull(r.br, vec); err != nil {
			return 0, nil, nil, r.readErr(err)
		}
	}
	if t, ok := tableOf[kind]; ok {
		h := r.dec.tables[t]
		h.Write(frame[:len(frame)])
		h.Write(vec)
		r.dec.counts[t]++
	} else if kind != kindHeader && kind != kindManifest {
		return 0, nil, nil, fmt.Errorf("%w: unknown record kind %q", ErrCorrupt, kind)
	}
	if kind != kindManifest {
		r.dec.stream.Write(frame)
		r.dec.stream.Write(vec)
	}
	return kind, js, vec, nil
}

func (r *Reader) readErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrTruncated
	}
	var nm *age.NoIdentityMatchError
	if errors.As(err, &nm) {
		return ErrWrongKey
	}
	return fmt.Errorf("%w: %v", ErrCorrupt, err)
}

// Records receives a backup's records (Reader.Each). Nil fields skip.
type Records struct {
	Model    func(*driver.BackupModel) error
	Entity   func(*driver.BackupEntity) error
	Edge     func(*driver.BackupEdge) error
	Key      func(*driver.BackupKey) error
	Audit    func(*driver.BackupAudit) error
	SyncFile func(*driver.BackupSyncFile) error
}

// Each reads every record to the manifest, calling recs, and returns the
// manifest once the whole stream matched it (counts, table checksums and
// stream checksum) and nothing follows it. A callback's error stops it.
func (r *Reader) Each(recs Records) (*Manifest, error) {
	for {
		kind, js, vec, err := r.next()
		if err != nil {
			return nil, err
		}
		if kind == kindManifest {
			return r.finish(js)
		}
		if err := r.dispatch(kind, js, vec, recs); err != nil {
			return nil, err
		}
	}
}

func (r *Reader) dispatch(kind byte, js, vec []byte, recs Records) error {
	bad := func(err error) error { return fmt.Errorf("%w: %s record: %v", ErrCorrupt, tableOf[kind], err) }
	switch kind {
	case kindModel:
		var m driver.BackupModel
		if err := json.Unmarshal(js, &m); err != nil {
			return bad(err)
		}
		r.models[m.ID] = m.ModelInfo
		if recs.Model != nil {
			return recs.Model(&m)
		}
	case kindEntity:
		var line struct {
			driver.BackupEntity
			Dims []int `json:"dims"`
		}
		if err := json.Unmarshal(js, &line); err != nil {
			return bad(err)
		}
		e := &line.BackupEntity
		if len(line.Dims) != len(e.Chunks) {
			return bad(fmt.Errorf("entity %s: %d chunks, %d embedding lengths", e.Entity.ID, len(e.Chunks), len(line.Dims)))
		}
		off := 0
		for i, d := range line.Dims {
			r.dec.counts[driver.BackupChunks]++
			if d == 0 {
				continue
			}
			if d < 0 || off+4*d > len(vec) {
				return bad(fmt.Errorf("entity %s: embeddings overrun the record", e.Entity.ID))
			}
			v := make([]float32, d)
			for j := range v {
				v[j] = math.Float32frombits(binary.LittleEndian.Uint32(vec[off+4*j:]))
			}
			off += 4 * d
			e.Chunks[i].Embedding = v
			r.dec.counts[driver.BackupVectors]++
		}
		if off != len(vec) {
			return bad(fmt.Errorf("entity %s: %d bytes of embeddings left over", e.Entity.ID, len(vec)-off))
		}
		if recs.Entity != nil {
			return recs.Entity(e)
		}
	case kindEdge:
		var ed driver.BackupEdge
		if err := json.Unmarshal(js, &ed); err != nil {
			return bad(err)
		}
		if recs.Edge != nil {
			return recs.Edge(&ed)
		}
	case kindKey:
		var k driver.BackupKey
		if err := json.Unmarshal(js, &k); err != nil {
			return bad(err)
		}
		if recs.Key != nil {
			return recs.Key(&k)
		}
	case kindAudit:
		var a driver.BackupAudit
		if err := json.Unmarshal(js, &a); err != nil {
			return bad(err)
		}
		if recs.Audit != nil {
			return recs.Audit(&a)
		}
	case kindSyncFile:
		var f driver.BackupSyncFile
		if err := json.Unmarshal(js, &f); err != nil {
			return bad(err)
		}
		if recs.SyncFile != nil {
			return recs.SyncFile(&f)
		}
	default:
		return fmt.Errorf("%w: unexpected record kind %q", ErrCorrupt, kind)
	}
	return nil
}

// finish checks the manifest against what was read, and that the stream
// ends after it.
func (r *Reader) finish(js []byte) (*Manifest, error) {
	var m Manifest
	if err := json.Unmarshal(js, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	if got := hex.EncodeToString(r.dec.stream.Sum(nil)); got != m.StreamSHA256 {
		return nil, fmt.Errorf("%w: its content does not match the manifest's checksum", ErrCorrupt)
	}
	if err := compare(&m, r.dec.counts, r.dec.sums()); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if _, err := r.br.ReadByte(); !errors.Is(err, io.EOF) {
		if err == nil {
			return nil, fmt.Errorf("%w: data follows the manifest", ErrCorrupt)
		}
		return nil, r.readErr(err)
	}
	return &m, nil
}

func (d *decoder) sums() map[string]string {
	out := map[string]string{}
	for t, h := range d.tables {
		if t == driver.BackupChunks || t == driver.BackupVectors {
			continue
		}
		out[t] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}

// compare checks counts and table checksums against the manifest's.
func compare(m *Manifest, counts map[string]int64, sums map[string]string) error {
	var diffs []string
	for _, t := range Tables {
		if counts[t] != m.Counts[t] {
			diffs = append(diffs, fmt.Sprintf("%s: %d rows, the manifest says %d", t, counts[t], m.Counts[t]))
		}
	}
	keys := make([]string, 0, len(m.SHA256))
	for t := range m.SHA256 {
		keys = append(keys, t)
	}
	sort.Strings(keys)
	for _, t := range keys {
		if sums[t] != m.SHA256[t] {
			diffs = append(diffs, t+": checksum differs")
		}
	}
	if len(diffs) > 0 {
		return errors.New(strings.Join(diffs, "; "))
	}
	return nil
}

// Verify reads st back (one snapshot) and checks that it holds exactly
// what the manifest describes: counts and per-table checksums.
func Verify(ctx context.Context, st driver.BackupStorage, m *Manifest) error {
	enc := newEncoder(io.Discard)
	if err := st.ReadBackup(ctx, enc.sink()); err != nil {
		return fmt.Errorf("backup: verify: %w", err)
	}
	if err := compare(m, enc.counts, enc.sums()); err != nil {
		return fmt.Errorf("%w: %v", ErrMismatch, err)
	}
	return nil
}
