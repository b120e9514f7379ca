package wire

import "github.com/postgram-go/postgram/syncproto"

// SyncManifestRequest is the body of POST /api/sync/diff and
// /api/sync/finalize: the complete manifest of the folder. files is
// required (an empty array for an empty folder), so that a client that
// forgets it cannot archive the whole repository at finalize.
type SyncManifestRequest struct {
	Repo  string                 `json:"repo"`
	Files *[]syncproto.FileEntry `json:"files"`
}

// SyncFilesRequest is the body of POST /api/sync/upload (one batch) and
// POST /api/sync (the whole folder, single shot).
type SyncFilesRequest struct {
	Repo  string                  `json:"repo"`
	Files *[]syncproto.UploadFile `json:"files"`
}
