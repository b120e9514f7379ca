package api

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

// --- knowledge graph ----------------------------------------------------

// GraphQuery holds the parameters of GET /api/entities/{id}/graph.
type GraphQuery struct {
	Depth         int
	RelationTypes []string
	MinConfidence float64
	MaxNodes      int
}

// Link creates or updates an edge (POST /api/edges).
func (c *Client) Link(ctx context.Context, in wire.LinkRequest) (*postgram.Edge, []byte, error) {
	var out wire.EdgeResponse
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
func (c *Client) Unlink(ctx context.Context, id string) (*wire.DeleteResponse, []byte, error) {
	var out wire.DeleteResponse
	raw, err := c.do(ctx, http.MethodDelete, "/api/edges/"+url.PathEscape(id), nil, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// Expand fetches an entity's neighbourhood (GET /api/entities/{id}/graph).
func (c *Client) Expand(ctx context.Context, id string, q GraphQuery) (*wire.Graph, []byte, error) {
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
	var out wire.Graph
	raw, err := c.do(ctx, http.MethodGet, entityPath(id)+"/graph", v, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

type missingField string

func (m missingField) Error() string { return "the response has no " + string(m) }

func errMissing(field string) error { return missingField(field) }
