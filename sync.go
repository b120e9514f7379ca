package postgram

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/validate"
	"github.com/postgram-go/postgram/syncproto"
)

// Markdown folder sync (the server side of syncproto). Each synced file
// is a document entity (metadata repo, path, title, sha); its state (sha,
// entity, synced or deleted) is kept per repo and path. An upload batch is
// one transaction, so an interrupted sync resumes with neither duplicates
// nor losses; a re-run with no change writes nothing.

// checkSync checks the sync scope and that documents may be written.
func (c *Client) checkSync(op string, write bool) error {
	if err := c.principal.need(ScopeSync, op); err != nil {
		return err
	}
	if write {
		return c.principal.canWrite(TypeDocument, VisibilityShared)
	}
	return nil
}

func checkRepo(repo string) error {
	if err := syncproto.CheckRepo(repo); err != nil {
		return validate.Invalid("repo", "%v", err)
	}
	return nil
}

// checkManifest validates manifest entries, naming the first bad one.
func checkManifest(files []syncproto.FileEntry) (map[string]string, error) {
	if len(files) > syncproto.MaxManifestFiles {
		return nil, validate.Invalid("files", "has %d files; the maximum is %d", len(files), syncproto.MaxManifestFiles)
	}
	out := make(map[string]string, len(files))
	for i, f := range files {
		if err := syncproto.CheckPath(f.Path); err != nil {
			return nil, validate.Invalid(fmt.Sprintf("files[%d].path", i), "%v", err)
		}
		if err := syncproto.CheckSHA(f.SHA); err != nil {
			return nil, validate.Invalid(fmt.Sprintf("files[%d].sha", i), "%v (path %s)", err, f.Path)
		}
		if _, dup := out[f.Path]; dup {
			return nil, validate.Invalid(fmt.Sprintf("files[%d].path", i), "%q is listed twice", f.Path)
		}
		out[f.Path] = f.SHA
	}
	return out, nil
}

// checkUploads validates files with their content: path, digest, UTF-8
// content within the limits, and the digest of the content.
func checkUploads(files []syncproto.UploadFile, maxFiles int) error {
	_, err := checkUploadBatch(files, maxFiles, false)
	return err
}

// checkUploadBatch validates a batch. A malformed batch (too many files,
// a bad path or digest, a path listed twice, content that is not UTF-8 or
// holds NUL bytes, a digest that does not match the content) is an error.
// A file larger than MaxContentBytes is an error too unless perFile is
// set: it is then reported in refused, by index, and the rest of the
// batch stands (one oversized note must not stop a folder's sync).
func checkUploadBatch(files []syncproto.UploadFile, maxFiles int, perFile bool) (refused map[int]syncproto.FileError, err error) {
	if len(files) > maxFiles {
		return nil, validate.Invalid("files", "has %d files; the maximum is %d", len(files), maxFiles)
	}
	seen := make(map[string]bool, len(files))
	for i, f := range files {
		if err := syncproto.CheckPath(f.Path); err != nil {
			return nil, validate.Invalid(fmt.Sprintf("files[%d].path", i), "%v", err)
		}
		if err := syncproto.CheckSHA(f.SHA); err != nil {
			return nil, validate.Invalid(fmt.Sprintf("files[%d].sha", i), "%v (path %s)", err, f.Path)
		}
		if seen[f.Path] {
			return nil, validate.Invalid(fmt.Sprintf("files[%d].path", i), "%q is listed twice", f.Path)
		}
		seen[f.Path] = true
		field := fmt.Sprintf("files[%d].content", i)
		if perFile && utf8.ValidString(f.Content) && len(f.Content) > MaxContentBytes {
			if refused == nil {
				refused = map[int]syncproto.FileError{}
			}
			err := validate.Invalid(field, "%s is %d bytes; the maximum is %d", f.Path, len(f.Content), MaxContentBytes)
			refused[i] = syncproto.FileError{Path: f.Path, Field: field, Code: "VALIDATION", Message: err.Error()}
			continue
		}
		if err := validate.Content(field, f.Content, false); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		if got := syncproto.SHA([]byte(f.Content)); got != f.SHA {
			return nil, validate.Invalid(fmt.Sprintf("files[%d].sha", i), "%s: the manifest says %s but the uploaded content hashes to %s", f.Path, f.SHA, got)
		}
	}
	return refused, nil
}

