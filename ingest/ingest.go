// Package ingest turns links, files and text into entities through
// durable jobs: each ingestion is a job kept in the store (driver.Job)
// that moves through its stages — fetching, extracting, chunking,
// embedding, linking — with progress, retries with backoff and a last
// error, survives a restart (a job whose server died is claimed again
// when its lease runs out and resumes without writing a duplicate) and is
// shared by every server on one PostgreSQL database.
//
// The original bytes are kept in a content-addressed raw store (package
// raw): the same bytes ingested twice return the entity they made the
// first time, and a URL whose content changed updates its entity (a new
// version, re-chunked) instead of adding another. Every job step is
// reported to the event log (package feed streams it).
//
// A Service runs the jobs of one workspace. Submit and the other calls
// take the caller's *postgram.Client and act with its rights: a job runs
// with the rights of the key that submitted it and is visible to that key
// (and to unscoped clients) only.
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/ingest/fetch"
	"github.com/postgram-go/postgram/ingest/raw"
)

// Kind is the driver.Job kind of ingestions.
const Kind = "ingest"

// Stages, in order. A job's Stage is one of these while it runs and its
// status once it ends (done, failed, cancelled).
const (
	StageQueued     = "queued"
	StageFetching   = "fetching"
	StageExtracting = "extracting"
	StageChunking   = "chunking"
	StageEmbedding  = "embedding"
	StageLinking    = "linking"
)

// progress is where each stage starts, out of 1.
var progress = map[string]float64{StageFetching: 0.05, StageExtracting: 0.3,
	StageChunking: 0.5, StageEmbedding: 0.7, StageLinking: 0.9}

