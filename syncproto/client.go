package syncproto

import (
	"context"
	"fmt"
	"io/fs"
	"os"
)

// Transport carries the three phases to a server (the pgm HTTP client, or
// the library directly).
type Transport interface {
	Diff(ctx context.Context, req DiffRequest) (*DiffResponse, error)
	Upload(ctx context.Context, req UploadRequest) (*UploadResponse, error)
	Finalize(ctx context.Context, req FinalizeRequest) (*FinalizeResponse, error)
}

// Options configures Sync.
type Options struct {
	// Repo names the synced folder on the server. Required.
	Repo string
	// DryRun stops after the diff: nothing is uploaded or archived.
	DryRun bool
	// MaxBatchFiles and MaxBatchBytes bound an upload batch (0: the
	// protocol's 50 files and 4 MiB).
	MaxBatchFiles, MaxBatchBytes int
	// Progress, when set, is called after each uploaded batch with the
	// number of files uploaded so far and the total to upload.
	Progress func(done, total int)
}

// Summary is what a sync did (or, for a dry run, would do).
type Summary struct {
	Repo      string     `json:"repo"`
	DryRun    bool       `json:"dry_run"`
	Files     int        `json:"files"`
	Created   int        `json:"created"`
	Updated   int        `json:"updated"`
	Unchanged int        `json:"unchanged"`
	Deleted   int        `json:"deleted"`
	Restored  int        `json:"restored"`
	Batches   int        `json:"batches"`
	ToUpload  []DiffItem `json:"to_upload,omitempty"`
	ToDelete  []string   `json:"to_delete,omitempty"`
	ToRestore []string   `json:"to_restore,omitempty"`
	// Errors lists the files the server refused (too large): everything
	// else was synced.
	Errors []FileError `json:"errors,omitempty"`
}

// Sync walks root and brings the server's copy of repo in line with it:
// diff, upload in batches (each batch is one server transaction, so an
// interrupted sync resumes on the next run with neither duplicates nor
// losses), finalize.
func Sync(ctx context.Context, t Transport, root string, opt Options) (*Summary, error) {
	return SyncFS(ctx, t, os.DirFS(root), opt)
}

// SyncFS is Sync over a file system rooted at the synced folder.
func SyncFS(ctx context.Context, t Transport, fsys fs.FS, opt Options) (*Summary, error) {
	if err := CheckRepo(opt.Repo); err != nil {
		return nil, err
	}
	files, err := WalkFS(fsys)
	if err != nil {
		return nil, err
	}
	entries := Entries(files)
	sum := &Summary{Repo: opt.Repo, DryRun: opt.DryRun, Files: len(files)}
	diff, err := t.Diff(ctx, DiffRequest{Repo: opt.Repo, Files: entries})
	if err != nil {
		return nil, fmt.Errorf("diff: %w", err)
	}
	sum.Unchanged = diff.Unchanged
	if opt.DryRun {
		sum.ToUpload, sum.ToDelete, sum.ToRestore = diff.ToUpload, diff.ToDelete, diff.ToRestore
		for _, it := range diff.ToUpload {
			if it.Reason == ReasonNew {
				sum.Created++
			} else {
				sum.Updated++
			}
		}
		sum.Deleted, sum.Restored = len(diff.ToDelete), len(diff.ToRestore)
		return sum, nil
	}
	want := make(map[string]string, len(entries))
	for _, e := range entries {
		want[e.Path] = e.SHA
	}
	up := make([]UploadFile, 0, len(diff.ToUpload))
	for _, it := range diff.ToUpload {
		sha, ok := want[it.Path]
		if !ok || sha != it.SHA {
			return nil, fmt.Errorf("diff: the server asked for %s (%s), which is not in the manifest", it.Path, it.SHA)
		}
		b, err := fs.ReadFile(fsys, it.Path)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", it.Path, err)
		}
		if got := SHA(b); got != sha {
			return nil, fmt.Errorf("%s changed while syncing; run the sync again", it.Path)
		}
		up = append(up, UploadFile{Path: it.Path, SHA: sha, Content: string(b)})
	}
	done := 0
	if opt.Progress != nil {
		opt.Progress(0, len(up))
	}
	for _, batch := range Batch(up, opt.MaxBatchFiles, opt.MaxBatchBytes) {
		res, err := t.Upload(ctx, UploadRequest{Repo: opt.Repo, Files: batch})
		if err != nil {
			return sum, fmt.Errorf("upload (after %d of %d files): %w", done, len(up), err)
		}
		sum.Batches++
		sum.Created += res.Created
		sum.Updated += res.Updated
		sum.Unchanged += res.Unchanged
		sum.Errors = append(sum.Errors, res.Errors...)
		done += len(batch)
		if opt.Progress != nil {
			opt.Progress(done, len(up))
		}
	}
	fin, err := t.Finalize(ctx, FinalizeRequest{Repo: opt.Repo, Files: entries})
	if err != nil {
		return sum, fmt.Errorf("finalize: %w", err)
	}
	sum.Deleted, sum.Restored = fin.Deleted, fin.Restored
	return sum, nil
}
