package postgram_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyDirection proves the library imports no backend, provider
// or transport package, and no heavyweight driver.
func TestDependencyDirection(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "-json=ImportPath", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	forbidden := []string{
		"github.com/postgram-go/postgram/storage/",
		"github.com/postgram-go/postgram/providers/",
		"github.com/postgram-go/postgram/transport/",
		"github.com/postgram-go/postgram/cmd/",
		"github.com/jackc/",
		"github.com/pgvector/",
		"modernc.org/sqlite",
		"github.com/mark3labs/",
		"github.com/gorilla/",
		"github.com/spf13/",
	}
	n := 0
	for dec.More() {
		var p struct{ ImportPath string }
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		n++
		for _, f := range forbidden {
			if strings.HasPrefix(p.ImportPath, f) {
				t.Errorf("package postgram depends on %s", p.ImportPath)
			}
		}
	}
	if n < 10 {
		t.Fatalf("go list returned only %d packages", n)
	}
}

// TestNoEnvironmentReads proves the library never reads the environment:
// configuration comes only from Config.
func TestNoEnvironmentReads(t *testing.T) {
	t.Parallel()
	pkgs, err := exec.Command("go", "list", "-f", `{{.Dir}}|{{.ImportPath}}|{{join .GoFiles ","}}`, "./...").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(pkgs)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 || strings.Contains(parts[1], "/cmd/") || strings.Contains(parts[1], "/internal/pgtest") {
			continue
		}
		for _, f := range strings.Split(parts[2], ",") {
			if f == "" {
				continue
			}
			src, err := exec.Command("grep", "-nE", `os\.(Getenv|LookupEnv|Environ)\(`, parts[0]+"/"+f).Output()
			if err == nil && len(src) > 0 {
				t.Errorf("%s/%s reads the environment (only cmd/ may):\n%s", parts[1], f, src)
			}
		}
	}
}

// TestNoTestDoubleInProductionBinaries proves the commands people run link
// none of the project's test doubles or test-only packages (postgramtest,
// storagetest, pgtest): the deterministic embedder they offer is
// providers/hashing. (Package testing itself is linked by a dependency,
// github.com/kljensen/snowball/romance, which imports it.)
func TestNoTestDoubleInProductionBinaries(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"./cmd/postgram-server", "./cmd/postgram-mcp", "./cmd/pgm", "./cmd/pgm-admin"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", cmd).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", cmd, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 20 {
			t.Fatalf("go list %s returned only %d packages", cmd, len(deps))
		}
		for _, p := range deps {
			switch {
			case strings.HasPrefix(p, "github.com/postgram-go/postgram/postgramtest"),
				strings.HasPrefix(p, "github.com/postgram-go/postgram/storage/storagetest"),
				strings.HasPrefix(p, "github.com/postgram-go/postgram/internal/pgtest"):
				t.Errorf("%s links the test package %s", cmd, p)
			}
		}
	}
}
