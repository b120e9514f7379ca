package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/ingest/extract"
	"github.com/postgram-go/postgram/ingest/fetch"
	"github.com/postgram-go/postgram/ingest/raw"
)

var (
	// errCancelled ends a job whose cancel was requested.
	errCancelled = errors.New("cancelled")
	// errLost ends a run whose job another server took over (its lease
	// ran out): that server finishes it.
	errLost = errors.New("the job was taken over by another server")
)

// permanentError is a failure that no retry can mend (a 404, a corrupt
// file, text too long for an entity): the job fails at once.
type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return permanentError{err} }

// runner runs one claimed job.
type runner struct {
	s   *Service
	j   *driver.Job
	req request
	st  state
}

// run runs j to its end (or until its lease is lost or ctx ends).
func (s *Service) run(ctx context.Context, j *driver.Job) {
	r := &runner{s: s, j: j}
	if err := json.Unmarshal(j.Input, &r.req); err != nil {
		r.finish(ctx, permanent(fmt.Errorf("the job's input is unreadable: %v", err)))
		return
	}
	_ = json.Unmarshal(j.State, &r.st)
	s.event(ctx, "job.updated", j) // claimed: running
	err := r.do(ctx)
	r.finish(ctx, err)
}

// save writes the job (stage, progress, state, a renewed lease). When the
// stored job changed meanwhile it reloads it: a cancel request ends the
// run, a job another server took over ends it quietly.
func (r *runner) save(ctx context.Context) error {
	st, _ := json.Marshal(r.st)
	r.j.State = st
	lease := time.Now().UTC().Add(r.s.cfg.Lease)
	r.j.LeaseUntil = &lease
	for try := 0; ; try++ {
		err := r.s.st.UpdateJob(ctx, r.s.ws, r.j)
		if err == nil {
			r.s.event(ctx, "job.updated", r.j)
			return nil
		}
		if !errors.Is(err, driver.ErrConflict) || try > 5 {
			return err
		}
		cur, gerr := r.s.st.GetJob(ctx, r.s.ws, r.j.ID)
		if gerr != nil {
			return gerr
		}
		if cur.Status != driver.JobRunning || cur.Attempts != r.j.Attempts {
			return errLost
		}
		if cur.CancelRequested {
			r.j.Version, r.j.CancelRequested = cur.Version, true
			return errCancelled
		}
		r.j.Version = cur.Version
	}
}

// stage enters a stage.
func (r *runner) stage(ctx context.Context, name string) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	r.j.Stage, r.j.Progress = name, progress[name]
	return r.save(ctx)
}

