package rest_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/rest"
)

// TestResponseBounds: a page whose contents exceed the library's budget
// is refused with VALIDATION on limit saying how many fit; with the
// library's budget off, the transport's own cap refuses the encoded body.
func TestResponseBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for i := range 4 {
		e.store(e.admin, map[string]any{"type": "document", "content": fmt.Sprintf("doc %d ", i) + strings.Repeat("y", 600_000)})
	}
	bounded, err := postgram.New(context.Background(), postgram.Config{Store: e.pg, MaxResultBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(rest.New(rest.Config{Client: bounded}))
	t.Cleanup(hs.Close)
	be := &env{t: t, http: hs}
	body := be.do("GET", "/api/entities?limit=4", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "limit", "only the first 1 items fit")
	if !strings.Contains(body.Message, "page with offset") {
		t.Errorf("message: %q", body.Message)
	}
	be.do("GET", "/api/entities?limit=1&offset=3", e.admin, nil).want(http.StatusOK)

	unbounded, err := postgram.New(context.Background(), postgram.Config{Store: e.pg, MaxResultBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs2 := httptest.NewServer(rest.New(rest.Config{Client: unbounded, MaxResponseBytes: 1 << 20}))
	t.Cleanup(hs2.Close)
	ue := &env{t: t, http: hs2}
	ue.do("GET", "/api/entities?limit=4", e.admin, nil).wantError(http.StatusBadRequest, apierror.Validation, "", "request fewer items")
	ue.do("GET", "/api/entities?limit=1", e.admin, nil).want(http.StatusOK)
}

// TestWriteDeadline: a client that stops reading a large response is cut
// off after the deadline; a handler that computes longer than the
// deadline before writing, and a streamed response that flushes within
// it, are not.
func TestWriteDeadline(t *testing.T) {
	t.Parallel()
	const d = 300 * time.Millisecond
	writeErr := make(chan error, 1)
	mux := http.NewServeMux()
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		chunk := []byte(strings.Repeat("z", 1<<20))
		for range 512 { // 512 MiB: far more than socket buffers hold
			if _, err := w.Write(chunk); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(3 * d)
		w.Write([]byte("done"))
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, _ *http.Request) {
		for i := range 8 {
			fmt.Fprintf(w, "event %d\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(d / 2)
		}
	})
	hs := httptest.NewServer(rest.WriteDeadline(d)(mux))
	t.Cleanup(hs.Close)

	// A client that sends a request and never reads.
	conn, err := net.Dial("tcp", hs.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
	select {
	case err := <-writeErr:
		if err == nil || !strings.Contains(err.Error(), "timeout") {
			t.Fatalf("the handler's write should fail with a timeout, got %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the write to a client that does not read never failed")
	}

	resp, err := http.Get(hs.URL + "/slow")
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 4)
	n, _ := resp.Body.Read(b)
	resp.Body.Close()
	if string(b[:n]) != "done" {
		t.Fatalf("slow handler: %q", b[:n])
	}

	resp, err = http.Get(hs.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		lines++
	}
	if lines != 8 {
		t.Fatalf("streamed %d events of 8 (%v)", lines, sc.Err())
	}
}
