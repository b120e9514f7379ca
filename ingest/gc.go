package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
)

// CollectGarbage deletes the original bytes no entity or retry needs any
// more: bytes whose every ingestion either ended done with an entity that
// has since been purged or failed (or was cancelled) longer ago than
// Config.KeepFailed. Bytes of a live job, of a recently failed or
// cancelled one (it may be retried) and of an existing entity stay. It
// returns how many objects it deleted. The server runs it hourly;
// pgm-admin purge runs it after a purge.
func (s *Service) CollectGarbage(ctx context.Context) (int, error) {
	keep := map[string]bool{}
	owners := map[string][]uuid.UUID{} // digest -> entities of its done jobs (none: only expired failures)
	expired := time.Now().Add(-s.cfg.KeepFailed)
	err := s.eachJob(ctx, func(j *driver.Job) {
		sha := j.SHA256
		if sha == "" {
			return
		}
		switch {
		case j.Status == driver.JobDone && j.EntityID != nil:
			owners[sha] = append(owners[sha], *j.EntityID)
		case (j.Status == driver.JobFailed || j.Status == driver.JobCancelled) &&
			j.FinishedAt != nil && j.FinishedAt.Before(expired):
			if _, ok := owners[sha]; !ok {
				owners[sha] = nil // a candidate that no entity needs
			}
		default:
			keep[sha] = true
		}
	})
	if err != nil {
		return 0, err
	}
	var ids []uuid.UUID
	for sha, es := range owners {
		if !keep[sha] {
			ids = append(ids, es...)
		}
	}
	alive := map[uuid.UUID]bool{}
	for start := 0; start < len(ids); start += 500 {
		ents, err := s.st.GetEntities(ctx, s.ws, ids[start:min(start+500, len(ids))])
		if err != nil {
			return 0, fmt.Errorf("check the entities: %w", err)
		}
		for _, e := range ents {
			alive[e.ID] = true
		}
	}
	n := 0
	for sha, es := range owners {
		if keep[sha] {
			continue
		}
		needed := false
		for _, id := range es {
			needed = needed || alive[id]
		}
		if needed {
			continue
		}
		if err := s.cfg.Raw.Delete(ctx, sha); err != nil {
			return n, fmt.Errorf("delete raw %s: %w", sha, err)
		}
		n++
	}
	if n > 0 {
		s.log.Info("deleted original bytes no entity or retry needs", "objects", n)
	}
	return n, nil
}

// DeleteWorkspace removes the workspace's original bytes around the
// deletion of its rows (package workspaces' Delete): it lists the digests
// the workspace's jobs name, runs deleteRows (the store's
// DeleteWorkspace), and then deletes those objects, so that a deletion
// that fails leaves every byte in place. Give each workspace its own part
// of the raw store (raw.Sub): the same bytes ingested by another workspace
// are its own object then. It returns how many objects it deleted.
func (s *Service) DeleteWorkspace(ctx context.Context, deleteRows func(context.Context) error) (int, error) {
	digests := map[string]bool{}
	err := s.eachJob(ctx, func(j *driver.Job) {
		if j.SHA256 != "" {
			digests[j.SHA256] = true
		}
	})
	if err != nil {
		return 0, err
	}
	if err := deleteRows(ctx); err != nil {
		return 0, err
	}
	n := 0
	for sha := range digests {
		if err := s.cfg.Raw.Delete(ctx, sha); err != nil {
			return n, fmt.Errorf("delete raw %s: %w", sha, err)
		}
		n++
	}
	return n, nil
}

// eachJob calls f with every ingestion job of the workspace, newest first,
// reading them 500 at a time.
func (s *Service) eachJob(ctx context.Context, f func(*driver.Job)) error {
	var before *uuid.UUID
	for {
		jobs, err := s.st.ListJobs(ctx, s.ws, driver.JobFilter{Kind: Kind, Limit: 500, Before: before})
		if err != nil {
			return fmt.Errorf("list jobs: %w", err)
		}
		for i := range jobs {
			f(&jobs[i])
		}
		if len(jobs) < 500 {
			return nil
		}
		before = &jobs[len(jobs)-1].ID
	}
}
