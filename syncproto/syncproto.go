// Package syncproto is the Markdown folder sync protocol shared by the
// server (the postgram library) and its clients (pgm sync): the wire
// types, the path and digest rules, the SHA-256 manifest, the folder
// walker and the client side of the three-phase protocol
//
//	diff (send the manifest, learn what to upload)
//	→ upload (batches of at most 50 files or 4 MiB, each one transaction)
//	→ finalize (send the manifest again: the server archives what left
//	  the folder and restores what came back).
//
// A file is identified by its path relative to the synced folder, with
// forward slashes; its digest is the lower-case hex SHA-256 of its bytes.
// The package has no dependency beyond the standard library.
package syncproto

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Batch limits of the upload phase.
const (
	MaxBatchFiles = 50
	MaxBatchBytes = 4 << 20
	// MaxPathBytes bounds a file path.
	MaxPathBytes = 1024
	// MaxFileBytes bounds one file (the library's content limit).
	MaxFileBytes = 1 << 20
	// MaxManifestFiles bounds a manifest.
	MaxManifestFiles = 200_000
)

// FileEntry is one manifest entry.
type FileEntry struct {
	Path string `json:"path"`
	SHA  string `json:"sha"`
}

// UploadFile is a file with its content.
type UploadFile struct {
	Path    string `json:"path"`
	SHA     string `json:"sha"`
	Content string `json:"content"`
}

// DiffRequest is the body of POST /api/sync/diff.
type DiffRequest struct {
	Repo  string      `json:"repo"`
	Files []FileEntry `json:"files"`
}

// Reasons a file must be uploaded.
const (
	ReasonNew     = "new"
	ReasonChanged = "changed"
)

// DiffItem is a file the server needs.
type DiffItem struct {
	Path   string `json:"path"`
	SHA    string `json:"sha"`
	Reason string `json:"reason"` // new or changed
}

// DiffResponse says what to upload and what finalize will archive.
type DiffResponse struct {
	ToUpload  []DiffItem `json:"to_upload"`
	Unchanged int        `json:"unchanged"`
	// ToDelete lists synced paths missing from the manifest.
	ToDelete []string `json:"to_delete"`
	// ToRestore lists paths whose archived document finalize will restore.
	ToRestore []string `json:"to_restore"`
}

// UploadRequest is the body of POST /api/sync/upload.
type UploadRequest struct {
	Repo  string       `json:"repo"`
	Files []UploadFile `json:"files"`
}

// UploadResponse counts what an upload batch did.
type UploadResponse struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	// Errors lists the files of the batch the server refused for their
	// size (larger than MaxFileBytes): the other files are stored, and finalize counts the
	// refused ones as missing. Absent when every file was accepted.
	Errors []FileError `json:"errors,omitempty"`
}

// FileError is a file of an upload batch that was not stored.
type FileError struct {
	Path    string `json:"path"`
	Field   string `json:"field"` // files[3].content
	Code    string `json:"code"`  // VALIDATION
	Message string `json:"message"`
}

// FinalizeRequest is the body of POST /api/sync/finalize.
type FinalizeRequest struct {
	Repo  string      `json:"repo"`
	Files []FileEntry `json:"files"`
}

// FinalizeResponse counts what finalize did.
type FinalizeResponse struct {
	Deleted  int `json:"deleted"`
	Restored int `json:"restored"`
	// Missing counts manifest entries the server has no upload for.
	Missing int `json:"missing"`
}

// PushRequest is the body of POST /api/sync (single shot).
type PushRequest struct {
	Repo  string       `json:"repo"`
	Files []UploadFile `json:"files"`
}

// PushResponse counts what a single-shot push did.
type PushResponse struct {
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	Deleted   int `json:"deleted"`
	Restored  int `json:"restored"`
}

// FileStatus is the server's state of one file.
type FileStatus struct {
	Path       string `json:"path"`
	SHA        string `json:"sha"`
	SyncStatus string `json:"sync_status"` // synced or deleted
	LastSynced string `json:"last_synced"`
	EntityID   string `json:"entity_id"`
}

