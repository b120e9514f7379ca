package mcp

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/wire"
)

// ingestTools are the ingestion tools, registered when the server has an
// ingest service (Config.Ingest or Config.IngestFor); svcOf finds the one
// of the caller's workspace.
func ingestTools(of func(context.Context, *postgram.Client) (*ingest.Service, error)) []toolSpec {
	svcOf := func(ctx context.Context, c *postgram.Client) (*ingest.Service, error) {
		svc, err := of(ctx, c)
		if err == nil && svc == nil {
			err = fmt.Errorf("ingestion is not configured on this server: %w", postgram.ErrUnavailable)
		}
		return svc, err
	}
	return []toolSpec{{
		Name:  "ingest",
		Title: "Ingest a web page or text",
		Description: "Fetch a URL (HTML main content, PDF, EPUB, Markdown, plain text, JSON or YAML) or take text, and store it " +
			"as an entity through a background job: extracted, chunked along its headings, embedded. The same content " +
			"ingested again returns the entity it made; a page whose content changed updates its entity. " +
			"Returns the job {id, status, stage, progress, entity_id, error}; with wait_seconds it waits up to that long " +
			"for the job to end. Follow a job with ingest_status.",
		Params: []param{
			{Name: "url", Kind: kindString, Description: "An http or https URL to fetch. Give url or text."},
			{Name: "text", Kind: kindString, Description: "Text or Markdown to ingest as is (front matter becomes metadata)."},
			{Name: "filename", Kind: kindString, Description: "Names the text (its extension picks the format, e.g. notes.md)."},
			{Name: "type", Kind: kindString, Enum: strs(postgram.EntityTypes), Description: "Entity type (default document)."},
			tagsParam, visibilityParam, ownerParam,
			{Name: "metadata", Kind: kindObject, Description: "Merged over what extraction finds (title, author, published, source_url, ...)."},
			{Name: "wait_seconds", Kind: kindInteger, Min: ptr(0), Max: ptr(60),
				Description: "Wait up to this many seconds (0..60, default 0) for the job to end before answering."},
		},
		Handler: func(ctx context.Context, c *postgram.Client, a args) (reply, error) {
			in := ingest.Input{Owner: str(a, "owner"), Filename: str(a, "filename"), Type: postgram.EntityType(str(a, "type")),
				Visibility: postgram.Visibility(str(a, "visibility"))}
			in.URL, _ = a.str("url")
			in.Text, _ = a.str("text")
			in.Tags, _ = a.strings("tags")
			in.Metadata, _ = a.object("metadata")
			svc, err := svcOf(ctx, c)
			if err != nil {
				return reply{}, err
			}
			job, err := svc.Submit(ctx, c, in)
			if err != nil {
				return reply{}, err
			}
			if w, ok := a.int("wait_seconds"); ok && w > 0 {
				wctx, cancel := context.WithTimeout(ctx, time.Duration(w)*time.Second)
				defer cancel()
				if done, err := svc.Wait(wctx, c, uuid.MustParse(job.ID)); err == nil {
					job = done
				} else if ctx.Err() != nil {
					return reply{}, ctx.Err()
				} else if got, err := svc.Get(ctx, c, uuid.MustParse(job.ID)); err == nil {
					job = got // still running: its progress so far
				}
			}
			return reply{Compact: job, Full: wire.JobResponse{Job: job}}, nil
		},
	}, {
		Name:        "ingest_status",
		Title:       "Ingestion job status",
		Description: "Report an ingestion job: status (queued, running, done, failed, cancelled), stage, progress, attempts, the last error, and the entity it wrote (entity_id).",
		Params:      []param{{Name: "id", Kind: kindString, Required: true, Description: "The job's id, as ingest returned it."}},
		ReadOnly:    true,
		Idempotent:  true,
		Handler: func(ctx context.Context, c *postgram.Client, a args) (reply, error) {
			s, _ := a.str("id")
			id, err := postgram.ParseID("id", s)
			if err != nil {
				return reply{}, err
			}
			svc, err := svcOf(ctx, c)
			if err != nil {
				return reply{}, err
			}
			job, err := svc.Get(ctx, c, id)
			if err != nil {
				return reply{}, err
			}
			return reply{Compact: job, Full: wire.JobResponse{Job: job}}, nil
		},
	}}
}

func str(a args, name string) string {
	s, _ := a.str(name)
	return s
}