// syncStates loads repo's states by path (every path when paths is nil)
// of the files whose document the caller may see; hidden holds the paths
// whose document it may not (nil for an administrator). Writes refuse a
// hidden path, so a key cannot overwrite, archive or restore a document
// it cannot read.
func (c *Client) syncStates(ctx context.Context, repo string, paths []string) (visible map[string]driver.SyncFileState, hidden map[string]bool, err error) {
	all, err := c.store.SyncStates(ctx, c.ws, repo, paths, nil)
	if err != nil {
		return nil, nil, err
	}
	if c.principal == nil {
		return byPath(all), nil, nil
	}
	visible, err = c.visibleSyncStates(ctx, repo, paths)
	if err != nil {
		return nil, nil, err
	}
	hidden = map[string]bool{}
	for _, s := range all {
		if _, ok := visible[s.Path]; !ok {
			hidden[s.Path] = true
		}
	}
	return visible, hidden, nil
}

// visibleSyncStates loads repo's states by path (every path when paths is
// nil) of the files whose document the caller may see: what a key cannot
// see does not exist for it (diff, status).
func (c *Client) visibleSyncStates(ctx context.Context, repo string, paths []string) (map[string]driver.SyncFileState, error) {
	var filter *driver.EntityFilter
	if c.principal != nil {
		f, ok := c.principal.restrict(driver.EntityFilter{IncludeArchived: true})
		if !ok {
			return map[string]driver.SyncFileState{}, nil
		}
		filter = &f
	}
	list, err := c.store.SyncStates(ctx, c.ws, repo, paths, filter)
	if err != nil {
		return nil, err
	}
	return byPath(list), nil
}

func byPath(list []driver.SyncFileState) map[string]driver.SyncFileState {
	out := make(map[string]driver.SyncFileState, len(list))
	for _, s := range list {
		out[s.Path] = s
	}
	return out
}

// hiddenPath refuses a write to a file whose document the caller may not
// see (field names the file in the request).
func hiddenPath(field, path string) error {
	return fmt.Errorf("%s: %s is synced to a document this key may not see or change: %w", field, path, ErrForbidden)
}

// refuseHidden refuses the request when one of its n files (path(i)) is
// hidden, naming the first.
func refuseHidden(n int, path func(int) string, hidden map[string]bool) error {
	for i := 0; i < n; i++ {
		if p := path(i); hidden[p] {
			return hiddenPath(fmt.Sprintf("files[%d].path", i), p)
		}
	}
	return nil
}

// Diff compares a manifest with the server's state of repo, as far as
// the caller may see it (a file whose document it may not see is new to
// it, and its upload is refused).
func (s *Sync) Diff(ctx context.Context, req syncproto.DiffRequest) (*syncproto.DiffResponse, error) {
	c := s.c
	if err := c.checkSync("sync diff", false); err != nil {
		return nil, err
	}
	if err := checkRepo(req.Repo); err != nil {
		return nil, err
	}
	want, err := checkManifest(req.Files)
	if err != nil {
		return nil, err
	}
	states, err := c.visibleSyncStates(ctx, req.Repo, nil)
	if err != nil {
		return nil, fmt.Errorf("sync diff: %w", err)
	}
	res := &syncproto.DiffResponse{ToUpload: []syncproto.DiffItem{}, ToDelete: []string{}, ToRestore: []string{}}
	for _, f := range req.Files {
		st, ok := states[f.Path]
		switch {
		case !ok:
			res.ToUpload = append(res.ToUpload, syncproto.DiffItem{Path: f.Path, SHA: f.SHA, Reason: syncproto.ReasonNew})
		case st.SHA != f.SHA:
			res.ToUpload = append(res.ToUpload, syncproto.DiffItem{Path: f.Path, SHA: f.SHA, Reason: syncproto.ReasonChanged})
		default:
			res.Unchanged++
			if st.Status == driver.SyncStatusDeleted {
				res.ToRestore = append(res.ToRestore, f.Path)
			}
		}
	}
	for p, st := range states {
		if _, ok := want[p]; !ok && st.Status == driver.SyncStatusSynced {
			res.ToDelete = append(res.ToDelete, p)
		}
	}
	slices.Sort(res.ToDelete)
	return res, nil
}

