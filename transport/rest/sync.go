package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/gorilla/mux"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/syncproto"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/wire"
)

// Markdown folder sync (DESIGN.md §8 "Sync"): the three phases of
// syncproto (diff → batched upload → finalize), the single-shot push and
// the per-file status. Every rule (paths, digests, content, scopes, what a
// batch does) is the library's; these handlers only decode strictly and
// map the answers.

// DefaultMaxSyncBodyBytes bounds the bodies of the /api/sync routes when
// Config.MaxSyncBodyBytes is zero. An upload batch holds up to
// syncproto.MaxBatchBytes (4 MiB) of content, which JSON escaping inflates
// (up to six bytes per control character), plus paths and digests; 32 MiB
// covers a batch of the worst case.
const DefaultMaxSyncBodyBytes int64 = 32 << 20

func (s *Server) syncRoutes() {
	s.api.HandleFunc("/api/sync/diff", s.syncDiff).Methods(http.MethodPost)
	s.api.HandleFunc("/api/sync/upload", s.syncUpload).Methods(http.MethodPost)
	s.api.HandleFunc("/api/sync/finalize", s.syncFinalize).Methods(http.MethodPost)
	s.api.HandleFunc("/api/sync", s.syncPush).Methods(http.MethodPost)
	s.api.HandleFunc("/api/sync/status/{repo}", s.syncStatus).Methods(http.MethodGet)
}

func newFileEntry() any  { return new(syncproto.FileEntry) }
func newUploadFile() any { return new(syncproto.UploadFile) }

// syncBodyLimit is the body limit of the sync routes: the larger of the
// sync limit and the general one.
func (s *Server) syncBodyLimit() int64 {
	return max(s.cfg.MaxSyncBodyBytes, s.cfg.MaxBodyBytes)
}

// decodeSync reads a sync request body (at most syncBodyLimit) into dst
// strictly, like decodeJSON. newItem returns a pointer to a new item of
// dst's files array: a body that fails to decode is decoded again item by
// item, so that the error names the item (files[3].path) — encoding/json
// names neither the index nor, for nested fields, the right type. JSON
// decoding also replaces invalid UTF-8 with U+FFFD, which would turn a
// non-UTF-8 file into a misleading digest mismatch; a body that is not
// valid UTF-8 is searched for the item that carries the bad bytes.
func (s *Server) decodeSync(w http.ResponseWriter, r *http.Request, dst any, newItem func() any) error {
	if r.Body == nil {
		return decodeBody(nil, dst)
	}
	limit := s.syncBodyLimit()
	if r.ContentLength > limit {
		return tooLarge(limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(limit)
		}
		return envelopeError(apierror.Validation, "cannot read the request body: "+err.Error(), map[string]any{"field": "body"})
	}
	if err := decodeBody(body, dst); err != nil {
		if ierr := itemError(body, newItem); ierr != nil {
			return ierr
		}
		return err
	}
	if !utf8.Valid(body) {
		return invalidUTF8Item(body)
	}
	return nil
}

// itemError decodes each item of body's files array strictly and returns
// the first failure, naming the item; nil when every item decodes (or the
// array itself cannot be read: the whole-body error stands).
func itemError(body []byte, newItem func() any) error {
	var probe struct {
		Files []json.RawMessage `json:"files"`
	}
	if json.Unmarshal(body, &probe) != nil {
		return nil
	}
	for i, raw := range probe.Files {
		if err := decodeBody(raw, newItem()); err != nil {
			return inItem(err, fmt.Sprintf("files[%d]", i))
		}
	}
	return nil
}

// inItem rewrites an error of decodeBody about an item to name it: field
// "path" becomes "files[3].path", "body" becomes "files[3]".
func inItem(err error, item string) error {
	var fe *postgram.FieldError
	if errors.As(err, &fe) {
		field := item
		if fe.Field != "body" {
			field += "." + fe.Field
		}
		msg := strings.Replace(fe.Message, "the request body", item, 1)
		return &postgram.FieldError{Field: field, Message: msg}
	}
	var re *apierror.ResponseError
	if errors.As(err, &re) {
		body := re.Body
		details := map[string]any{}
		for k, v := range body.Details {
			details[k] = v
		}
		if f, ok := details["field"].(string); ok {
			details["field"] = item + "." + f
		}
		body.Message = strings.Replace(body.Message, "in the request body", "in "+item, 1)
		body.Details = details
		return &apierror.ResponseError{Status: re.Status, Body: body}
	}
	return err
}

