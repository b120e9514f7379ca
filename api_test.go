package postgram_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"strings"
	"testing"
)

// maxRootEntries bounds the root package's API as `go doc -short` lists
// it: the user API, with the backend seam in package driver and the LLM
// tasks in package llm.
const maxRootEntries = 120

// TestRootAPISize counts the root package's documented entries the way
// `go doc -short` prints them (a type, a function, a const or var group,
// and the constructors and typed constants listed under a type) and
// fails when they exceed maxRootEntries.
func TestRootAPISize(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	files := []*ast.File{}
	for _, f := range pkgs["postgram"].Files {
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/postgram-go/postgram")
	if err != nil {
		t.Fatal(err)
	}
	entries := len(p.Consts) + len(p.Vars) + len(p.Funcs) + len(p.Types)
	names := 0 // exported types, functions and variables, one by one
	consts := 0
	for _, v := range p.Vars {
		names += len(v.Names)
	}
	for _, c := range p.Consts {
		consts += len(c.Names)
	}
	names += len(p.Funcs) + len(p.Types)
	for _, ty := range p.Types {
		entries += len(ty.Consts) + len(ty.Vars) + len(ty.Funcs)
		names += len(ty.Funcs)
		for _, v := range ty.Vars {
			names += len(v.Names)
		}
		for _, c := range ty.Consts {
			consts += len(c.Names)
		}
	}
	t.Logf("root package: %d go doc entries; %d exported types, functions and variables; %d constants", entries, names, consts)
	if entries > maxRootEntries {
		t.Errorf("the root package lists %d entries in go doc; keep it at most %d (backend-only types belong in package driver)", entries, maxRootEntries)
	}
	if names > maxRootEntries {
		t.Errorf("the root package exports %d types, functions and variables; keep it at most %d", names, maxRootEntries)
	}
}

// TestBackendsImportOnlyDriver proves the backends' production code sees
// the library only through package driver (their tests may drive the
// whole library).
func TestBackendsImportOnlyDriver(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{"./storage/sqlite", "./storage/postgres", "./driver", "./llm"} {
		out, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, imp := range strings.Fields(string(out)) {
			if imp == "github.com/postgram-go/postgram" {
				t.Errorf("%s imports the root package; use package driver", pkg)
			}
		}
	}
}
