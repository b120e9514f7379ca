package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves srv as newline-delimited JSON-RPC, reading requests
// from in and writing responses to out, until in reaches EOF (it returns
// nil) or ctx ends (nil too: a requested shutdown is not an error).
//
// At EOF every request already read is answered before ServeStdio returns:
// a host that writes its calls and closes its end of the pipe gets all the
// answers (mcp-go alone cancels the calls still queued or running when its
// input ends). When ctx ends, calls in flight are cancelled instead.
//
// Stdio has no authentication: tools act as Config.Client, so whoever can
// start the process and write to in has that client's access. It is meant
// for a local desktop agent host (postgram-mcp on stdin/stdout).
//
// mcp-go keeps a single stdio session per process, so run at most one
// ServeStdio at a time. Transport errors are logged through slog.Default.
func ServeStdio(ctx context.Context, srv *server.MCPServer, in io.Reader, out io.Writer) error {
	s := server.NewStdioServer(srv)
	s.SetErrorLogger(slog.NewLogLogger(slog.Default().Handler(), slog.LevelError))
	calls := &inflight{pending: map[string]bool{}, changed: make(chan struct{})}
	err := s.Listen(ctx, &drainReader{ctx: ctx, r: bufio.NewReaderSize(in, 64<<10), calls: calls},
		&answerWriter{w: out, calls: calls})
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// inflight tracks the requests read from the input that have not been
// answered yet, by JSON-RPC id.
type inflight struct {
	mu      sync.Mutex
	pending map[string]bool
	changed chan struct{} // closed and replaced whenever pending shrinks
}

// message is the part of a JSON-RPC message inflight looks at.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// idKey normalises a JSON-RPC id (1 and 1.0 are the same request), or
// returns "" for a missing or null one.
func idKey(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return ""
	}
	return fmt.Sprintf("%T:%v", v, v)
}

// read notes a line read from the input: a request (method and id) is
// pending until answered; a cancellation ends the wait for its request
// (the server need not answer it).
func (f *inflight) read(line []byte) {
	var m message
	if json.Unmarshal(line, &m) != nil || m.Method == "" {
		return
	}
	if m.Method == "notifications/cancelled" {
		f.done(idKey(m.Params.RequestID))
		return
	}
	if id := idKey(m.ID); id != "" {
		f.mu.Lock()
		f.pending[id] = true
		f.mu.Unlock()
	}
}

// wrote notes a line written to the output: a response (an id, no method)
// answers its request, whether or not the write succeeded.
func (f *inflight) wrote(line []byte) {
	var m message
	if json.Unmarshal(line, &m) != nil || m.Method != "" {
		return
	}
	f.done(idKey(m.ID))
}

func (f *inflight) done(id string) {
	if id == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pending[id] {
		delete(f.pending, id)
		close(f.changed)
		f.changed = make(chan struct{})
	}
}

// wait blocks until every pending request is answered or ctx ends.
func (f *inflight) wait(ctx context.Context) {
	for {
		f.mu.Lock()
		n, changed := len(f.pending), f.changed
		f.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// drainReader hands the input to mcp-go line by line, noting each request,
// and reports EOF only once every request read has been answered.
type drainReader struct {
	ctx   context.Context
	r     *bufio.Reader
	calls *inflight
	line  []byte // the rest of the current line
	err   error  // the input's error, reported after the line
}

func (d *drainReader) Read(p []byte) (int, error) {
	if len(d.line) == 0 {
		if d.err != nil {
			return 0, d.finish()
		}
		line, err := d.r.ReadBytes('\n')
		d.err = err
		if len(line) == 0 {
			return 0, d.finish()
		}
		d.calls.read(line)
		d.line = line
	}
	n := copy(p, d.line)
	d.line = d.line[n:]
	return n, nil
}

// finish returns the input's error, first waiting at EOF for the answers.
func (d *drainReader) finish() error {
	if errors.Is(d.err, io.EOF) {
		d.calls.wait(d.ctx)
	}
	return d.err
}

// answerWriter passes mcp-go's output through, noting each response.
type answerWriter struct {
	mu    sync.Mutex
	w     io.Writer
	calls *inflight
	buf   []byte // a line not yet complete
}

func (a *answerWriter) Write(p []byte) (int, error) {
	a.mu.Lock()
	n, err := a.w.Write(p)
	a.buf = append(a.buf, p...)
	var lines [][]byte
	for {
		i := bytes.IndexByte(a.buf, '\n')
		if i < 0 {
			break
		}
		lines = append(lines, bytes.Clone(a.buf[:i]))
		a.buf = a.buf[i+1:]
	}
	if len(a.buf) == 0 {
		a.buf = nil
	}
	a.mu.Unlock()
	for _, l := range lines {
		a.calls.wrote(l)
	}
	return n, err
}
