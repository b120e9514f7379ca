package mcp

import (
	"context"
	"errors"
	"fmt"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/syncproto"
)

// Markdown folder sync for agents: sync_push (the library's single-shot
// SyncPush) and sync_status. Large folders are synced with `pgm sync`,
// which uses the batched three-phase protocol over REST.

// syncStatusCompact is the compact status: counts and one short row per
// file (no digests or timestamps; full_response has them).
type syncStatusCompact struct {
	Repo    string          `json:"repo"`
	Synced  int             `json:"synced"`
	Deleted int             `json:"deleted"`
	Files   []syncStatusRow `json:"files"`
}

type syncStatusRow struct {
	Path       string `json:"path"`
	SyncStatus string `json:"sync_status"`
	EntityID   string `json:"entity_id"`
}

var syncRepoParam = param{Name: "repo", Kind: kindString, Required: true,
	Description: "Name the folder is synced as: 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit " +
		"(by convention the folder's name, e.g. \"notes\")."}

// syncFileParams are the fields of one sync_push file.
var syncFileParams = []param{
	{Name: "path", Kind: kindString, Required: true},
	{Name: "content", Kind: kindString, Required: true},
	{Name: "sha", Kind: kindString},
}

func syncTools() []toolSpec {
	return []toolSpec{
		{
			Name:  "sync_push",
			Title: "Sync a Markdown folder (single shot)",
			Description: fmt.Sprintf("Make the server's copy of a small Markdown folder (repo) exactly match the files you send, in one "+
				"transaction: new paths become document entities (metadata repo, path, title, sha), changed files update their "+
				"document, unchanged ones are not written. files must be the WHOLE folder: synced files of the repo missing "+
				"from this call are archived (restored when sent again unchanged). Use it for notes you maintain as files; "+
				"use store for one-off documents. At most %d files; larger folders are synced with the pgm CLI (`pgm sync DIR`). "+
				"Returns {created, updated, unchanged, deleted, restored}. Needs a key with the sync scope, and the delete scope "+
				"when files are archived.", postgram.MaxPushFiles),
			Params: []param{
				syncRepoParam,
				{Name: "files", Kind: kindObjects, Required: true, Items: map[string]any{
					"type":                 "object",
					"required":             []string{"path", "content"},
					"additionalProperties": false,
					"properties": map[string]any{
						"path": map[string]any{"type": "string", "description": "Path relative to the folder, forward slashes, ending in .md " +
							"(\"projects/plan.md\"); no '..' segment, not absolute."},
						"content": map[string]any{"type": "string", "description": "The file's Markdown text (up to 1 MiB); a first \"# Heading\" becomes its title."},
						"sha": map[string]any{"type": "string", "description": "Optional lower-case hex SHA-256 of content; computed when omitted, " +
							"checked when given."},
					},
				}, Description: "Every file of the folder, [{path, content, sha?}]. A JSON array in a string is accepted."},
			},
			Destructive: true,
			Idempotent:  true,
			Handler:     syncPushTool,
		},
		{
			Name:  "sync_status",
			Title: "Status of a synced folder",
			Description: "List what the server holds for a synced Markdown folder (repo): each file's path, sync_status (synced, " +
				"or deleted when the file left the folder and its document is archived) and the id of its document entity, " +
				"which recall returns in full. Returns {repo, synced, deleted, files:[{path, sync_status, entity_id}]}; " +
				"full_response adds each file's sha and last_synced time. An unknown repo has no files. Needs the sync scope.",
			Params:     []param{{Name: "repo", Kind: kindString, Required: true, Description: syncRepoParam.Description}},
			TOON:       true,
			ReadOnly:   true,
			Idempotent: true,
			Handler:    syncStatusTool,
		},
	}
}

// pushFiles turns the files argument into upload files, naming the item
// of any problem (files[i].path, ...). A missing sha is computed; a given
// one is checked by the library.
func pushFiles(items []map[string]any) ([]syncproto.UploadFile, error) {
	out := make([]syncproto.UploadFile, len(items))
	for i, it := range items {
		a, err := coerce(syncFileParams, it)
		if err != nil {
			var fe *postgram.FieldError
			if errors.As(err, &fe) {
				return nil, &postgram.FieldError{Field: fmt.Sprintf("files[%d].%s", i, fe.Field), Message: fe.Message}
			}
			return nil, err
		}
		f := syncproto.UploadFile{}
		f.Path, _ = a.str("path")
		f.Content, _ = a.str("content")
		f.SHA, _ = a.str("sha")
		if f.SHA == "" {
			f.SHA = syncproto.SHA([]byte(f.Content))
		}
		out[i] = f
	}
	return out, nil
}

func syncPushTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	repo, _ := a.str("repo")
	items, _ := a.objects("files")
	files, err := pushFiles(items)
	if err != nil {
		return reply{}, err
	}
	res, err := c.Sync().Push(ctx, syncproto.PushRequest{Repo: repo, Files: files})
	if err != nil {
		return reply{}, err
	}
	return reply{Compact: res}, nil
}

func syncStatusTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	repo, _ := a.str("repo")
	st, err := c.Sync().Status(ctx, repo)
	if err != nil {
		return reply{}, err
	}
	out := syncStatusCompact{Repo: st.Repo, Files: make([]syncStatusRow, 0, len(st.Files))}
	for _, f := range st.Files {
		if f.SyncStatus == driver.SyncStatusDeleted {
			out.Deleted++
		} else {
			out.Synced++
		}
		out.Files = append(out.Files, syncStatusRow{Path: f.Path, SyncStatus: f.SyncStatus, EntityID: f.EntityID})
	}
	return reply{Compact: out, Full: st}, nil
}
