package api

import (
	"context"
	"net/http"
	"net/url"

	"github.com/postgram-go/postgram/syncproto"
)

// --- Markdown folder sync ------------------------------------------------

// SyncDiff compares a manifest with the server's copy (POST /api/sync/diff).
func (c *Client) SyncDiff(ctx context.Context, req syncproto.DiffRequest) (*syncproto.DiffResponse, []byte, error) {
	var out syncproto.DiffResponse
	raw, err := c.do(ctx, http.MethodPost, "/api/sync/diff", nil, manifestBody(req.Repo, req.Files), &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// SyncUpload uploads one batch (POST /api/sync/upload).
func (c *Client) SyncUpload(ctx context.Context, req syncproto.UploadRequest) (*syncproto.UploadResponse, []byte, error) {
	var out syncproto.UploadResponse
	raw, err := c.do(ctx, http.MethodPost, "/api/sync/upload", nil, filesBody(req.Repo, req.Files), &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// SyncFinalize archives what left the folder and restores what came back
// (POST /api/sync/finalize).
func (c *Client) SyncFinalize(ctx context.Context, req syncproto.FinalizeRequest) (*syncproto.FinalizeResponse, []byte, error) {
	var out syncproto.FinalizeResponse
	raw, err := c.do(ctx, http.MethodPost, "/api/sync/finalize", nil, manifestBody(req.Repo, req.Files), &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// SyncPush is the single-shot sync of a small folder (POST /api/sync).
func (c *Client) SyncPush(ctx context.Context, req syncproto.PushRequest) (*syncproto.PushResponse, []byte, error) {
	var out syncproto.PushResponse
	raw, err := c.do(ctx, http.MethodPost, "/api/sync", nil, filesBody(req.Repo, req.Files), &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// SyncStatus lists the server's state of a synced folder (GET
// /api/sync/status/{repo}).
func (c *Client) SyncStatus(ctx context.Context, repo string) (*syncproto.StatusResponse, []byte, error) {
	var out syncproto.StatusResponse
	raw, err := c.do(ctx, http.MethodGet, "/api/sync/status/"+url.PathEscape(repo), nil, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// The server requires files (an empty manifest is [], not null).
func manifestBody(repo string, files []syncproto.FileEntry) syncproto.DiffRequest {
	if files == nil {
		files = []syncproto.FileEntry{}
	}
	return syncproto.DiffRequest{Repo: repo, Files: files}
}

func filesBody(repo string, files []syncproto.UploadFile) syncproto.UploadRequest {
	if files == nil {
		files = []syncproto.UploadFile{}
	}
	return syncproto.UploadRequest{Repo: repo, Files: files}
}

// SyncTransport carries syncproto's three phases over the REST API, for
// syncproto.Sync.
type SyncTransport struct {
	C *Client
}

var _ syncproto.Transport = (*SyncTransport)(nil)

// Diff implements syncproto.Transport.
func (t *SyncTransport) Diff(ctx context.Context, req syncproto.DiffRequest) (*syncproto.DiffResponse, error) {
	res, _, err := t.C.SyncDiff(ctx, req)
	return res, err
}

// Upload implements syncproto.Transport.
func (t *SyncTransport) Upload(ctx context.Context, req syncproto.UploadRequest) (*syncproto.UploadResponse, error) {
	res, _, err := t.C.SyncUpload(ctx, req)
	return res, err
}

// Finalize implements syncproto.Transport.
func (t *SyncTransport) Finalize(ctx context.Context, req syncproto.FinalizeRequest) (*syncproto.FinalizeResponse, error) {
	res, _, err := t.C.SyncFinalize(ctx, req)
	return res, err
}
