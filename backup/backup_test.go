package backup

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

// TestNewerVersionRefused: a backup of a newer format version is refused
// with a message saying so, before anything else is read.
func TestNewerVersionRefused(t *testing.T) {
	var buf bytes.Buffer
	buf.WriteString(Magic)
	zw, _ := zstd.NewWriter(&buf)
	enc := newEncoder(zw)
	if err := enc.record(kindHeader, Header{Format: FormatName, Version: FormatVersion + 1, CreatedAt: time.Now(), Store: "sqlite"}, nil); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	_, err := Open(bytes.NewReader(buf.Bytes()), nil)
	if !errors.Is(err, ErrNewer) {
		t.Fatalf("error %v", err)
	}
	t.Log(err)
	// A stream with a header and no manifest is truncated.
	buf.Reset()
	buf.WriteString(Magic)
	zw, _ = zstd.NewWriter(&buf)
	enc = newEncoder(zw)
	enc.record(kindHeader, Header{Format: FormatName, Version: FormatVersion, Store: "sqlite"}, nil)
	zw.Close()
	r, err := Open(bytes.NewReader(buf.Bytes()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Scan(r); !errors.Is(err, ErrTruncated) {
		t.Fatalf("error %v", err)
	}
	if _, err := Open(io.LimitReader(bytes.NewReader(buf.Bytes()), 5), nil); !errors.Is(err, ErrNotBackup) {
		t.Fatalf("error %v", err)
	}
}
