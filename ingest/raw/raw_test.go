package raw

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestFS(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := &FS{Dir: filepath.Join(t.TempDir(), "raw"), MaxBytes: 1 << 20}
	data := []byte("the original bytes of an ingested page")
	sum := sha256.Sum256(data)
	want := hex.EncodeToString(sum[:])
	obj, err := s.Put(ctx, bytes.NewReader(data))
	if err != nil || obj.SHA256 != want || obj.Size != int64(len(data)) || obj.Existed {
		t.Fatalf("put: %+v %v", obj, err)
	}
	again, err := s.Put(ctx, bytes.NewReader(data))
	if err != nil || again.SHA256 != want || !again.Existed {
		t.Fatalf("same bytes again: %+v %v", again, err)
	}
	rc, err := s.Open(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %q", got)
	}
	st, err := os.Stat(filepath.Join(s.Dir, want[:2], want[2:4], want))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("stored file: %v %v", st, err)
	}
	if err := s.Delete(ctx, want); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(ctx, want); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := s.Delete(ctx, want); err != nil {
		t.Fatalf("second delete: %v", err)
	}
	// Bad digests never reach the file system.
	for _, bad := range []string{"", "../../etc/passwd", strings.Repeat("A", 64), want[:63]} {
		if _, err := s.Open(ctx, bad); !errors.Is(err, ErrDigest) {
			t.Errorf("open %q: %v", bad, err)
		}
		if err := s.Delete(ctx, bad); !errors.Is(err, ErrDigest) {
			t.Errorf("delete %q: %v", bad, err)
		}
	}
	// Over the limit: refused, and nothing left behind.
	if _, err := s.Put(ctx, bytes.NewReader(make([]byte, 1<<20+1))); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	left, _ := os.ReadDir(s.Dir)
	for _, e := range left {
		if strings.HasPrefix(e.Name(), ".put-") {
			t.Errorf("temporary file left: %s", e.Name())
		}
	}
	// A cancelled context stops the copy.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Put(cctx, bytes.NewReader(data)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled put: %v", err)
	}
}

// TestFSConcurrentPuts: many writers of the same bytes end with one
// object, readable and whole.
func TestFSConcurrentPuts(t *testing.T) {
	t.Parallel()
	s := &FS{Dir: t.TempDir()}
	data := bytes.Repeat([]byte("x"), 100_000)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Put(context.Background(), bytes.NewReader(data))
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	sum := sha256.Sum256(data)
	rc, err := s.Open(context.Background(), hex.EncodeToString(sum[:]))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes", len(got))
	}
}
