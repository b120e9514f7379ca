// Package e2e runs the real binaries (postgram-server, pgm, pgm-admin)
// against a real PostgreSQL and drives them over HTTP, MCP and the CLI.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/pgtest"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/postgres"
)

var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "postgram-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	for _, name := range []string{"postgram-server", "pgm", "pgm-admin"} {
		cmd := exec.Command("go", "build", "-race", "-o", filepath.Join(dir, name), "../cmd/"+name)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", name, err)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// embedDims is the deterministic embedder's dimension in these tests.
const embedDims = 64

// server is a running postgram-server process.
type server struct {
	URL string
	DSN string
	// KeyFile is where the server writes the bootstrap admin key (its
	// stderr is not a terminal).
	KeyFile string
	cmd     *exec.Cmd
	stderr  *lockedBuffer
	done    chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startServer runs postgram-server on a free loopback port against dsn.
func startServer(t *testing.T, dsn string, extraEnv ...string) *server {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, "postgram-server"))
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn, "PORT=0", "EMBEDDING_PROVIDER=deterministic",
		fmt.Sprintf("EMBEDDING_DIMENSIONS=%d", embedDims), "LOG_LEVEL=info")
	keyFile := ""
	for _, kv := range extraEnv {
		if dir, ok := strings.CutPrefix(kv, "POSTGRAM_DATA_DIR="); ok {
			keyFile = filepath.Join(dir, "bootstrap-admin.key") // the default place
		}
	}
	if keyFile == "" {
		keyFile = filepath.Join(t.TempDir(), "bootstrap-admin.key")
		cmd.Env = append(cmd.Env, "BOOTSTRAP_KEY_FILE="+keyFile)
	}
	cmd.Env = append(cmd.Env, extraEnv...)
	pr, pw := io.Pipe()
	buf := &lockedBuffer{}
	cmd.Stderr = io.MultiWriter(pw, buf)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{DSN: dsn, KeyFile: keyFile, cmd: cmd, stderr: buf, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait(); pw.Close() }()
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "postgram-server listening" {
				addr <- line.Addr
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case a := <-addr:
		s.URL = "http://" + a
	case err := <-s.done:
		t.Fatalf("postgram-server exited: %v\n%s", err, buf.String())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("postgram-server did not start in 60s:\n%s", buf.String())
	}
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop(t *testing.T) {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("postgram-server exited with %v after SIGTERM:\n%s", err, s.stderr.String())
		}
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		t.Errorf("postgram-server did not stop within 30s of SIGTERM")
	}
}

// adminClient opens the same store directly (as pgm-admin does) to make
// keys and inspect state.
func adminClient(t *testing.T, dsn string) *postgram.Client {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, postgres.Config{URL: dsn})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: postgramtest.NewEmbedder(embedDims)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newKey(t *testing.T, c *postgram.Client, spec postgram.KeySpec) (string, *postgram.APIKey) {
	t.Helper()
	token, k, err := postgramtest.Admin(t, c).CreateKey(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return token, k
}

// freshDSN returns a DSN of an empty schema.
func freshDSN(t *testing.T) string { return pgtest.Schema(t) }

// runCLI runs a binary with env and returns stdout, stderr and exit code.
func runCLI(t *testing.T, name string, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, name), args...)
	cmd.Env = append([]string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out.String(), errb.String(), code
}