// do runs the stages.
func (r *runner) do(ctx context.Context) error {
	c, err := r.s.actor(ctx, r.j.KeyID)
	if err != nil {
		return err
	}
	var data []byte
	var contentType, filename string
	if r.req.URL != "" {
		if err := r.stage(ctx, StageFetching); err != nil {
			return err
		}
		res, err := r.s.cfg.Fetcher.Fetch(ctx, r.req.URL)
		if err != nil {
			return fetchError(err)
		}
		data, contentType, filename = res.Body, res.ContentType, res.Filename
		r.st.FinalURL = res.URL
		obj, err := r.s.cfg.Raw.Put(ctx, bytes.NewReader(data))
		if err != nil {
			return fmt.Errorf("keep the original: %w", err)
		}
		r.st.SHA256, r.st.Size = obj.SHA256, obj.Size
	} else {
		if err := r.stage(ctx, StageExtracting); err != nil {
			return err
		}
		rc, err := r.s.cfg.Raw.Open(ctx, r.req.SHA256)
		if errors.Is(err, raw.ErrNotFound) {
			return permanent(errors.New("the uploaded content is gone from the raw store"))
		}
		if err != nil {
			return fmt.Errorf("read the upload: %w", err)
		}
		data, err = io.ReadAll(io.LimitReader(rc, r.s.cfg.MaxBytes+1))
		rc.Close()
		if err != nil {
			return fmt.Errorf("read the upload: %w", err)
		}
		contentType, filename = r.req.ContentType, r.req.Filename
		r.st.SHA256, r.st.Size = r.req.SHA256, int64(len(data))
	}
	if r.req.Filename != "" {
		filename = r.req.Filename
	}
	r.j.SHA256 = r.st.SHA256

	// The same bytes made an entity before: that is the answer.
	if id, ok, err := r.earlier(ctx, c, driver.JobFilter{SHA256: r.st.SHA256}); err != nil {
		return err
	} else if ok {
		r.j.EntityID, r.st.Duplicate = &id, true
		return nil
	}
	// A URL ingested before whose content changed: update its entity.
	var prior *postgram.Entity
	if r.req.URL != "" {
		if id, ok, err := r.earlier(ctx, c, driver.JobFilter{SourceURL: r.req.URL}); err != nil {
			return err
		} else if ok {
			if prior, err = c.Recall(ctx, id); err != nil {
				return err
			}
		}
	}

	if r.j.Stage != StageExtracting { // an upload entered it to read its bytes
		if err := r.stage(ctx, StageExtracting); err != nil {
			return err
		}
	}
	doc, err := extract.Extract(data, contentType, filename)
	if err != nil {
		return permanent(err)
	}
	r.st.ContentType, r.st.Title = doc.ContentType, doc.Title

	if err := r.stage(ctx, StageChunking); err != nil {
		return err
	}
	content := render(doc)
	if len(content) > postgram.MaxContentBytes {
		return permanent(fmt.Errorf("the extracted text is %d bytes; an entity holds at most %d (split the document)", len(content), postgram.MaxContentBytes))
	}
	meta := r.metadata(doc, filename)
	var e *postgram.Entity
	if prior != nil {
		e = prior
		if prior.Content != content {
			e, err = c.Update(ctx, prior.ID, postgram.UpdateInput{Version: prior.Version, Content: &content, Metadata: meta})
			if err != nil {
				return fmt.Errorf("update the entity of %s: %w", r.req.URL, err)
			}
		}
		r.st.Updated = true
	} else {
		// The job's id is the entity's: a job resumed after its server died
		// finds the entity that server wrote instead of writing another.
		e, err = c.Store(ctx, postgram.StoreInput{ID: r.j.ID, Type: r.req.Type, Content: content, Visibility: r.req.Visibility,
			Owner: r.req.Owner, Tags: r.req.Tags, Source: r.req.URL, Metadata: meta})
		if errors.Is(err, postgram.ErrConflict) {
			e, err = c.Recall(ctx, r.j.ID)
		}
		if err != nil {
			var fe *postgram.FieldError
			if errors.As(err, &fe) {
				return permanent(err)
			}
			return fmt.Errorf("store the entity: %w", err)
		}
	}
	r.j.EntityID = &e.ID

	admin := r.s.admin.Client()
	if err := r.stage(ctx, StageEmbedding); err != nil {
		return err
	}
	if r.s.admin.Embedder() == nil {
		r.st.Embedding = "off"
	} else {
		got, err := r.waitFor(ctx, admin, e.ID, func(e *postgram.Entity) bool { return e.EnrichmentStatus != postgram.StagePending })
		if err != nil {
			return err
		}
		r.st.Embedding = "pending"
		if got != nil {
			r.st.Embedding = string(got.EnrichmentStatus)
		}
	}
	if r.s.admin.ExtractionEnabled() {
		if err := r.stage(ctx, StageLinking); err != nil {
			return err
		}
		if _, err := r.waitFor(ctx, admin, e.ID, func(e *postgram.Entity) bool { return e.ExtractionStatus != postgram.StagePending }); err != nil {
			return err
		}
	}
	return nil
}

