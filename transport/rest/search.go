package rest

import (
	"net/http"

	"github.com/postgram-go/postgram/wire"
)

func (s *Server) searchRoutes() {
	s.api.HandleFunc("/api/search", s.search).Methods(http.MethodPost)
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
	var req wire.SearchRequest
	if err := s.decodeJSON(w, r, &req); err != nil {
		s.writeError(w, r, err)
		return
	}
	resp, err := c.Search(r.Context(), req.Request())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.writeJSON(w, r, http.StatusOK, resp)
}
