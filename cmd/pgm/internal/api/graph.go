package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// --- knowledge graph ----------------------------------------------------

// Edge is an edge as the server returns it.
type Edge struct {
	ID            string         `json:"id"`
	SourceID      string         `json:"source_id"`
	TargetID      string         `json:"target_id"`
	Relation      string         `json:"relation"`
	Confidence    float64        `json:"confidence"`
	Source        string         `json:"source"`
	Metadata      map[string]any `json:"metadata,omitempty"`
	OriginID      string         `json:"origin_id,omitempty"`
	Provider      string         `json:"provider,omitempty"`
	Model         string         `json:"model,omitempty"`
	PromptVersion string         `json:"prompt_version,omitempty"`
	CreatedAt     time.Time      `json:"created_at,omitzero"`
}

// LinkRequest is the body of POST /api/edges.
type LinkRequest struct {
	SourceID   string         `json:"source_id"`
	TargetID   string         `json:"target_id"`
	Relation   string         `json:"relation"`
	Confidence *float64       `json:"confidence,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Graph is the answer of GET /api/entities/{id}/graph.
type Graph struct {
	Entities  []Entity `json:"entities"`
	Edges     []Edge   `json:"edges"`
	Truncated bool     `json:"truncated,omitempty"`
}

// GraphQuery holds the parameters of GET /api/entities/{id}/graph.
type GraphQuery struct {
	Depth         int
	RelationTypes []string
	MinConfidence float64
	MaxNodes      int
}

// Link creates or updates an edge (POST /api/edges).
func (c *Client) Link(ctx context.Context, in LinkRequest) (*Edge, []byte, error) {
	var out struct {
		Edge *Edge `json:"edge"`
	}
	raw, err := c.do(ctx, http.MethodPost, "/api/edges", nil, in, &out)
	if err != nil {
		return nil, nil, err
	}
	if out.Edge == nil {
		return nil, nil, &ProtocolError{Err: errMissing("edge")}
	}
	return out.Edge, raw, nil
}

// Unlink deletes an edge (DELETE /api/edges/{id}).
func (c *Client) Unlink(ctx context.Context, id string) (*DeleteResponse, []byte, error) {
	var out DeleteResponse
	raw, err := c.do(ctx, http.MethodDelete, "/api/edges/"+url.PathEscape(id), nil, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// Expand fetches an entity's neighbourhood (GET /api/entities/{id}/graph).
func (c *Client) Expand(ctx context.Context, id string, q GraphQuery) (*Graph, []byte, error) {
	v := url.Values{}
	if q.Depth > 0 {
		v.Set("depth", strconv.Itoa(q.Depth))
	}
	if len(q.RelationTypes) > 0 {
		v.Set("relation_types", strings.Join(q.RelationTypes, ","))
	}
	if q.MinConfidence > 0 {
		v.Set("min_confidence", strconv.FormatFloat(q.MinConfidence, 'f', -1, 64))
	}
	if q.MaxNodes > 0 {
		v.Set("max_nodes", strconv.Itoa(q.MaxNodes))
	}
	var out Graph
	raw, err := c.do(ctx, http.MethodGet, entityPath(id)+"/graph", v, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

type missingField string

func (m missingField) Error() string { return "the response has no " + string(m) }

func errMissing(field string) error { return missingField(field) }
