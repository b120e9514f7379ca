package rest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/wire"
)

func (s *Server) ingestRoutes() {
	s.api.HandleFunc("/api/ingest", s.ingest).Methods(http.MethodPost)
	s.api.HandleFunc("/api/jobs", s.listJobs).Methods(http.MethodGet)
	s.api.HandleFunc("/api/jobs/{id}", s.getJob).Methods(http.MethodGet)
	s.api.HandleFunc("/api/jobs/{id}/retry", s.jobAction).Methods(http.MethodPost)
	s.api.HandleFunc("/api/jobs/{id}/cancel", s.jobAction).Methods(http.MethodPost)
}

// jobParams are the query parameters of GET /api/jobs.
var jobParams = []string{"status", "limit", "before"}

var errNoIngest = envelopeError(apierror.Unavailable, "ingestion is not configured on this server", nil)

// ingestClient returns the authenticated client and the ingest service,
// or writes the error (503 when ingestion is not configured) and returns
// nils.
func (s *Server) ingestClient(w http.ResponseWriter, r *http.Request) (*postgram.Client, *ingest.Service) {
	c := s.client(w, r)
	if c == nil {
		return nil, nil
	}
	_, _, svc, err := s.workspaceOf(r.Context(), c)
	if err != nil {
		s.writeError(w, r, err)
		return nil, nil
	}
	if svc == nil {
		s.writeError(w, r, errNoIngest)
		return nil, nil
	}
	return c, svc
}

// ingest queues an ingestion: a JSON body with a URL or text, or a
// multipart upload whose "file" part follows the fields.
func (s *Server) ingest(w http.ResponseWriter, r *http.Request) {
	c, svc := s.ingestClient(w, r)
	if svc == nil {
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	var job *ingest.Job
	var err error
	if mt == "multipart/form-data" {
		job, err = s.ingestUpload(w, r, c, svc)
	} else {
		var req wire.IngestRequest
		if err := s.decodeJSON(w, r, &req); err != nil {
			s.writeError(w, r, err)
			return
		}
		job, err = svc.Submit(r.Context(), c, req.Input())
	}
	if errors.Is(err, ingest.ErrTooLarge) {
		err = envelopeError(apierror.PayloadTooLarge, fmt.Sprintf("the content exceeds the ingest limit of %d bytes (INGEST_MAX_BYTES)", svc.MaxBytes()),
			map[string]any{"field": "file", "limit_bytes": svc.MaxBytes()})
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusAccepted, wire.JobResponse{Job: job})
}

// maxFieldBytes bounds one form field of an upload.
const maxFieldBytes = 64 << 10

// ingestUpload streams a multipart upload's file into the service: the
// fields (type, tags, visibility, owner, metadata, filename,
// content_type) come first, then one part named "file".
func (s *Server) ingestUpload(w http.ResponseWriter, r *http.Request, c *postgram.Client, svc *ingest.Service) (*ingest.Job, error) {
	limit := svc.MaxBytes() + 1<<20 // the file plus the fields and framing
	if r.ContentLength > limit {
		return nil, tooLarge(limit)
	}
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, invalid("body", "not a readable multipart/form-data body: "+err.Error())
	}
	var req wire.IngestRequest
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil, invalid("file", "the upload has no part named \"file\"")
		}
		if err != nil {
			return nil, uploadError(err, limit)
		}
		name := part.FormName()
		if name == "file" {
			if req.Filename == "" {
				req.Filename = part.FileName()
			}
			if req.ContentType == "" {
				if ct, _, err := mime.ParseMediaType(part.Header.Get("Content-Type")); err == nil && ct != "application/octet-stream" {
					req.ContentType = ct
				}
			}
			in := req.Input()
			in.Body = part
			job, err := svc.Submit(r.Context(), c, in)
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, tooLarge(limit)
			}
			return job, err
		}
		b, err := io.ReadAll(io.LimitReader(part, maxFieldBytes+1))
		if err != nil {
			return nil, uploadError(err, limit)
		}
		if len(b) > maxFieldBytes {
			return nil, invalid(name, fmt.Sprintf("is longer than %d bytes", maxFieldBytes))
		}
		v := string(b)
		switch name {
		case "type":
			req.Type = v
		case "visibility":
			req.Visibility = v
		case "owner":
			req.Owner = v
		case "filename":
			req.Filename = v
		case "content_type":
			req.ContentType = v
		case "tags":
			for _, t := range strings.Split(v, ",") {
				if t = strings.TrimSpace(t); t != "" {
					req.Tags = append(req.Tags, t)
				}
			}
		case "metadata":
			if err := json.Unmarshal(b, &req.Metadata); err != nil {
				return nil, invalid("metadata", "must be a JSON object")
			}
		default:
			return nil, invalid(name, "is not a field of an upload (type, tags, visibility, owner, metadata, filename, content_type, then file)")
		}
	}
}

func uploadError(err error, limit int64) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(limit)
	}
	return invalid("body", "the multipart body is malformed: "+err.Error())
}

func (s *Server) listJobs(w http.ResponseWriter, r *http.Request) {
	c, svc := s.ingestClient(w, r)
	if svc == nil {
		return
	}
	p := params(r, jobParams...)
	opts := ingest.ListOptions{Limit: p.int("limit", 50)}
	for _, st := range p.list("status") {
		opts.Statuses = append(opts.Statuses, driver.JobStatus(st))
	}
	if b := p.str("before"); b != "" {
		id, err := postgram.ParseID("before", b)
		if err != nil {
			p.fail(err)
		}
		opts.Before = &id
	}
	if p.err != nil {
		s.writeError(w, r, p.err)
		return
	}
	jobs, err := svc.List(r.Context(), c, opts)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if jobs == nil {
		jobs = []*ingest.Job{}
	}
	s.writeJSON(w, r, http.StatusOK, wire.JobList{Jobs: jobs})
}

func (s *Server) getJob(w http.ResponseWriter, r *http.Request) {
	s.jobCall(w, r, func(svc *ingest.Service, c *postgram.Client, id uuid.UUID) (*ingest.Job, error) {
		return svc.Get(r.Context(), c, id)
	})
}

func (s *Server) jobAction(w http.ResponseWriter, r *http.Request) {
	cancel := strings.HasSuffix(r.URL.Path, "/cancel")
	s.jobCall(w, r, func(svc *ingest.Service, c *postgram.Client, id uuid.UUID) (*ingest.Job, error) {
		if cancel {
			return svc.Cancel(r.Context(), c, id)
		}
		return svc.Retry(r.Context(), c, id)
	})
}

func (s *Server) jobCall(w http.ResponseWriter, r *http.Request, f func(*ingest.Service, *postgram.Client, uuid.UUID) (*ingest.Job, error)) {
	c, svc := s.ingestClient(w, r)
	if svc == nil {
		return
	}
	id, err := pathID(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	job, err := f(svc, c, id)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, wire.JobResponse{Job: job})
}
