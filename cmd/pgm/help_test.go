package main

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/postgram-go/postgram/transport/apierror"
)

func TestHelpListsExitCodes(t *testing.T) {
	t.Parallel()
	r := runPGM(t, nil, "", "--help")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, exitCodeHelp()) {
		t.Fatalf("help lacks the exit-code table:\n%s", r.stdout)
	}
	for _, s := range []string{"PGM_API_URL", "PGM_API_KEY", "~/.pgmrc", "--json", "--toon", "--full-response", "--timeout",
		"store", "recall", "search", "list", "update", "delete", "queue", "completion"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("help lacks %q", s)
		}
	}
}

// The package documentation carries the same exit-code table as the help.
func TestDocCommentListsExitCodes(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	for _, line := range exitCodeLines() {
		if !strings.Contains(doc, "\t"+line+"\n") {
			t.Errorf("the doc comment of main.go lacks the exit-code line\n\t%s", line)
		}
	}
}

// Every exit status of apierror's table has a description, and the table
// names every code.
func TestExitTableCoversCodes(t *testing.T) {
	t.Parallel()
	help := exitCodeHelp()
	for _, c := range apierror.Codes() {
		if _, ok := exitMeaning[c.ExitCode()]; !ok {
			t.Errorf("exit status %d (%s) has no description", c.ExitCode(), c)
		}
		if !strings.Contains(help, string(c)) {
			t.Errorf("the exit-code help does not name %s", c)
		}
	}
	for _, code := range []int{apierror.ExitOK, apierror.ExitInternal, apierror.ExitUsage, apierror.ExitUnreachable, exitInterrupted} {
		if _, ok := exitMeaning[code]; !ok {
			t.Errorf("exit status %d has no description", code)
		}
	}
}

func TestCommandHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"store", "recall", "search", "list", "update", "delete", "queue", "completion"} {
		r := runPGM(t, nil, "", cmd, "--help")
		if r.code != 0 || !strings.Contains(r.stdout, "pgm "+cmd) {
			t.Errorf("%s --help: exit %d\n%s%s", cmd, r.code, r.stdout, r.stderr)
		}
	}
	r := runPGM(t, nil, "", "--version")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "pgm version ") {
		t.Errorf("--version: exit %d %q", r.code, r.stdout)
	}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		r := runPGM(t, nil, "", "completion", shell)
		if r.code != 0 || len(r.stdout) < 100 || !strings.Contains(r.stdout, "pgm") {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", shell, r.code, len(r.stdout), r.stderr)
		}
	}
	// Enum flags complete their values.
	r := runPGM(t, nil, "", "__complete", "store", "--type", "")
	if r.code != 0 || !strings.Contains(r.stdout, "memory\n") || !strings.Contains(r.stdout, "document\n") {
		t.Errorf("__complete store --type: exit %d\n%s", r.code, r.stdout)
	}
	r = runPGM(t, nil, "", "__complete", "search", "q", "--memory-role", "")
	if r.code != 0 || !strings.Contains(r.stdout, "session_context\n") {
		t.Errorf("__complete search --memory-role: exit %d\n%s", r.code, r.stdout)
	}
}