// RepoSummary summarises one synced repository (the library's Sync.Repos;
// the web app's /sync page).
type RepoSummary struct {
	Repo       string `json:"repo"`
	Synced     int    `json:"synced"`
	Deleted    int    `json:"deleted"`
	LastSynced string `json:"last_synced"`
}

// StatusResponse is the answer of GET /api/sync/status/{repo}.
type StatusResponse struct {
	Repo  string       `json:"repo"`
	Files []FileStatus `json:"files"`
}

var (
	repoRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)
	shaRE  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// CheckRepo validates a repository name: 1-100 letters, digits, '.', '_'
// or '-', starting with a letter or digit.
func CheckRepo(repo string) error {
	if !repoRE.MatchString(repo) {
		return fmt.Errorf("%q is not a repository name: 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit", clip(repo))
	}
	return nil
}

// CheckSHA validates a digest: 64 lower-case hex digits.
func CheckSHA(sha string) error {
	if !shaRE.MatchString(sha) {
		return fmt.Errorf("%q is not a SHA-256 digest (64 lower-case hex digits)", clip(sha))
	}
	return nil
}

// CheckPath validates a file path: relative, forward slashes, no empty,
// "." or ".." segment, valid UTF-8 without control characters, ending in
// .md, at most MaxPathBytes.
func CheckPath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("path is empty")
	case !utf8.ValidString(p):
		return fmt.Errorf("path %q is not valid UTF-8", clip(strings.ToValidUTF8(p, "\uFFFD")))
	case len(p) > MaxPathBytes:
		return fmt.Errorf("path %q is %d bytes; the maximum is %d", clip(p), len(p), MaxPathBytes)
	case strings.HasPrefix(p, "/") || (len(p) > 1 && p[1] == ':'):
		return fmt.Errorf("path %q is absolute; paths are relative to the synced folder", clip(p))
	case strings.ContainsRune(p, '\\'):
		return fmt.Errorf("path %q contains a backslash; use forward slashes", clip(p))
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return fmt.Errorf("path %q contains a control character", clip(p))
		}
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return fmt.Errorf("path %q has an empty segment", clip(p))
		case ".", "..":
			return fmt.Errorf("path %q has a %q segment: it must not escape the synced folder", clip(p), seg)
		}
	}
	if !strings.HasSuffix(strings.ToLower(p), ".md") {
		return fmt.Errorf("path %q is not a Markdown file (.md)", clip(p))
	}
	return nil
}

// SHA returns the lower-case hex SHA-256 of b.
func SHA(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Title returns the text of the first ATX level-1 heading ("# Title")
// outside fenced code blocks, or "" when there is none.
func Title(content string) string {
	fence := ""
	for _, line := range strings.Split(content, "\n") {
		t := strings.TrimRight(line, "\r")
		trim := strings.TrimLeft(t, " ")
		if len(t)-len(trim) > 3 {
			continue // indented code
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			if fence == "" {
				fence = trim[:3]
			} else if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			continue
		}
		if fence != "" {
			continue
		}
		if trim == "#" || strings.HasPrefix(trim, "# ") || strings.HasPrefix(trim, "#\t") {
			h := strings.TrimSpace(trim[1:])
			// A closing sequence of #s (after a space) is not content.
			j := len(h)
			for j > 0 && h[j-1] == '#' {
				j--
			}
			if j == 0 {
				h = ""
			} else if j < len(h) && (h[j-1] == ' ' || h[j-1] == '\t') {
				h = strings.TrimSpace(h[:j])
			}
			if h != "" {
				return h
			}
		}
	}
	return ""
}

func clip(s string) string {
	if len(s) <= 120 {
		return s
	}
	n := 120
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// Batch splits files into upload batches of at most maxFiles files and,
// unless a single file is larger, maxBytes bytes of content (0: the
// protocol's limits).
func Batch(files []UploadFile, maxFiles, maxBytes int) [][]UploadFile {
	if maxFiles <= 0 {
		maxFiles = MaxBatchFiles
	}
	if maxBytes <= 0 {
		maxBytes = MaxBatchBytes
	}
	var out [][]UploadFile
	var cur []UploadFile
	size := 0
	for _, f := range files {
		if len(cur) > 0 && (len(cur) >= maxFiles || size+len(f.Content) > maxBytes) {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, f)
		size += len(f.Content)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