// invalidUTF8Item names the first repo, files[i].path or files[i].content
// of body whose raw JSON string is not valid UTF-8.
func invalidUTF8Item(body []byte) error {
	var probe struct {
		Repo  json.RawMessage              `json:"repo"`
		Files []map[string]json.RawMessage `json:"files"`
	}
	_ = json.Unmarshal(body, &probe)
	if !utf8.Valid(probe.Repo) {
		return invalid("repo", "is not valid UTF-8")
	}
	for i, f := range probe.Files {
		var p string
		_ = json.Unmarshal(f["path"], &p)
		if !utf8.Valid(f["path"]) {
			return invalid(fmt.Sprintf("files[%d].path", i), fmt.Sprintf("path %q is not valid UTF-8", clipText(p)))
		}
		if !utf8.Valid(f["content"]) {
			return invalid(fmt.Sprintf("files[%d].content", i), fmt.Sprintf("the content of %s is not valid UTF-8", clipText(p)))
		}
	}
	return invalid("body", "the request body is not valid UTF-8")
}

func clipText(s string) string {
	if len(s) <= 120 {
		return s
	}
	n := 120
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// requireFiles rejects a request without the files array.
func requireFiles[T any](files *[]T, what string) ([]T, error) {
	if files == nil {
		return nil, invalid("files", "is required: "+what)
	}
	return *files, nil
}

func (s *Server) syncDiff(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	var req wire.SyncManifestRequest
	err := params(r).err
	if err == nil {
		err = s.decodeSync(w, r, &req, newFileEntry)
	}
	var files []syncproto.FileEntry
	if err == nil {
		files, err = requireFiles(req.Files, "the manifest of the folder, [{path, sha}] (an empty array for an empty folder)")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := c.Sync().Diff(r.Context(), syncproto.DiffRequest{Repo: req.Repo, Files: files})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, res)
}

func (s *Server) syncUpload(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	var req wire.SyncFilesRequest
	err := params(r).err
	if err == nil {
		err = s.decodeSync(w, r, &req, newUploadFile)
	}
	var files []syncproto.UploadFile
	if err == nil {
		files, err = requireFiles(req.Files, fmt.Sprintf("the batch of files, [{path, sha, content}] (at most %d files)", syncproto.MaxBatchFiles))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := c.Sync().Upload(r.Context(), syncproto.UploadRequest{Repo: req.Repo, Files: files})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, res)
}

func (s *Server) syncFinalize(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	var req wire.SyncManifestRequest
	err := params(r).err
	if err == nil {
		err = s.decodeSync(w, r, &req, newFileEntry)
	}
	var files []syncproto.FileEntry
	if err == nil {
		files, err = requireFiles(req.Files, "the complete manifest of the folder, [{path, sha}]; synced files missing from it are archived")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := c.Sync().Finalize(r.Context(), syncproto.FinalizeRequest{Repo: req.Repo, Files: files})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, res)
}

func (s *Server) syncPush(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	var req wire.SyncFilesRequest
	err := params(r).err
	if err == nil {
		err = s.decodeSync(w, r, &req, newUploadFile)
	}
	var files []syncproto.UploadFile
	if err == nil {
		files, err = requireFiles(req.Files, fmt.Sprintf("every file of the folder, [{path, sha, content}] (at most %d; synced files missing from it are archived)", postgram.MaxPushFiles))
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := c.Sync().Push(r.Context(), syncproto.PushRequest{Repo: req.Repo, Files: files})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, res)
}

func (s *Server) syncStatus(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	if err := params(r).err; err != nil {
		s.writeError(w, r, err)
		return
	}
	res, err := c.Sync().Status(r.Context(), mux.Vars(r)["repo"])
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, res)
}