// syncDocument builds the write of one uploaded file: a new document, or
// an update of the file's document (restoring it when archived). It
// returns nil ops when the file is already synced with this content.
func (c *Client) syncDocument(ctx context.Context, repo, field string, f syncproto.UploadFile, st *driver.SyncFileState) (ops []driver.BatchOp, created bool, err error) {
	now := c.now()
	content := f.Content
	if strings.TrimSpace(content) == "" {
		content = "(empty note " + f.Path + ")"
	}
	title := syncproto.Title(f.Content)
	if title == "" {
		title = strings.TrimSuffix(path.Base(f.Path), path.Ext(f.Path))
	}
	meta := map[string]any{"repo": repo, "path": f.Path, "title": title, "sha": f.SHA}
	state := &driver.SyncFileState{Repo: repo, Path: f.Path, SHA: f.SHA, Status: driver.SyncStatusSynced, LastSynced: now}
	if st != nil {
		cur, err := c.store.GetEntity(ctx, c.ws, st.EntityID)
		if err != nil {
			return nil, false, fmt.Errorf("%s: %w", f.Path, err)
		}
		if !c.canSee(cur) {
			return nil, false, hiddenPath(field, f.Path)
		}
		if st.SHA == f.SHA && st.Status == driver.SyncStatusSynced && cur.Status != StatusArchived {
			return nil, false, nil
		}
		next := cur.Clone()
		if next.Metadata == nil {
			next.Metadata = map[string]any{}
		}
		for k, v := range meta {
			next.Metadata[k] = v
		}
		next.Status = StatusActive
		next.Version = cur.Version + 1
		next.UpdatedAt = now
		var chunks []driver.ChunkInput
		if content != cur.Content {
			next.Content = content
			chunks = c.rechunk(next)
		}
		state.EntityID = cur.ID
		return []driver.BatchOp{
			{Update: next, Expected: cur.Version, Chunks: chunks,
				Audit: c.auditEntry("sync.update", cur.ID.String(), map[string]any{"repo": repo, "path": f.Path})},
			{SyncState: state},
		}, false, nil
	}
	e, err := c.newEntity(StoreInput{Type: TypeDocument, Content: content, Source: "sync:" + repo + "/" + f.Path,
		Metadata: meta})
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", f.Path, err)
	}
	state.EntityID = e.ID
	return []driver.BatchOp{
		{Create: e, Chunks: c.chunksFor(e.Content),
			Audit: c.auditEntry("sync.create", e.ID.String(), map[string]any{"repo": repo, "path": f.Path})},
		{SyncState: state},
	}, true, nil
}

// Upload stores a batch of files (at most syncproto.MaxBatchFiles) in
// one transaction: new files become documents, changed ones update their
// document, files already synced with this content are left alone. A
// malformed batch (path, digest, a path twice, content that is not UTF-8)
// is refused whole; a file larger than MaxContentBytes is listed in the response's Errors and
// the other files are stored, so that one oversized note does not stop a
// folder's sync (finalize then counts it as missing).
func (s *Sync) Upload(ctx context.Context, req syncproto.UploadRequest) (*syncproto.UploadResponse, error) {
	c := s.c
	if err := c.checkSync("sync upload", true); err != nil {
		return nil, err
	}
	if err := checkRepo(req.Repo); err != nil {
		return nil, err
	}
	refused, err := checkUploadBatch(req.Files, syncproto.MaxBatchFiles, true)
	if err != nil {
		return nil, err
	}
	res := &syncproto.UploadResponse{}
	if len(refused) > 0 {
		keep := make([]syncproto.UploadFile, 0, len(req.Files)-len(refused))
		for i, f := range req.Files {
			if fe, ok := refused[i]; ok {
				res.Errors = append(res.Errors, fe)
				continue
			}
			keep = append(keep, f)
		}
		req.Files = keep
		if len(keep) == 0 {
			return res, nil
		}
	}
	// A batch needs its own files' states only: loading the whole repo's
	// per batch made a first sync quadratic in the folder's size.
	paths := make([]string, len(req.Files))
	for i, f := range req.Files {
		paths[i] = f.Path
	}
	states, hidden, err := c.syncStates(ctx, req.Repo, paths)
	if err != nil {
		return nil, fmt.Errorf("sync upload: %w", err)
	}
	if err := refuseHidden(len(req.Files), func(i int) string { return req.Files[i].Path }, hidden); err != nil {
		return nil, fmt.Errorf("sync upload: %w", err)
	}
	ops, err := c.uploadOps(ctx, req.Repo, req.Files, states, func(created bool) {
		if created {
			res.Created++
		} else {
			res.Updated++
		}
	}, func() { res.Unchanged++ })
	if err != nil {
		return nil, err
	}
	if err := c.store.WriteBatch(ctx, c.ws, ops); err != nil {
		return nil, fmt.Errorf("sync upload: %w", c.hideConflict(err))
	}
	if len(ops) > 0 {
		c.wake()
	}
	return res, nil
}

