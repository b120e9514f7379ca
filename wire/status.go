package wire

import (
	"github.com/postgram-go/postgram/backup"
	"github.com/postgram-go/postgram/driver"
)

// QueueResponse is the answer of GET /api/queue: the library's
// QueueStatus, except that failures is present (possibly empty) exactly
// when include_failures is true and extraction is null when extraction is
// not configured.
type QueueResponse struct {
	Embedding  driver.EmbeddingQueue   `json:"embedding"`
	Extraction *driver.ExtractionQueue `json:"extraction"`
	Failures   *[]driver.QueueFailure  `json:"failures,omitempty"`
}

// NewQueueResponse builds the wire answer from the library's status;
// failures is present exactly when includeFailures is set.
func NewQueueResponse(st driver.QueueStatus, includeFailures bool) QueueResponse {
	resp := QueueResponse{Embedding: st.Embedding, Extraction: st.Extraction}
	if includeFailures {
		f := st.Failures
		if f == nil {
			f = []driver.QueueFailure{}
		}
		resp.Failures = &f
	}
	return resp
}

// Health is the body of GET /health. It is open, so it carries states,
// never the store's or the provider's error text (which can echo user
// content).
type Health struct {
	Status    string          `json:"status"` // ok, degraded or unavailable
	Version   string          `json:"version"`
	Store     StoreHealth     `json:"store"`
	Embedding EmbeddingHealth `json:"embedding"`
	// Warnings are the server's standing configuration warnings (for
	// example plain HTTP on a non-loopback address); absent when none.
	Warnings []string `json:"warnings,omitempty"`
	// Backup is the scheduled backups' state (no error text); absent when
	// they are off.
	Backup *backup.Status `json:"backup,omitempty"`
}

// StoreHealth is the store's state in /health.
type StoreHealth struct {
	Name  string `json:"name"`
	State string `json:"state"` // ok, read_only or unavailable
}

// EmbeddingHealth is the embedding provider's state in /health.
type EmbeddingHealth struct {
	State string `json:"state"` // ok, unknown, failing or disabled
	Model string `json:"model,omitempty"`
}

// Backups is the body of GET /api/admin/backups.
type Backups struct {
	Schedule *backup.Status         `json:"schedule"`
	Items    []backup.ScheduledFile `json:"items"`
}
