package rest

import (
	_ "embed"
	"net/http"
)

// openAPIDoc is the OpenAPI 3.0 description of every route. It is written
// by hand; openapi_test.go keeps it true to the router.
//
//go:embed openapi.json
var openAPIDoc []byte

// OpenAPI returns the OpenAPI 3.0 document (JSON) the server serves at
// /api/openapi.json.
func OpenAPI() []byte { return append([]byte(nil), openAPIDoc...) }

func (s *Server) openAPIRoutes() {
	s.api.HandleFunc("/api/openapi.json", s.openAPI).Methods(http.MethodGet)
}

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	if err := params(r).err; err != nil {
		s.writeError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(openAPIDoc)
}