func (c *Client) uploadOps(ctx context.Context, repo string, files []syncproto.UploadFile, states map[string]driver.SyncFileState,
	wrote func(created bool), unchanged func()) ([]driver.BatchOp, error) {
	var ops []driver.BatchOp
	for i, f := range files {
		var st *driver.SyncFileState
		if s, ok := states[f.Path]; ok {
			st = &s
		}
		o, created, err := c.syncDocument(ctx, repo, fmt.Sprintf("files[%d].path", i), f, st)
		if err != nil {
			return nil, fmt.Errorf("sync: %w", err)
		}
		if o == nil {
			unchanged()
			continue
		}
		wrote(created)
		ops = append(ops, o...)
	}
	return ops, nil
}

// finalizeOps archives the documents of synced files missing from want
// and restores archived documents whose file came back unchanged.
// Archiving is deletion: it needs the delete scope.
func (c *Client) finalizeOps(ctx context.Context, repo string, want map[string]string, states map[string]driver.SyncFileState) (ops []driver.BatchOp, deleted, restored, missing int, err error) {
	now := c.now()
	for p := range want {
		if _, ok := states[p]; !ok {
			missing++
		}
	}
	paths := make([]string, 0, len(states))
	for p := range states {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var ids []uuid.UUID
	var act []string
	for _, p := range paths {
		st := states[p]
		sha, present := want[p]
		switch {
		case !present && st.Status == driver.SyncStatusSynced:
			ids, act = append(ids, st.EntityID), append(act, p)
		case present && st.Status == driver.SyncStatusDeleted && sha == st.SHA:
			ids, act = append(ids, st.EntityID), append(act, p)
		}
	}
	if len(ids) == 0 {
		return nil, 0, 0, missing, nil
	}
	ents, err := c.store.GetEntities(ctx, c.ws, ids)
	if err != nil {
		return nil, 0, 0, 0, err
	}
	byID := make(map[uuid.UUID]*Entity, len(ents))
	for _, e := range ents {
		byID[e.ID] = e
	}
	for i, p := range act {
		st := states[p]
		cur := byID[ids[i]]
		if cur == nil {
			continue
		}
		if !c.canSee(cur) {
			return nil, 0, 0, 0, hiddenPath("files", p)
		}
		if st.Status == driver.SyncStatusSynced && cur.Status != StatusArchived && !c.principal.Has(ScopeDelete) {
			return nil, 0, 0, 0, fmt.Errorf("%s left the folder, and archiving its document needs the %q scope (this key lacks it; nothing was changed): %w",
				p, ScopeDelete, ErrForbidden)
		}
		next := cur.Clone()
		next.Version, next.UpdatedAt = cur.Version+1, now
		state := st
		state.LastSynced = now
		op := "sync.archive"
		if st.Status == driver.SyncStatusSynced {
			next.Status, state.Status = StatusArchived, driver.SyncStatusDeleted
			deleted++
		} else {
			next.Status, state.Status = StatusActive, driver.SyncStatusSynced
			op = "sync.restore"
			restored++
		}
		if next.Status == cur.Status {
			ops = append(ops, driver.BatchOp{SyncState: &state})
			continue
		}
		ops = append(ops,
			driver.BatchOp{Update: next, Expected: cur.Version, Audit: c.auditEntry(op, cur.ID.String(), map[string]any{"repo": repo, "path": p})},
			driver.BatchOp{SyncState: &state})
	}
	return ops, deleted, restored, missing, nil
}

// Finalize takes the full manifest after the uploads: documents of
// files that left the folder are archived, archived documents of files
// that came back are restored, in one transaction.
func (s *Sync) Finalize(ctx context.Context, req syncproto.FinalizeRequest) (*syncproto.FinalizeResponse, error) {
	c := s.c
	if err := c.checkSync("sync finalize", true); err != nil {
		return nil, err
	}
	if err := checkRepo(req.Repo); err != nil {
		return nil, err
	}
	want, err := checkManifest(req.Files)
	if err != nil {
		return nil, err
	}
	states, hidden, err := c.syncStates(ctx, req.Repo, nil)
	if err != nil {
		return nil, fmt.Errorf("sync finalize: %w", err)
	}
	if err := refuseHidden(len(req.Files), func(i int) string { return req.Files[i].Path }, hidden); err != nil {
		return nil, fmt.Errorf("sync finalize: %w", err)
	}
	ops, deleted, restored, missing, err := c.finalizeOps(ctx, req.Repo, want, states)
	if err != nil {
		return nil, fmt.Errorf("sync finalize: %w", err)
	}
	if err := c.store.WriteBatch(ctx, c.ws, ops); err != nil {
		return nil, fmt.Errorf("sync finalize: %w", c.hideConflict(err))
	}
	return &syncproto.FinalizeResponse{Deleted: deleted, Restored: restored, Missing: missing}, nil
}

// Push is the single-shot sync: req.Files is the whole folder with
// contents; everything (creates, updates, archives, restores) commits in
// one transaction.
func (s *Sync) Push(ctx context.Context, req syncproto.PushRequest) (*syncproto.PushResponse, error) {
	c := s.c
	if err := c.checkSync("sync push", true); err != nil {
		return nil, err
	}
	if err := checkRepo(req.Repo); err != nil {
		return nil, err
	}
	if err := checkUploads(req.Files, MaxPushFiles); err != nil {
		return nil, err
	}
	states, hidden, err := c.syncStates(ctx, req.Repo, nil)
	if err != nil {
		return nil, fmt.Errorf("sync push: %w", err)
	}
	if err := refuseHidden(len(req.Files), func(i int) string { return req.Files[i].Path }, hidden); err != nil {
		return nil, fmt.Errorf("sync push: %w", err)
	}
	res := &syncproto.PushResponse{}
	want := make(map[string]string, len(req.Files))
	var changed []syncproto.UploadFile
	for _, f := range req.Files {
		want[f.Path] = f.SHA
		if st, ok := states[f.Path]; ok && st.SHA == f.SHA {
			res.Unchanged++ // restored by finalize when archived
			continue
		}
		changed = append(changed, f)
	}
	ops, err := c.uploadOps(ctx, req.Repo, changed, states, func(created bool) {
		if created {
			res.Created++
		} else {
			res.Updated++
		}
	}, func() { res.Unchanged++ })
	if err != nil {
		return nil, err
	}
	fops, deleted, restored, _, err := c.finalizeOps(ctx, req.Repo, want, states)
	if err != nil {
		return nil, fmt.Errorf("sync push: %w", err)
	}
	res.Deleted, res.Restored = deleted, restored
	if err := c.store.WriteBatch(ctx, c.ws, append(ops, fops...)); err != nil {
		return nil, fmt.Errorf("sync push: %w", c.hideConflict(err))
	}
	if len(ops) > 0 {
		c.wake()
	}
	return res, nil
}

// Status lists the server's state of every file of repo whose document
// the caller may see.
func (s *Sync) Status(ctx context.Context, repo string) (*syncproto.StatusResponse, error) {
	c := s.c
	if err := c.checkSync("sync status", false); err != nil {
		return nil, err
	}
	if err := checkRepo(repo); err != nil {
		return nil, err
	}
	states, err := c.visibleSyncStates(ctx, repo, nil)
	if err != nil {
		return nil, fmt.Errorf("sync status: %w", err)
	}
	paths := make([]string, 0, len(states))
	for p := range states {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	res := &syncproto.StatusResponse{Repo: repo, Files: make([]syncproto.FileStatus, 0, len(states))}
	for _, p := range paths {
		s := states[p]
		res.Files = append(res.Files, syncproto.FileStatus{Path: s.Path, SHA: s.SHA, SyncStatus: s.Status,
			LastSynced: s.LastSynced.UTC().Format("2006-01-02T15:04:05.000000Z07:00"), EntityID: s.EntityID.String()})
	}
	return res, nil
}

// Repos summarises the workspace's synced repositories the caller may see
// (a file counts when the caller may read its entity), by name.
func (s *Sync) Repos(ctx context.Context) ([]syncproto.RepoSummary, error) {
	c := s.c
	if err := c.checkSync("sync repositories", false); err != nil {
		return nil, err
	}
	var filter *driver.EntityFilter
	if c.principal != nil {
		f, ok := c.principal.restrict(driver.EntityFilter{IncludeArchived: true})
		if !ok {
			return []syncproto.RepoSummary{}, nil
		}
		filter = &f
	}
	repos, err := c.store.SyncRepos(ctx, c.ws, filter)
	if err != nil {
		return nil, fmt.Errorf("sync repositories: %w", err)
	}
	out := make([]syncproto.RepoSummary, len(repos))
	for i, r := range repos {
		out[i] = syncproto.RepoSummary{Repo: r.Repo, Synced: r.Synced, Deleted: r.Deleted,
			LastSynced: r.LastSynced.UTC().Format("2006-01-02T15:04:05.000000Z07:00")}
	}
	return out, nil
}