// Config configures a Service. Zero values take the documented defaults.
type Config struct {
	// Raw keeps the original bytes. Required.
	Raw raw.Store
	// Fetcher downloads URLs. Default fetch.New with MaxBytes (private
	// addresses refused).
	Fetcher *fetch.Fetcher
	// MaxBytes bounds an upload or a download (INGEST_MAX_BYTES). Default
	// 64 MiB.
	MaxBytes int64
	// Concurrency is how many jobs one server runs at once. Default 2.
	Concurrency int
	// MaxAttempts is how many times a job runs before it fails for good
	// (errors that cannot pass by waiting, like a 404 or a corrupt file,
	// fail at once). Default 3.
	MaxAttempts int
	// Backoff is the wait before the first retry, doubled for each
	// further one. Default 30 seconds.
	Backoff time.Duration
	// Lease is how long a claimed job is held before another server may
	// take it over (each step renews it). Default 2 minutes.
	Lease time.Duration
	// Poll is the safety-net interval for due retries and other servers'
	// jobs. Default 5 seconds.
	Poll time.Duration
	// EmbedWait bounds how long a job waits for its entity's embedding
	// (the embedding stage) before it ends anyway: the entity is stored
	// and keyword-findable, and its embedding follows when the provider
	// answers. Default 2 minutes.
	EmbedWait time.Duration
	// KeepFailed is how long the original bytes of a failed or cancelled
	// job are kept for a retry (INGEST_KEEP_FAILED_DAYS); garbage
	// collection deletes them afterwards, and a retry of an upload then
	// fails saying its content is gone (a URL is fetched again). Default
	// 30 days.
	KeepFailed time.Duration
	// Logger receives operational logs. Default: discard.
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.MaxBytes <= 0 {
		c.MaxBytes = fetch.DefaultMaxBytes
	}
	if c.Fetcher == nil {
		c.Fetcher = fetch.New(fetch.Config{MaxBytes: c.MaxBytes})
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 2
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.Backoff <= 0 {
		c.Backoff = 30 * time.Second
	}
	if c.Lease <= 0 {
		c.Lease = 2 * time.Minute
	}
	if c.Poll <= 0 {
		c.Poll = 5 * time.Second
	}
	if c.EmbedWait <= 0 {
		c.EmbedWait = 2 * time.Minute
	}
	if c.KeepFailed <= 0 {
		c.KeepFailed = 30 * 24 * time.Hour
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Service runs one workspace's ingestion jobs.
type Service struct {
	admin *postgram.Admin
	st    driver.Storage
	ws    string
	cfg   Config
	log   *slog.Logger
	wake  chan struct{}
	// submitting orders a submission's created event before this
	// process's claim of the job (Submit reads, Run's claim writes).
	submitting sync.RWMutex
}

// New returns a service over admin's workspace.
func New(admin *postgram.Admin, cfg Config) (*Service, error) {
	if admin == nil {
		return nil, errors.New("ingest: an admin is required")
	}
	if cfg.Raw == nil {
		return nil, errors.New("ingest: Config.Raw (the raw-content store) is required")
	}
	cfg.defaults()
	return &Service{admin: admin, st: admin.Storage(), ws: admin.Workspace(), cfg: cfg,
		log: cfg.Logger.With("component", "ingest"), wake: make(chan struct{}, 1)}, nil
}

// Input is what to ingest: exactly one of URL, Body (with Filename) or
// Text, and how to file the entity.
type Input struct {
	URL string `json:"url,omitempty"`
	// Body is an upload's content; Filename and ContentType say what it is
	// (the extension decides when the type is missing or generic).
	Body        io.Reader `json:"-"`
	Filename    string    `json:"filename,omitempty"`
	ContentType string    `json:"content_type,omitempty"`
	Text        string    `json:"text,omitempty"`
	// Type of the entity. Default document.
	Type       postgram.EntityType `json:"type,omitempty"`
	Tags       []string            `json:"tags,omitempty"`
	Visibility postgram.Visibility `json:"visibility,omitempty"`
	Owner      string              `json:"owner,omitempty"`
	// Metadata is merged over what extraction finds (title, author, ...).
	Metadata map[string]any `json:"metadata,omitempty"`
}

// request is the job's stored input (Input without the body, which is in
// the raw store under SHA256).
type request struct {
	URL         string              `json:"url,omitempty"`
	Filename    string              `json:"filename,omitempty"`
	ContentType string              `json:"content_type,omitempty"`
	SHA256      string              `json:"sha256,omitempty"`
	Size        int64               `json:"size,omitempty"`
	Type        postgram.EntityType `json:"type"`
	Tags        []string            `json:"tags,omitempty"`
	Visibility  postgram.Visibility `json:"visibility,omitempty"`
	Owner       string              `json:"owner,omitempty"`
	Metadata    map[string]any      `json:"metadata,omitempty"`
}

// state is what a job has done so far.
type state struct {
	SHA256      string `json:"sha256,omitempty"`
	Size        int64  `json:"size,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	FinalURL    string `json:"final_url,omitempty"`
	// Duplicate: the bytes were ingested before; EntityID is that entity.
	Duplicate bool `json:"duplicate,omitempty"`
	// Updated: a URL ingested before changed; its entity was updated.
	Updated bool `json:"updated,omitempty"`
	// Embedding is "completed", "pending" (the wait ran out) or "off".
	Embedding string `json:"embedding,omitempty"`
	Title     string `json:"title,omitempty"`
}

// Job is an ingestion job as callers see it.
type Job struct {
	ID          string           `json:"id"`
	Status      driver.JobStatus `json:"status"`
	Stage       string           `json:"stage"`
	Progress    float64          `json:"progress"`
	Attempts    int              `json:"attempts"`
	MaxAttempts int              `json:"max_attempts"`
	Error       string           `json:"error,omitempty"`
	URL         string           `json:"url,omitempty"`
	Filename    string           `json:"filename,omitempty"`
	SHA256      string           `json:"sha256,omitempty"`
	Size        int64            `json:"size,omitempty"`
	ContentType string           `json:"content_type,omitempty"`
	Title       string           `json:"title,omitempty"`
	EntityID    string           `json:"entity_id,omitempty"`
	Duplicate   bool             `json:"duplicate,omitempty"`
	Updated     bool             `json:"updated,omitempty"`
	Embedding   string           `json:"embedding,omitempty"`
	// CancelRequested: a cancel was asked while the job ran; it stops at
	// its next step.
	CancelRequested bool       `json:"cancel_requested,omitempty"`
	NextAttemptAt   *time.Time `json:"next_attempt_at,omitempty"`
	CreatedAt       time.Time  `json:"created_at"`
	UpdatedAt       time.Time  `json:"updated_at"`
	FinishedAt      *time.Time `json:"finished_at,omitempty"`
}

func view(j *driver.Job) *Job {
	var req request
	var st state
	_ = json.Unmarshal(j.Input, &req)
	_ = json.Unmarshal(j.State, &st)
	out := &Job{ID: j.ID.String(), Status: j.Status, Stage: j.Stage, Progress: j.Progress, Attempts: j.Attempts,
		MaxAttempts: j.MaxAttempts, Error: j.LastError, URL: req.URL, Filename: req.Filename, SHA256: j.SHA256,
		Size: max(st.Size, req.Size), ContentType: st.ContentType, Title: st.Title, Duplicate: st.Duplicate,
		Updated: st.Updated, Embedding: st.Embedding, CancelRequested: j.CancelRequested,
		CreatedAt: j.CreatedAt, UpdatedAt: j.UpdatedAt, FinishedAt: j.FinishedAt}
	if j.EntityID != nil {
		out.EntityID = j.EntityID.String()
	}
	if j.Status == driver.JobQueued && j.Attempts > 0 {
		at := j.RunAt
		out.NextAttemptAt = &at
	}
	return out
}

// Submit validates in, keeps an upload's or text's bytes in the raw store
// and queues the job. The caller needs the write scope and the right to
// write the entity's type and visibility.
func (s *Service) Submit(ctx context.Context, c *postgram.Client, in Input) (*Job, error) {
	req, err := s.check(c, in)
	if err != nil {
		return nil, err
	}
	var body io.Reader
	switch {
	case in.Body != nil:
		body = in.Body
	case in.Text != "":
		body = strings.NewReader(in.Text)
		if req.ContentType == "" {
			req.ContentType = "text/plain"
		}
	}
	if body != nil {
		obj, err := s.cfg.Raw.Put(ctx, io.LimitReader(body, s.cfg.MaxBytes+1))
		if errors.Is(err, raw.ErrTooLarge) {
			return nil, tooLarge(s.cfg.MaxBytes)
		}
		if err != nil {
			return nil, fmt.Errorf("keep the upload: %w", err)
		}
		if obj.Size > s.cfg.MaxBytes {
			return nil, tooLarge(s.cfg.MaxBytes)
		}
		if obj.Size == 0 {
			return nil, invalid("file", "is empty")
		}
		req.SHA256, req.Size = obj.SHA256, obj.Size
	}
	input, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode the job: %w", err)
	}
	j := &driver.Job{ID: uuid.Must(uuid.NewV7()), Kind: Kind, Status: driver.JobQueued, Stage: StageQueued,
		MaxAttempts: s.cfg.MaxAttempts, RunAt: time.Now().UTC(), KeyID: keyID(c), SourceURL: req.URL,
		SHA256: req.SHA256, Input: input}
	// A job's created event comes before anything this process's Run
	// does with it (Run claims under the write side of this lock).
	s.submitting.RLock()
	if err := s.st.CreateJob(ctx, s.ws, j); err != nil {
		s.submitting.RUnlock()
		return nil, fmt.Errorf("queue the job: %w", err)
	}
	s.event(ctx, "job.created", j)
	s.submitting.RUnlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	return view(j), nil
}

// check validates in against the caller's rights.
func (s *Service) check(c *postgram.Client, in Input) (request, error) {
	req := request{URL: strings.TrimSpace(in.URL), Filename: in.Filename, ContentType: in.ContentType, Type: in.Type,
		Tags: in.Tags, Visibility: in.Visibility, Owner: in.Owner, Metadata: in.Metadata}
	n := 0
	for _, set := range []bool{req.URL != "", in.Body != nil, in.Text != ""} {
		if set {
			n++
		}
	}
	if n != 1 {
		return req, invalid("url", "give exactly one of url, a file or text")
	}
	if req.URL != "" {
		low := strings.ToLower(req.URL)
		if !strings.HasPrefix(low, "http://") && !strings.HasPrefix(low, "https://") {
			return req, invalid("url", "must be an http or https URL")
		}
		if len(req.URL) > 4096 {
			return req, invalid("url", "is longer than 4096 characters")
		}
	}
	if len(req.Filename) > 255 {
		return req, invalid("filename", "is longer than 255 characters")
	}
	if req.Type == "" {
		req.Type = postgram.TypeDocument
	}
	if !req.Type.Valid() {
		return req, invalid("type", fmt.Sprintf("%q is not an entity type", req.Type))
	}
	if req.Visibility == "" {
		req.Visibility = postgram.VisibilityShared
	}
	if !req.Visibility.Valid() {
		return req, invalid("visibility", fmt.Sprintf("%q is not a visibility", req.Visibility))
	}
	return req, c.Principal().CanWrite(req.Type, req.Visibility)
}

func keyID(c *postgram.Client) string {
	if p := c.Principal(); p != nil {
		return p.KeyID
	}
	return ""
}

func invalid(field, msg string) error {
	return &postgram.FieldError{Field: field, Message: msg}
}

// ErrTooLarge is wrapped by the error Submit returns for content over
// Config.MaxBytes (REST answers it 413).
var ErrTooLarge = errors.New("content exceeds the ingest size limit")

func tooLarge(max int64) error {
	return fmt.Errorf("%w: %w", ErrTooLarge, &postgram.FieldError{Field: "file",
		Message: fmt.Sprintf("exceeds the ingest limit of %d bytes (INGEST_MAX_BYTES)", max)})
}

// Get returns a job the caller may see (one it submitted; any for an
// unscoped client), or an error wrapping postgram.ErrNotFound.
func (s *Service) Get(ctx context.Context, c *postgram.Client, id uuid.UUID) (*Job, error) {
	j, err := s.get(ctx, c, id)
	if err != nil {
		return nil, err
	}
	return view(j), nil
}

func (s *Service) get(ctx context.Context, c *postgram.Client, id uuid.UUID) (*driver.Job, error) {
	j, err := s.st.GetJob(ctx, s.ws, id)
	if err != nil {
		return nil, err
	}
	if j.Kind != Kind || (c.Principal() != nil && j.KeyID != keyID(c)) {
		return nil, fmt.Errorf("job %s: %w", id, postgram.ErrNotFound)
	}
	return j, nil
}

// ListOptions filters List.
type ListOptions struct {
	Statuses []driver.JobStatus
	// Limit is 1..500, default 50.
	Limit int
	// Before pages: jobs created before this one.
	Before *uuid.UUID
}

// List returns the caller's jobs (every job for an unscoped client),
// newest first.
func (s *Service) List(ctx context.Context, c *postgram.Client, opts ListOptions) ([]*Job, error) {
	if opts.Limit == 0 {
		opts.Limit = 50
	}
	if opts.Limit < 1 || opts.Limit > 500 {
		return nil, invalid("limit", "must be between 1 and 500")
	}
	for i, st := range opts.Statuses {
		if !slices.Contains(driver.JobStatuses, st) {
			return nil, invalid("status", fmt.Sprintf("status[%d] %q is not one of queued, running, done, failed, cancelled", i, st))
		}
	}
	f := driver.JobFilter{Kind: Kind, Statuses: opts.Statuses, Limit: opts.Limit, Before: opts.Before}
	if c.Principal() != nil {
		k := keyID(c)
		f.KeyID = &k
	}
	jobs, err := s.st.ListJobs(ctx, s.ws, f)
	if err != nil {
		return nil, err
	}
	out := make([]*Job, len(jobs))
	for i := range jobs {
		out[i] = view(&jobs[i])
	}
	return out, nil
}

// Retry queues a failed or cancelled job again, with fresh attempts.
func (s *Service) Retry(ctx context.Context, c *postgram.Client, id uuid.UUID) (*Job, error) {
	return s.change(ctx, c, id, func(j *driver.Job) error {
		if j.Status != driver.JobFailed && j.Status != driver.JobCancelled {
			return conflict("job %s is %s; only a failed or cancelled job can be retried", id, j.Status)
		}
		j.Status, j.Stage, j.Progress, j.Attempts, j.LastError = driver.JobQueued, StageQueued, 0, 0, ""
		j.RunAt, j.LeaseUntil, j.FinishedAt, j.CancelRequested = time.Now().UTC(), nil, nil, false
		return nil
	}, true)
}

// Cancel stops a job: a queued one at once, a running one at its next
// step (CancelRequested). A finished job cannot be cancelled.
func (s *Service) Cancel(ctx context.Context, c *postgram.Client, id uuid.UUID) (*Job, error) {
	return s.change(ctx, c, id, func(j *driver.Job) error {
		switch j.Status {
		case driver.JobQueued:
			now := time.Now().UTC()
			j.Status, j.Stage, j.FinishedAt, j.LastError = driver.JobCancelled, string(driver.JobCancelled), &now, "cancelled"
		case driver.JobRunning:
			j.CancelRequested = true
		default:
			return conflict("job %s is %s already", id, j.Status)
		}
		return nil
	}, false)
}

func conflict(format string, args ...any) error {
	return fmt.Errorf(format+": %w", append(args, postgram.ErrConflict)...)
}

// change applies f to the current job, again on a concurrent update.
func (s *Service) change(ctx context.Context, c *postgram.Client, id uuid.UUID, f func(*driver.Job) error, wake bool) (*Job, error) {
	for try := 0; ; try++ {
		j, err := s.get(ctx, c, id)
		if err != nil {
			return nil, err
		}
		if err := f(j); err != nil {
			return nil, err
		}
		err = s.st.UpdateJob(ctx, s.ws, j)
		if errors.Is(err, driver.ErrConflict) && try < 10 {
			continue
		}
		if err != nil {
			return nil, err
		}
		s.event(ctx, "job.updated", j)
		if wake {
			select {
			case s.wake <- struct{}{}:
			default:
			}
		}
		return view(j), nil
	}
}

// Wait returns the job once it has ended (done, failed or cancelled), or
// ctx's error.
func (s *Service) Wait(ctx context.Context, c *postgram.Client, id uuid.UUID) (*Job, error) {
	sig := s.st.EventsSignal(s.ws)
	for {
		j, err := s.Get(ctx, c, id)
		if err != nil {
			return nil, err
		}
		if j.Status.Final() {
			return j, nil
		}
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-sig:
			sig = s.st.EventsSignal(s.ws)
		case <-t.C:
		}
		t.Stop()
	}
}

// event appends a job event (failures are logged: the job is the record).
func (s *Service) event(ctx context.Context, kind string, j *driver.Job) {
	data, _ := json.Marshal(map[string]any{"status": j.Status, "stage": j.Stage, "progress": j.Progress,
		"attempts": j.Attempts, "error": j.LastError, "entity_id": j.EntityID})
	ev := []driver.ChangeEvent{{Kind: kind, JobID: j.ID, KeyID: j.KeyID, Data: data}}
	if err := s.st.AppendEvents(context.WithoutCancel(ctx), s.ws, ev); err != nil {
		s.log.Warn("job event lost", "job", j.ID.String(), "err", err)
	}
}

// Run claims and runs jobs until ctx ends, Concurrency at a time: at once
// when a job is submitted here, on other servers' submissions through the
// store's change feed, and every Poll for retries coming due.
func (s *Service) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if n, ok := s.st.(driver.Notifier); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = n.Listen(ctx, s.ws, func(ev driver.Event) {
				if ev.Kind == driver.EventAppended || ev.Kind == driver.EventConnected {
					select {
					case s.wake <- struct{}{}:
					default:
					}
				}
			})
		}()
	}
	slots := make(chan struct{}, s.cfg.Concurrency)
	poll := time.NewTimer(0)
	defer poll.Stop()
	gc := time.NewTicker(time.Hour)
	defer gc.Stop()
	for {
		select {
		case <-gc.C:
			if _, err := s.CollectGarbage(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("collecting the raw store's garbage failed", "err", err)
			}
			continue
		case <-ctx.Done():
			wg.Wait()
			for range cap(slots) { // wait for running jobs
				slots <- struct{}{}
			}
			return nil
		case <-s.wake:
		case <-poll.C:
		}
		for ctx.Err() == nil {
			free := cap(slots) - len(slots)
			if free == 0 {
				break
			}
			s.submitting.Lock()
			jobs, err := s.st.ClaimJobs(ctx, s.ws, Kind, time.Now().UTC(), s.cfg.Lease, free)
			s.submitting.Unlock()
			if err != nil {
				if ctx.Err() == nil {
					s.log.Warn("claiming ingest jobs failed", "err", err)
				}
				break
			}
			if len(jobs) == 0 {
				break
			}
			for i := range jobs {
				slots <- struct{}{}
				j := jobs[i]
				go func() {
					defer func() {
						<-slots
						select { // a slot is free: look for more
						case s.wake <- struct{}{}:
						default:
						}
					}()
					s.run(ctx, &j)
				}()
			}
		}
		poll.Reset(s.cfg.Poll)
	}
}

// MaxBytes is the largest upload or download a job accepts.
func (s *Service) MaxBytes() int64 { return s.cfg.MaxBytes }
