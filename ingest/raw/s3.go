package raw

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// S3 stores content as objects of an S3-compatible bucket (AWS S3, MinIO,
// Garage, R2…), keyed "<prefix>ab/cd/<sha256>". Put spools the bytes to a
// temporary file first: the key is their digest, known only at the end.
type S3 struct {
	client *minio.Client
	bucket string
	prefix string
	// MaxBytes bounds one object; zero means DefaultMaxBytes.
	MaxBytes int64
	// TempDir holds Put's spool files ("" is the system's).
	TempDir string
}

var _ Store = (*S3)(nil)

// NewS3 reads a RAW_STORE_URL of the form
// s3://ACCESS_KEY:SECRET@HOST[:PORT]/BUCKET[/PREFIX][?secure=false&region=R]
// (secure defaults to true, path-style addressing).
func NewS3(raw string) (*S3, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return nil, errors.New("RAW_STORE_URL: expected s3://ACCESS_KEY:SECRET@HOST[:PORT]/BUCKET[/PREFIX]")
	}
	bucket, prefix, _ := strings.Cut(strings.TrimPrefix(u.Path, "/"), "/")
	if bucket == "" {
		return nil, errors.New("RAW_STORE_URL: the bucket is missing (s3://…@HOST/BUCKET)")
	}
	if prefix != "" && !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	q := u.Query()
	secure := true
	if v := q.Get("secure"); v != "" {
		if secure, err = strconv.ParseBool(v); err != nil {
			return nil, fmt.Errorf("RAW_STORE_URL: secure=%q must be true or false", v)
		}
	}
	var access, secret string
	if u.User != nil {
		access = u.User.Username()
		secret, _ = u.User.Password()
	}
	c, err := minio.New(u.Host, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Secure: secure,
		Region: q.Get("region"), BucketLookup: minio.BucketLookupPath})
	if err != nil {
		return nil, fmt.Errorf("RAW_STORE_URL: %v", err) // never echoes the secret: minio's errors name the endpoint
	}
	return &S3{client: c, bucket: bucket, prefix: prefix}, nil
}

func (s *S3) key(sha string) string { return s.prefix + sha[:2] + "/" + sha[2:4] + "/" + sha }

// Put implements Store.
func (s *S3) Put(ctx context.Context, r io.Reader) (Object, error) {
	limit := s.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	tmp, err := os.CreateTemp(s.TempDir, "postgram-raw-*")
	if err != nil {
		return Object{}, fmt.Errorf("raw: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(ctxReader{ctx, r}, limit+1))
	if err != nil {
		return Object{}, err
	}
	if n > limit {
		return Object{}, fmt.Errorf("%w (%d bytes)", ErrTooLarge, limit)
	}
	obj := Object{SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}
	if _, err := s.client.StatObject(ctx, s.bucket, s.key(obj.SHA256), minio.StatObjectOptions{}); err == nil {
		obj.Existed = true
		return obj, nil
	} else if minio.ToErrorResponse(err).Code != "NoSuchKey" {
		return Object{}, fmt.Errorf("raw: stat %s: %w", obj.SHA256, err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return Object{}, fmt.Errorf("raw: %w", err)
	}
	if _, err := s.client.PutObject(ctx, s.bucket, s.key(obj.SHA256), tmp, n,
		minio.PutObjectOptions{ContentType: "application/octet-stream"}); err != nil {
		return Object{}, fmt.Errorf("raw: put %s: %w", obj.SHA256, err)
	}
	return obj, nil
}

// Open implements Store.
func (s *S3) Open(ctx context.Context, sha string) (io.ReadCloser, error) {
	if err := CheckDigest(sha); err != nil {
		return nil, err
	}
	if _, err := s.client.StatObject(ctx, s.bucket, s.key(sha), minio.StatObjectOptions{}); err != nil {
		if minio.ToErrorResponse(err).Code == "NoSuchKey" {
			return nil, fmt.Errorf("%w: %s", ErrNotFound, sha)
		}
		return nil, fmt.Errorf("raw: stat %s: %w", sha, err)
	}
	o, err := s.client.GetObject(ctx, s.bucket, s.key(sha), minio.GetObjectOptions{})
	if err != nil {
		return nil, fmt.Errorf("raw: get %s: %w", sha, err)
	}
	return o, nil
}

// Delete implements Store.
func (s *S3) Delete(ctx context.Context, sha string) error {
	if err := CheckDigest(sha); err != nil {
		return err
	}
	if err := s.client.RemoveObject(ctx, s.bucket, s.key(sha), minio.RemoveObjectOptions{}); err != nil &&
		minio.ToErrorResponse(err).Code != "NoSuchKey" {
		return fmt.Errorf("raw: delete %s: %w", sha, err)
	}
	return nil
}

// Open returns the store a RAW_STORE_URL names: s3://… (S3), file:///DIR
// or a plain directory path (FS); "" is dataDir/raw.
func Open(rawURL, dataDir string, maxBytes int64) (Store, error) {
	switch {
	case rawURL == "":
		return &FS{Dir: filepath.Join(dataDir, "raw"), MaxBytes: maxBytes}, nil
	case strings.HasPrefix(rawURL, "s3://"):
		s, err := NewS3(rawURL)
		if err != nil {
			return nil, err
		}
		s.MaxBytes = maxBytes
		return s, nil
	case strings.HasPrefix(rawURL, "file://"):
		u, err := url.Parse(rawURL)
		if err != nil || u.Path == "" {
			return nil, errors.New("RAW_STORE_URL: expected file:///ABSOLUTE/DIR")
		}
		return &FS{Dir: u.Path, MaxBytes: maxBytes}, nil
	case strings.Contains(rawURL, "://"):
		return nil, fmt.Errorf("RAW_STORE_URL: unsupported scheme in %q (s3:// or file://)", strings.SplitN(rawURL, "://", 2)[0]+"://")
	}
	return &FS{Dir: rawURL, MaxBytes: maxBytes}, nil
}
