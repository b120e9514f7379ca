package syncproto

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"unicode/utf8"
)

// Markers that exclude a directory (with everything below it) from a sync.
var ignoreMarkers = []string{".pgmignore", ".noindex"}

// LocalFile is a Markdown file found by Walk.
type LocalFile struct {
	Path string // relative, forward slashes
	SHA  string
	Size int64
}

// Problem is a file Walk cannot sync.
type Problem struct {
	Path string
	Err  string
}

// WalkError lists the files that cannot be synced (a non-UTF-8 name or
// content, a file that is too large). Nothing should be synced until they
// are fixed or excluded (.pgmignore).
type WalkError struct {
	Problems []Problem
}

func (e *WalkError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d file(s) cannot be synced:", len(e.Problems))
	for i, p := range e.Problems {
		if i == 10 {
			fmt.Fprintf(&b, "\n  … and %d more", len(e.Problems)-10)
			break
		}
		fmt.Fprintf(&b, "\n  %s: %s", p.Path, p.Err)
	}
	return b.String()
}

// Walk finds the Markdown files (*.md) under root, in path order, with
// their SHA-256 digests. It skips directories whose name starts with '.'
// and node_modules, does not follow symbolic links, and skips a directory
// holding a .pgmignore or .noindex file together with everything below it.
// Files with a non-UTF-8 name or content, or larger than MaxFileBytes, are
// reported together in a *WalkError.
func Walk(root string) ([]LocalFile, error) {
	return WalkFS(os.DirFS(root))
}

// WalkFS is Walk over a file system rooted at the synced folder.
func WalkFS(fsys fs.FS) ([]LocalFile, error) {
	var out []LocalFile
	var problems []Problem
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("walk %s: %w", p, err)
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") {
				return fs.SkipDir
			}
			for _, m := range ignoreMarkers {
				if _, err := fs.Stat(fsys, path.Join(p, m)); err == nil {
					return fs.SkipDir
				}
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(strings.ToLower(d.Name()), ".md") {
			return nil
		}
		if !utf8.ValidString(p) {
			problems = append(problems, Problem{Path: strings.ToValidUTF8(p, "\uFFFD"), Err: "the file name is not valid UTF-8"})
			return nil
		}
		if err := CheckPath(p); err != nil {
			problems = append(problems, Problem{Path: p, Err: err.Error()})
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		if info.Size() > MaxFileBytes {
			problems = append(problems, Problem{Path: p, Err: fmt.Sprintf("%d bytes; the maximum is %d", info.Size(), MaxFileBytes)})
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		if !utf8.Valid(b) {
			problems = append(problems, Problem{Path: p, Err: "the content is not valid UTF-8"})
			return nil
		}
		out = append(out, LocalFile{Path: p, SHA: SHA(b), Size: int64(len(b))})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return out, &WalkError{Problems: problems}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Entries returns the manifest entries of files.
func Entries(files []LocalFile) []FileEntry {
	out := make([]FileEntry, len(files))
	for i, f := range files {
		out[i] = FileEntry{Path: f.Path, SHA: f.SHA}
	}
	return out
}

// IsWalkError reports whether err lists unsyncable files.
func IsWalkError(err error) bool {
	var we *WalkError
	return errors.As(err, &we)
}
