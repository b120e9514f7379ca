package syncproto

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// The manifest file format is sha256sum's: one line per file, the digest,
// two spaces and the path ("<64 hex>  notes/a.md"), paths unique, in any
// order. `sha256sum $(find . -name '*.md')` output (without the leading
// "./") is a valid manifest.

// WriteManifest writes entries in the manifest format.
func WriteManifest(w io.Writer, entries []FileEntry) error {
	bw := bufio.NewWriter(w)
	for _, e := range entries {
		if _, err := fmt.Fprintf(bw, "%s  %s\n", e.SHA, e.Path); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// ParseManifest reads a manifest, checking every digest and path; an error
// names the line.
func ParseManifest(r io.Reader) ([]FileEntry, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), MaxPathBytes+128)
	var out []FileEntry
	seen := map[string]int{}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if text == "" {
			continue
		}
		sha, p, ok := strings.Cut(text, "  ")
		if !ok {
			return nil, fmt.Errorf("manifest line %d: want \"<sha256>  <path>\"", line)
		}
		p = strings.TrimPrefix(p, "*") // sha256sum's binary marker
		if err := CheckSHA(sha); err != nil {
			return nil, fmt.Errorf("manifest line %d: %w", line, err)
		}
		if err := CheckPath(p); err != nil {
			return nil, fmt.Errorf("manifest line %d: %w", line, err)
		}
		if prev, dup := seen[p]; dup {
			return nil, fmt.Errorf("manifest line %d: path %q already listed on line %d", line, p, prev)
		}
		if len(out) >= MaxManifestFiles {
			return nil, fmt.Errorf("manifest line %d: more than %d files", line, MaxManifestFiles)
		}
		seen[p] = line
		out = append(out, FileEntry{Path: p, SHA: sha})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("manifest line %d: %w", line+1, err)
	}
	return out, nil
}
