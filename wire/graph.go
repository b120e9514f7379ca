package wire

import (
	"github.com/postgram-go/postgram"
)

// LinkRequest is the body of POST /api/edges.
type LinkRequest struct {
	SourceID   string         `json:"source_id"`
	TargetID   string         `json:"target_id"`
	Relation   string         `json:"relation"`
	Confidence *float64       `json:"confidence,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// EdgeResponse is {edge}: the answer of POST /api/edges.
type EdgeResponse struct {
	Edge *postgram.Edge `json:"edge"`
}

// EdgeList is {edges}: the answer of GET /api/entities/{id}/edges.
type EdgeList struct {
	Edges []postgram.Edge `json:"edges"`
}

// Graph is {entities, edges, truncated?}: the answer of GET
// /api/entities/{id}/graph.
type Graph struct {
	Entities  []*postgram.Entity `json:"entities"`
	Edges     []postgram.Edge    `json:"edges"`
	Truncated bool               `json:"truncated,omitempty"`
}
