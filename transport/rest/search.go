package rest

import (
	"encoding/json"
	"net/http"

	"github.com/postgram-go/postgram"
)

func (s *Server) searchRoutes() {
	s.api.HandleFunc("/api/search", s.search).Methods(http.MethodPost)
}

// searchRequest is the body of POST /api/search. type and visibility take
// one string or an array of strings.
type searchRequest struct {
	Query           string          `json:"query"`
	Type            json.RawMessage `json:"type"`
	Tags            []string        `json:"tags"`
	Visibility      json.RawMessage `json:"visibility"`
	Owner           string          `json:"owner"`
	MemoryRole      string          `json:"memory_role"`
	Limit           int             `json:"limit"`
	Threshold       *float64        `json:"threshold"`
	RecencyWeight   float64         `json:"recency_weight"`
	ExpandGraph     bool            `json:"expand_graph"`
	IncludeArchived bool            `json:"include_archived"`
	IncludeContent  *bool           `json:"include_content"`
	Strategy        string          `json:"strategy"`
	Ranking         string          `json:"ranking"`
	Explain         bool            `json:"explain"`
}

// search answers with the library's SearchResponse JSON: {results,
// degraded?, stats}.
func (s *Server) search(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	if err := params(r).err; err != nil {
		s.writeError(w, r, err)
		return
	}
	var req searchRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	types, err := stringOrList("type", req.Type)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	vis, err := stringOrList("visibility", req.Visibility)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp, err := c.Search(r.Context(), postgram.SearchRequest{
		Query:           req.Query,
		Types:           convert[postgram.EntityType](types),
		Tags:            req.Tags,
		Visibilities:    convert[postgram.Visibility](vis),
		Owner:           req.Owner,
		MemoryRole:      postgram.MemoryRole(req.MemoryRole),
		IncludeArchived: req.IncludeArchived,
		Limit:           req.Limit,
		Threshold:       req.Threshold,
		RecencyWeight:   req.RecencyWeight,
		ExpandGraph:     req.ExpandGraph,
		IncludeContent:  req.IncludeContent,
		Strategy:        postgram.Strategy(req.Strategy),
		Ranking:         postgram.RankingMode(req.Ranking),
		Explain:         req.Explain,
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, resp)
}
