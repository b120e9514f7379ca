package raw

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// s3Server speaks the S3 wire format minio-go uses for objects (path-style
// HEAD, GET, PUT, DELETE, with aws-chunked bodies), keeping them in memory.
type s3Server struct {
	mu   sync.Mutex
	objs map[string][]byte
	puts int
}

func (s *s3Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDTEST/") {
		http.Error(w, "unsigned request", http.StatusForbidden)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := r.URL.Path
	notFound := func() {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		if r.Method != http.MethodHead {
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>%s</Key></Error>`, key)
		}
	}
	headers := func(b []byte) {
		sum := md5.Sum(b)
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Type", "application/octet-stream")
	}
	switch r.Method {
	case http.MethodHead, http.MethodGet:
		b, ok := s.objs[key]
		if !ok {
			notFound()
			return
		}
		headers(b)
		if r.Method == http.MethodGet {
			_, _ = w.Write(b)
		}
	case http.MethodPut:
		body, err := readBody(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.objs[key] = body
		s.puts++
		sum := md5.Sum(body)
		w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:])+`"`)
	case http.MethodDelete:
		delete(s.objs, key)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, "not implemented", http.StatusNotImplemented)
	}
}

// readBody decodes an aws-chunked body (signed or unsigned, with
// trailers) or returns a plain one.
func readBody(r *http.Request) ([]byte, error) {
	sha := r.Header.Get("X-Amz-Content-Sha256")
	if !strings.HasPrefix(sha, "STREAMING-") {
		return io.ReadAll(r.Body)
	}
	br := bufio.NewReader(r.Body)
	var out bytes.Buffer
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.ParseInt(strings.TrimSpace(strings.SplitN(line, ";", 2)[0]), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("chunk header %q: %v", line, err)
		}
		if size == 0 {
			return out.Bytes(), nil // trailers, if any, follow: ignored
		}
		if _, err := io.CopyN(&out, br, size); err != nil {
			return nil, err
		}
		if _, err := br.ReadString('\n'); err != nil {
			return nil, err
		}
	}
}

func TestS3(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := &s3Server{objs: map[string][]byte{}}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	st, err := Open("s3://AKIDTEST:s3cr3t@"+host+"/notes/raw?secure=false&region=us-east-1", "", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("original bytes "), 1000)
	obj, err := st.Put(ctx, bytes.NewReader(data))
	if err != nil || obj.Size != int64(len(data)) || obj.Existed {
		t.Fatalf("put: %+v %v", obj, err)
	}
	key := "/notes/raw/" + obj.SHA256[:2] + "/" + obj.SHA256[2:4] + "/" + obj.SHA256
	if !bytes.Equal(fake.objs[key], data) {
		t.Fatalf("the bucket holds %d bytes under %s (keys %v)", len(fake.objs[key]), key, len(fake.objs))
	}
	again, err := st.Put(ctx, bytes.NewReader(data))
	if err != nil || !again.Existed || fake.puts != 1 {
		t.Fatalf("same bytes again: %+v %v (puts %d)", again, err, fake.puts)
	}
	rc, err := st.Open(ctx, obj.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes: %v", len(got), err)
	}
	if err := st.Delete(ctx, obj.SHA256); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Open(ctx, obj.SHA256); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if _, err := st.Put(ctx, bytes.NewReader(make([]byte, 1<<20+1))); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("too large: %v", err)
	}
	if _, err := st.Open(ctx, "../x"); !errors.Is(err, ErrDigest) {
		t.Fatalf("bad digest: %v", err)
	}
}

func TestOpenURLs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url  string
		want string // "fs:DIR", "s3", or an error part
	}{
		{"", "fs:/data/raw"}, {"/srv/raw", "fs:/srv/raw"}, {"file:///srv/raw", "fs:/srv/raw"},
		{"s3://k:s@minio.local:9000/bucket", "s3"}, {"s3://k:s@minio.local:9000/", "bucket is missing"},
		{"gs://bucket", "unsupported scheme"}, {"s3://k:s@h/b?secure=maybe", "secure="},
	} {
		st, err := Open(c.url, "/data", 0)
		switch {
		case strings.HasPrefix(c.want, "fs:"):
			fs, ok := st.(*FS)
			if err != nil || !ok || fs.Dir != strings.TrimPrefix(c.want, "fs:") {
				t.Errorf("%q: %#v %v", c.url, st, err)
			}
		case c.want == "s3":
			if _, ok := st.(*S3); err != nil || !ok {
				t.Errorf("%q: %#v %v", c.url, st, err)
			}
		default:
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), ":s@") {
				t.Errorf("%q: %v, want an error about %q (without the secret)", c.url, err, c.want)
			}
		}
	}
}
