// Package raw keeps the original bytes of ingested documents,
// content-addressed by their SHA-256 (issue 18's raw-content store): the
// same bytes are stored once, a digest names them for good, and a purge
// removes them. FS keeps them under a directory (by default the data
// directory's raw/); an S3-compatible bucket is the other planned backend.
package raw

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Errors, matched with errors.Is.
var (
	ErrNotFound = errors.New("raw: no such content")
	ErrTooLarge = errors.New("raw: content exceeds the size limit")
	ErrDigest   = errors.New("raw: not a SHA-256 digest")
)

// Object describes stored content.
type Object struct {
	SHA256 string // lowercase hex
	Size   int64
	// Existed reports that Put found the same bytes already stored.
	Existed bool
}

// Store keeps content by digest.
type Store interface {
	// Put stores r's bytes (at most the store's limit) and returns their
	// digest; bytes already stored are not written again.
	Put(ctx context.Context, r io.Reader) (Object, error)
	// Open reads stored content; an unknown digest is ErrNotFound.
	Open(ctx context.Context, sha string) (io.ReadCloser, error)
	// Delete removes content; an unknown digest is not an error.
	Delete(ctx context.Context, sha string) error
}

var digestRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// CheckDigest reports whether sha is a lowercase hex SHA-256.
func CheckDigest(sha string) error {
	if !digestRE.MatchString(sha) {
		return fmt.Errorf("%w: %q", ErrDigest, clip(sha))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// DefaultMaxBytes bounds one object (INGEST_MAX_BYTES' default).
const DefaultMaxBytes = 64 << 20

// FS stores content as files under Dir, two levels of directories by the
// digest's first bytes (ab/cd/abcd…), written to a temporary file and
// renamed into place, so a crash never leaves a partial object under its
// name. Files are private to the user (0600, directories 0700).
type FS struct {
	Dir string
	// MaxBytes bounds one object; zero means DefaultMaxBytes.
	MaxBytes int64
}

var _ Store = (*FS)(nil)

func (s *FS) path(sha string) string {
	return filepath.Join(s.Dir, sha[:2], sha[2:4], sha)
}

// Put implements Store.
func (s *FS) Put(ctx context.Context, r io.Reader) (Object, error) {
	limit := s.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return Object{}, fmt.Errorf("raw: %w", err)
	}
	tmp, err := os.CreateTemp(s.Dir, ".put-*")
	if err != nil {
		return Object{}, fmt.Errorf("raw: %w", err)
	}
	defer os.Remove(tmp.Name()) // gone after the rename; removes a failed write
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(ctxReader{ctx, r}, limit+1))
	if err == nil && n > limit {
		err = fmt.Errorf("%w (%d bytes)", ErrTooLarge, limit)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Object{}, err
	}
	obj := Object{SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}
	dst := s.path(obj.SHA256)
	if _, err := os.Stat(dst); err == nil {
		obj.Existed = true
		return obj, nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return Object{}, fmt.Errorf("raw: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return Object{}, fmt.Errorf("raw: %w", err)
	}
	return obj, nil
}

// Open implements Store.
func (s *FS) Open(ctx context.Context, sha string) (io.ReadCloser, error) {
	if err := CheckDigest(sha); err != nil {
		return nil, err
	}
	f, err := os.Open(s.path(sha))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, sha)
	}
	if err != nil {
		return nil, fmt.Errorf("raw: %w", err)
	}
	return f, nil
}

// Delete implements Store.
func (s *FS) Delete(ctx context.Context, sha string) error {
	if err := CheckDigest(sha); err != nil {
		return err
	}
	if err := os.Remove(s.path(sha)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("raw: %w", err)
	}
	return nil
}

// ctxReader stops a long copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Sub returns the part of s that holds one workspace's content, so that a
// workspace's garbage collection and deletion never touch another's bytes
// (the same bytes ingested in two workspaces are two objects): under
// workspaces/<ws>/ of a FS's directory or an S3 store's prefix, beside the
// digest-named shards (two hex digits, so never "workspaces"). ws must be
// a valid workspace name (it starts with a letter or digit and holds no
// '/'). Other Store implementations are refused.
func Sub(s Store, ws string) (Store, error) {
	if ws == "" || strings.ContainsAny(ws, `/\`) || strings.HasPrefix(ws, ".") {
		return nil, fmt.Errorf("raw: workspace %q cannot name a directory", clip(ws))
	}
	switch s := s.(type) {
	case *FS:
		return &FS{Dir: filepath.Join(s.Dir, "workspaces", ws), MaxBytes: s.MaxBytes}, nil
	case *S3:
		c := *s
		c.prefix = s.prefix + "workspaces/" + ws + "/"
		return &c, nil
	}
	return nil, fmt.Errorf("raw: a %T cannot be divided by workspace", s)
}