// waitFor polls the entity until ok holds (returning it) or EmbedWait
// passes (returning nil), renewing the lease as it goes.
func (r *runner) waitFor(ctx context.Context, c *postgram.Client, id uuid.UUID, ok func(*postgram.Entity) bool) (*postgram.Entity, error) {
	deadline := time.Now().Add(r.s.cfg.EmbedWait)
	renew := time.Now().Add(r.s.cfg.Lease / 3)
	wait := 20 * time.Millisecond
	for {
		e, err := c.Recall(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok(e) {
			return e, nil
		}
		if time.Now().After(deadline) {
			return nil, nil
		}
		if time.Now().After(renew) {
			if err := r.save(ctx); err != nil {
				return nil, err
			}
			renew = time.Now().Add(r.s.cfg.Lease / 3)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, 500*time.Millisecond)
	}
}

// earlier finds the entity a finished ingestion matching f made, if the
// caller can still read it and it is not archived.
func (r *runner) earlier(ctx context.Context, c *postgram.Client, f driver.JobFilter) (uuid.UUID, bool, error) {
	f.Kind, f.Statuses, f.Limit = Kind, []driver.JobStatus{driver.JobDone}, 20
	jobs, err := r.s.st.ListJobs(ctx, r.s.ws, f)
	if err != nil {
		return uuid.Nil, false, err
	}
	for _, j := range jobs {
		if j.ID == r.j.ID || j.EntityID == nil {
			continue
		}
		e, err := c.Recall(ctx, *j.EntityID)
		if errors.Is(err, postgram.ErrNotFound) || errors.Is(err, postgram.ErrForbidden) {
			continue
		}
		if err != nil {
			return uuid.Nil, false, err
		}
		if e.Status != postgram.StatusArchived {
			return e.ID, true, nil
		}
	}
	return uuid.Nil, false, nil
}

// metaKeyRE is what the library accepts as a metadata key's part.
var metaKeyBad = regexp.MustCompile(`[^a-z_]+`)

// metadata is the entity's metadata: what extraction found, then the
// ingestion's facts, then the caller's own.
func (r *runner) metadata(doc *extract.Document, filename string) map[string]any {
	meta := map[string]any{}
	if b, err := json.Marshal(doc.Metadata); err == nil && len(b) <= 8<<10 {
		for k, v := range doc.Metadata {
			k = strings.Trim(metaKeyBad.ReplaceAllString(strings.ToLower(k), "_"), "_")
			if k != "" && len(k) <= 40 {
				meta[k] = v
			}
		}
	}
	set := func(k string, v any) {
		if s, ok := v.(string); ok && s == "" {
			return
		}
		meta[k] = v
	}
	set("title", doc.Title)
	set("author", doc.Author)
	if !doc.Published.IsZero() {
		set("published", doc.Published.UTC().Format(time.DateOnly))
	}
	set("source_url", r.req.URL)
	if r.st.FinalURL != "" && r.st.FinalURL != r.req.URL {
		set("final_url", r.st.FinalURL)
	}
	set("filename", filename)
	set("content_type", doc.ContentType)
	set("bytes", r.st.Size)
	set("sha256", r.st.SHA256)
	set("ingest_job", r.j.ID.String())
	for k, v := range r.req.Metadata {
		meta[k] = v
	}
	return meta
}

// render writes the document as Markdown: the title as the top heading,
// each section under the headings of its path (so the chunker's
// boundaries and the reader both see the structure).
func render(doc *extract.Document) string {
	var b strings.Builder
	if doc.Title != "" {
		b.WriteString("# " + oneLine(doc.Title) + "\n\n")
	}
	var prev []string
	for _, sec := range doc.Sections {
		path := sec.Path
		if len(path) > 0 && doc.Title != "" && path[0] == doc.Title {
			path = path[1:]
		}
		common := 0
		for common < len(prev) && common < len(path) && prev[common] == path[common] {
			common++
		}
		for i := common; i < len(path); i++ {
			b.WriteString(strings.Repeat("#", min(i+2, 6)) + " " + oneLine(path[i]) + "\n\n")
		}
		b.WriteString(strings.TrimSpace(sec.Text))
		b.WriteString("\n\n")
		prev = path
	}
	return strings.TrimSpace(b.String())
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// fetchError classifies a download failure: refused URLs, client errors
// and oversized bodies fail the job at once; the rest may pass.
func fetchError(err error) error {
	var se *fetch.StatusError
	if errors.As(err, &se) && se.Code >= 400 && se.Code < 500 && se.Code != 408 && se.Code != 429 {
		return permanent(err)
	}
	switch {
	case errors.Is(err, fetch.ErrScheme), errors.Is(err, fetch.ErrForbidden), errors.Is(err, fetch.ErrTooLarge),
		errors.Is(err, fetch.ErrRedirects), errors.Is(err, fetch.ErrInvalidURL):
		return permanent(err)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return permanent(err)
	}
	return err
}

// finish records how the run ended.
func (r *runner) finish(ctx context.Context, err error) {
	if errors.Is(err, errLost) {
		return
	}
	shutdown := err != nil && ctx.Err() != nil && !errors.Is(err, errCancelled)
	ctx = context.WithoutCancel(ctx)
	now := time.Now().UTC()
	st, _ := json.Marshal(r.st)
	for try := 0; ; try++ {
		j := r.j
		j.State, j.LeaseUntil = st, nil
		switch {
		case shutdown:
			// The server is stopping: queue the job again at once, the
			// interrupted attempt not counted (what it wrote is found again).
			j.Status, j.Stage, j.RunAt, j.Attempts = driver.JobQueued, StageQueued, now, max(j.Attempts-1, 0)
		case err == nil:
			j.Status, j.Stage, j.Progress, j.LastError, j.FinishedAt = driver.JobDone, string(driver.JobDone), 1, "", &now
		case errors.Is(err, errCancelled):
			j.Status, j.Stage, j.LastError, j.FinishedAt = driver.JobCancelled, string(driver.JobCancelled), "cancelled", &now
		case isPermanent(err) || j.Attempts >= j.MaxAttempts:
			j.Status, j.Stage, j.LastError, j.FinishedAt = driver.JobFailed, string(driver.JobFailed), message(err), &now
		default:
			wait := r.s.cfg.Backoff << min(max(j.Attempts-1, 0), 10)
			j.Status, j.Stage, j.LastError, j.RunAt = driver.JobQueued, StageQueued, message(err), now.Add(wait)
		}
		uerr := r.s.st.UpdateJob(ctx, r.s.ws, j)
		if uerr == nil {
			r.s.event(ctx, "job.updated", j)
			if j.Status == driver.JobFailed {
				r.s.log.Warn("ingest job failed", "job", j.ID.String(), "attempts", j.Attempts, "err", j.LastError)
			}
			return
		}
		if !errors.Is(uerr, driver.ErrConflict) || try > 5 {
			r.s.log.Error("recording the end of an ingest job failed", "job", j.ID.String(), "err", uerr)
			return
		}
		cur, gerr := r.s.st.GetJob(ctx, r.s.ws, j.ID)
		if gerr != nil || cur.Status != driver.JobRunning || cur.Attempts != j.Attempts {
			return
		}
		if cur.CancelRequested && err != nil {
			err = errCancelled
		}
		j.Version = cur.Version
	}
}

func isPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// message is the error as the job shows it.
func message(err error) string {
	s := err.Error()
	if len(s) > 1000 {
		s = s[:1000]
	}
	return s
}

// actor is the client a job runs as: the key that submitted it (refused
// when that key was revoked or expired since), or the unscoped client.
func (s *Service) actor(ctx context.Context, keyID string) (*postgram.Client, error) {
	if keyID == "" {
		return s.admin.Client(), nil
	}
	keys, err := s.admin.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	for i := range keys {
		k := &keys[i]
		if k.ID.String() != keyID {
			continue
		}
		if k.RevokedAt != nil || (k.ExpiresAt != nil && !k.ExpiresAt.After(time.Now())) {
			return nil, permanent(fmt.Errorf("the API key that submitted the job was revoked or expired: %w", postgram.ErrForbidden))
		}
		return s.admin.As(postgram.KeyPrincipal(k)), nil
	}
	return nil, permanent(fmt.Errorf("the API key that submitted the job no longer exists: %w", postgram.ErrForbidden))
}
