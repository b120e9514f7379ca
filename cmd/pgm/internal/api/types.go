package api

import (
	"encoding/json"
	"time"

	"github.com/postgram-go/postgram"
)

// Entity is the wire shape of an entity (DESIGN.md §8). Metadata numbers
// are decoded as json.Number, so they round-trip exactly.
type Entity struct {
	ID                 string         `json:"id"`
	Type               string         `json:"type"`
	Content            string         `json:"content"`
	Visibility         string         `json:"visibility"`
	Owner              string         `json:"owner"`
	Status             string         `json:"status"`
	Tags               []string       `json:"tags"`
	Source             string         `json:"source"`
	Metadata           map[string]any `json:"metadata"`
	Version            int64          `json:"version"`
	EnrichmentStatus   string         `json:"enrichment_status"`
	EnrichmentError    string         `json:"enrichment_error,omitempty"`
	ExtractionStatus   string         `json:"extraction_status,omitempty"`
	ExtractionError    string         `json:"extraction_error,omitempty"`
	CreatedAt          time.Time      `json:"created_at"`
	UpdatedAt          time.Time      `json:"updated_at"`
	EnrichmentAttempts int            `json:"enrichment_attempts,omitempty"`
	ExtractionAttempts int            `json:"extraction_attempts,omitempty"`
}

// entityEnvelope is the {entity} wrapper of single-entity responses.
type entityEnvelope struct {
	Entity *Entity `json:"entity"`
}

// StoreRequest is the body of POST /api/entities.
type StoreRequest struct {
	Type       string         `json:"type"`
	Content    string         `json:"content"`
	Visibility string         `json:"visibility,omitempty"`
	Owner      string         `json:"owner,omitempty"`
	Status     string         `json:"status,omitempty"`
	Tags       []string       `json:"tags,omitempty"`
	Source     string         `json:"source,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// UpdateRequest is the body of PATCH /api/entities/{id}. Nil fields are
// left unchanged; Metadata is shallow-merged by the server.
type UpdateRequest struct {
	Version    int64          `json:"version"`
	Content    *string        `json:"content,omitempty"`
	Visibility *string        `json:"visibility,omitempty"`
	Owner      *string        `json:"owner,omitempty"`
	Status     *string        `json:"status,omitempty"`
	Tags       *[]string      `json:"tags,omitempty"`
	Source     *string        `json:"source,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// DeleteResponse is the answer of DELETE /api/entities/{id}.
type DeleteResponse struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// ListQuery holds the filters of GET /api/entities. Zero values are not
// sent, so the server's defaults apply.
type ListQuery struct {
	Type            string
	Status          string
	Visibility      string
	Owner           string
	MemoryRole      string
	Tags            []string
	Limit           int
	Offset          int
	IncludeArchived bool
}

// ListResponse is a page of entities.
type ListResponse struct {
	Items  []*Entity `json:"items"`
	Total  int       `json:"total"`
	Limit  int       `json:"limit"`
	Offset int       `json:"offset"`
}

// SearchRequest is the body of POST /api/search.
type SearchRequest struct {
	Query           string   `json:"query"`
	Type            string   `json:"type,omitempty"`
	Tags            []string `json:"tags,omitempty"`
	Visibility      string   `json:"visibility,omitempty"`
	Owner           string   `json:"owner,omitempty"`
	MemoryRole      string   `json:"memory_role,omitempty"`
	Limit           int      `json:"limit,omitempty"`
	Threshold       *float64 `json:"threshold,omitempty"`
	RecencyWeight   *float64 `json:"recency_weight,omitempty"`
	ExpandGraph     bool     `json:"expand_graph,omitempty"`
	IncludeArchived bool     `json:"include_archived,omitempty"`
	Ranking         string   `json:"ranking,omitempty"`
	Explain         bool     `json:"explain,omitempty"`
}

// SearchResponse is the answer of POST /api/search.
type SearchResponse struct {
	Results  []SearchResult `json:"results"`
	Degraded []Degradation  `json:"degraded,omitempty"`
}

// Degradation names a search branch that could not run.
type Degradation struct {
	Component string `json:"component"`
	Reason    string `json:"reason"`
}

// UnmarshalJSON accepts both {component, reason} objects and bare strings
// ("vector"), the reference server's form.
func (d *Degradation) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*d = Degradation{Component: s}
		return nil
	}
	type plain Degradation
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*d = Degradation(p)
	return nil
}

// SearchResult is one ranked entity.
type SearchResult struct {
	Entity       *Entity      `json:"entity"`
	ChunkContent string       `json:"chunk_content"`
	Similarity   *float64     `json:"similarity"`
	Score        float64      `json:"score"`
	RecencyScore *float64     `json:"recency_score,omitempty"`
	Edges        *EdgeSummary `json:"edges,omitempty"`
	Related      []Related    `json:"related,omitempty"`
	// Explain is the library's own type: the server sends it as is.
	Explain *postgram.Explanation `json:"explain,omitempty"`
}

// EdgeSummary counts a result's edges by relation.
type EdgeSummary struct {
	Count     int             `json:"count"`
	Relations []RelationCount `json:"relations"`
}

// RelationCount is the number of edges with one relation.
type RelationCount struct {
	Relation string `json:"relation"`
	Count    int    `json:"count"`
}

// Related is a 1-hop neighbour of a search result.
type Related struct {
	Entity    *Entity `json:"entity"`
	Relation  string  `json:"relation"`
	Direction string  `json:"direction"`
}

// QueueQuery holds the options of GET /api/queue.
type QueueQuery struct {
	IncludeFailures bool
	FailureLimit    int // 0: the server's default
}

// QueueResponse is the answer of GET /api/queue.
type QueueResponse struct {
	Embedding  EmbeddingQueue   `json:"embedding"`
	Extraction *ExtractionQueue `json:"extraction"`
	Failures   []QueueFailure   `json:"failures,omitempty"`
}

// EmbeddingQueue counts entities by embedding state.
type EmbeddingQueue struct {
	Pending           int      `json:"pending"`
	Completed         int      `json:"completed"`
	Failed            int      `json:"failed"`
	RetryEligible     int      `json:"retry_eligible"`
	OldestPendingSecs *float64 `json:"oldest_pending_secs"`
}

// ExtractionQueue counts entities by extraction state.
type ExtractionQueue struct {
	Pending   int `json:"pending"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Skipped   int `json:"skipped"`
}

// QueueFailure is a recent enrichment failure.
type QueueFailure struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Kind      string    `json:"kind"`
	Error     string    `json:"error"`
	Path      string    `json:"path,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}
