package syncproto

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

func TestCheckPath(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"a.md", "dir/sub/Note One.md", "ünïcode/日本.MD", "a..b.md"} {
		if err := CheckPath(p); err != nil {
			t.Errorf("CheckPath(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"", "../a.md", "a/../../b.md", "./a.md", "/abs.md", "C:/x.md", `a\b.md`, "a//b.md", "a.txt",
		"caf\xe9.md", "a\x00.md", "tab\t.md", strings.Repeat("a", MaxPathBytes) + ".md"} {
		if err := CheckPath(p); err == nil {
			t.Errorf("CheckPath(%q) accepted", p)
		}
	}
}

func TestTitle(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"# Hello\nbody":                  "Hello",
		"intro\n## Sub\n# Main #\n":      "Main",
		"```\n# code\n```\n# After":      "After",
		"    # indented code\n#Nospace":  "",
		"#\n# \n#  Spaced  \n":           "Spaced",
		"~~~md\n# in\n~~~\n# C# rocks\n": "C# rocks",
		"# Trailing ###":                 "Trailing",
		"no heading":                     "",
	} {
		if got := Title(in); got != want {
			t.Errorf("Title(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBatch(t *testing.T) {
	t.Parallel()
	var files []UploadFile
	for i := 0; i < 120; i++ {
		files = append(files, UploadFile{Path: "x.md", Content: strings.Repeat("a", 1000)})
	}
	got := Batch(files, 0, 0)
	if len(got) != 3 || len(got[0]) != 50 || len(got[2]) != 20 {
		t.Fatalf("batches %d", len(got))
	}
	big := []UploadFile{{Content: strings.Repeat("b", 3<<20)}, {Content: strings.Repeat("c", 2<<20)}, {Content: "d"}}
	got = Batch(big, 0, 0)
	if len(got) != 2 || len(got[0]) != 1 || len(got[1]) != 2 {
		t.Fatalf("byte-bounded batches: %d", len(got))
	}
}

func TestWalk(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"a.md":                {Data: []byte("# A")},
		"sub/b.md":            {Data: []byte("# B")},
		"sub/c.txt":           {Data: []byte("c")},
		".hidden/d.md":        {Data: []byte("d")},
		"node_modules/e.md":   {Data: []byte("e")},
		"skip/.pgmignore":     {Data: nil},
		"skip/f.md":           {Data: []byte("f")},
		"skip/deeper/g.md":    {Data: []byte("g")},
		"noidx/.noindex":      {Data: nil},
		"noidx/h.md":          {Data: []byte("h")},
		"keep/inner/.noindex": {Data: nil},
		"keep/i.md":           {Data: []byte("i")},
		"keep/inner/j.md":     {Data: []byte("j")},
	}
	files, err := WalkFS(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	if d := cmp.Diff([]string{"a.md", "keep/i.md", "sub/b.md"}, got); d != "" {
		t.Fatalf("walk (-want +got):\n%s", d)
	}
	if files[0].SHA != SHA([]byte("# A")) || files[0].Size != 3 {
		t.Fatalf("a.md: %+v", files[0])
	}
}

func TestWalkProblems(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ok.md", []byte("# fine"))
	write("caf\xe9.md", []byte("latin-1 name"))
	write("bin.md", []byte{0xff, 0xfe, 0x00})
	_, err := Walk(dir)
	if !IsWalkError(err) {
		t.Fatalf("Walk = %v, want a *WalkError", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "2 file(s)") || !strings.Contains(msg, "bin.md: the content is not valid UTF-8") ||
		!strings.Contains(msg, "caf\uFFFD.md: the file name is not valid UTF-8") {
		t.Fatalf("walk error: %s", msg)
	}
}

func TestManifestRoundTrip(t *testing.T) {
	t.Parallel()
	in := []FileEntry{{Path: "a.md", SHA: SHA([]byte("a"))}, {Path: "dir/b c.md", SHA: SHA([]byte("b"))}}
	var buf bytes.Buffer
	if err := WriteManifest(&buf, in); err != nil {
		t.Fatal(err)
	}
	out, err := ParseManifest(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(in, out); d != "" {
		t.Fatal(d)
	}
	for _, bad := range []string{
		"zz  a.md\n",
		SHA(nil) + " a.md\n",
		SHA(nil) + "  ../a.md\n",
		SHA(nil) + "  a.md\n" + SHA(nil) + "  a.md\n",
	} {
		if _, err := ParseManifest(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "manifest line") {
			t.Errorf("ParseManifest(%q) = %v", bad, err)
		}
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add(SHA(nil) + "  a.md\n" + SHA([]byte("x")) + "  *dir/b.md\r\n\n")
	f.Add("garbage")
	f.Add(SHA(nil) + "  ../../etc/passwd.md")
	f.Fuzz(func(t *testing.T, s string) {
		entries, err := ParseManifest(strings.NewReader(s))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, e := range entries {
			if CheckPath(e.Path) != nil || CheckSHA(e.SHA) != nil || seen[e.Path] {
				t.Fatalf("accepted a bad entry %+v", e)
			}
			seen[e.Path] = true
		}
		var buf bytes.Buffer
		if err := WriteManifest(&buf, entries); err != nil {
			t.Fatal(err)
		}
		again, err := ParseManifest(&buf)
		if err != nil || !cmp.Equal(entries, again, cmp.Comparer(func(a, b []FileEntry) bool { return len(a) == len(b) && (len(a) == 0 || cmp.Equal(a, b)) })) {
			t.Fatalf("round trip: %v %v %v", entries, again, err)
		}
	})
}
