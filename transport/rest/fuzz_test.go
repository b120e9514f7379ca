package rest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/rest"
)

var fuzzMethods = []string{"GET", "POST", "PATCH", "DELETE", "PUT", "HEAD", "OPTIONS"}

// FuzzHandlers sends random methods, paths, query strings, credentials and
// bodies through the full middleware chain against a real store. Nothing
// may answer 500 (or any 5xx), and every 4xx must be a well-formed
// envelope whose code matches its status.
func FuzzHandlers(f *testing.F) {
	e := newEnv(f)
	ent := e.store(e.admin, map[string]any{"type": "memory", "content": "fuzz seed entity", "visibility": "personal"})
	id := ent.ID.String()
	reader := e.key(postgram.KeySpec{Name: "fuzz-reader", Scopes: []postgram.Scope{postgram.ScopeRead},
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityPersonal}})
	tokens := []string{"", "Bearer " + e.admin, "Bearer " + reader, "Bearer pgm-junk", "Basic Zm9vOmJhcg==", "Bearer " + e.admin + " extra"}
	handler := rest.RequestID(rest.AccessLog(nil)(rest.Recover(nil)(e.server)))

	seeds := []struct {
		method uint8
		path   string
		query  string
		auth   uint8
		body   string
	}{
		{1, "/api/entities", "", 1, `{"type":"memory","content":"hello","tags":["a"],"metadata":{"k":[1,{"x":null}]}}`},
		{1, "/api/entities", "", 1, `{"type":"memory","content":"x","metadata":{"nul":"\u0000"}}`},
		{1, "/api/entities", "", 1, `{"type":"memory","content":"\u0000"}`},
		{1, "/api/entities", "", 2, `{"type":"task","content":"hi"}`},
		{0, "/api/entities", "type=memory,task&limit=5&offset=0&include_archived=true&tags=a,b", 1, ""},
		{0, "/api/entities", "owner=%00&tags=%FF", 1, ""},
		{0, "/api/entities/" + id, "", 2, ""},
		{2, "/api/entities/" + id, "", 1, `{"version":1,"metadata":{"a":null},"tags":null}`},
		{2, "/api/entities/" + id, "", 1, `{"version":99}`},
		{3, "/api/entities/" + id, "", 1, ""},
		{3, "/api/entities/not-a-uuid", "", 1, ""},
		{1, "/api/entities/bulk/archive", "", 1, `{"ids":["` + id + `","x",""]}`},
		{1, "/api/search", "", 1, `{"query":"fuzz seed","type":["memory"],"visibility":"personal","include_content":false,"expand_graph":true}`},
		{1, "/api/search", "", 2, `{"query":"\u0000 nul"}`},
		{1, "/api/search", "", 1, `{"query":"a b c d e f g h i j k l m n o p q r s t u v w x y z aa bb cc","threshold":0,"recency_weight":1,"strategy":"hnsw"}`},
		{0, "/api/queue", "include_failures=true&failure_limit=100", 2, ""},
		{0, "/health", "", 0, ""},
		{0, "/api/openapi.json", "", 1, ""},
		{4, "/api/entities", "", 1, `{}`},
		{1, "/api//entities", "", 1, `{}`},
		{1, "/api/entities", "a=%zz;b", 3, `[`},
		{1, "/api/search", "", 1, `{"query":1}`},
		{1, "/api/search", "", 1, `{"query":"x","limit":-1,"type":{"a":1}}`},
		{1, "/api/entities", "", 1, strings.Repeat("[", 20000)},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.query, s.auth, []byte(s.body))
	}
	codes := apierror.Codes()

	f.Fuzz(func(t *testing.T, method uint8, path, query string, auth uint8, body []byte) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req := (&http.Request{
			Method:        fuzzMethods[int(method)%len(fuzzMethods)],
			URL:           &url.URL{Path: path, RawQuery: query},
			Proto:         "HTTP/1.1",
			ProtoMajor:    1,
			ProtoMinor:    1,
			Header:        http.Header{},
			Body:          io.NopCloser(bytes.NewReader(body)),
			ContentLength: int64(len(body)),
			Host:          "example.test",
			RemoteAddr:    "192.0.2.1:1234",
		}).WithContext(ctx)
		if tok := tokens[int(auth)%len(tokens)]; tok != "" {
			req.Header.Set("Authorization", tok)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)

		status := rec.Code
		if status >= 500 {
			t.Fatalf("%s %s?%s → %d %s", req.Method, path, query, status, rec.Body)
		}
		if status >= 400 {
			var env struct {
				Error *apierror.Body `json:"error"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error == nil {
				t.Fatalf("%s %s → %d without an envelope: %q", req.Method, path, status, rec.Body)
			}
			if !slices.Contains(codes, env.Error.Code) || env.Error.Code.Status() != status || env.Error.Message == "" {
				t.Fatalf("%s %s → %d with envelope %+v", req.Method, path, status, env.Error)
			}
		}
		if status >= 200 && status < 300 && req.Method != "HEAD" && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s → %d with invalid JSON: %q", req.Method, path, status, rec.Body)
		}
	})
}
