package wire

import (
	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/feed"
	"github.com/postgram-go/postgram/ingest"
)

// IngestRequest is the JSON body of POST /api/ingest (a multipart upload
// carries the same fields as form fields before its "file" part, with
// metadata as a JSON object): exactly one of url and text.
type IngestRequest struct {
	URL         string         `json:"url,omitempty"`
	Text        string         `json:"text,omitempty"`
	Filename    string         `json:"filename,omitempty"`
	ContentType string         `json:"content_type,omitempty"`
	Type        string         `json:"type,omitempty"`
	Tags        StringList     `json:"tags,omitempty"`
	Visibility  string         `json:"visibility,omitempty"`
	Owner       string         `json:"owner,omitempty"`
	Metadata    map[string]any `json:"metadata,omitempty"`
}

// Input converts the body to the ingest service's Input.
func (r IngestRequest) Input() ingest.Input {
	return ingest.Input{URL: r.URL, Text: r.Text, Filename: r.Filename, ContentType: r.ContentType,
		Type: postgram.EntityType(r.Type), Tags: r.Tags, Visibility: postgram.Visibility(r.Visibility),
		Owner: r.Owner, Metadata: r.Metadata}
}

// JobResponse is {job}: the answer of the single-job routes.
type JobResponse struct {
	Job *ingest.Job `json:"job"`
}

// JobList is the answer of GET /api/jobs, newest first; pass the last
// job's id as before for the next page.
type JobList struct {
	Jobs []*ingest.Job `json:"jobs"`
}

// Event is one live event (GET /api/events, the WebSocket, pgm watch).
type Event = feed.Event
