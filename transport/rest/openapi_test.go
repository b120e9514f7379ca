package rest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gorilla/mux"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/ingest"
	"github.com/postgram-go/postgram/syncproto"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/transport/rest"
	"github.com/postgram-go/postgram/wire"
)

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func loadDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(rest.OpenAPI()))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	return doc
}

// routed lists "METHOD path" for every route of a server's router.
func routed(t *testing.T, r *mux.Router) []string {
	t.Helper()
	var out []string
	err := r.Walk(func(route *mux.Route, _ *mux.Router, _ []*mux.Route) error {
		tpl, err := route.GetPathTemplate()
		if err != nil {
			return nil // the matcher-less authenticated group
		}
		methods, err := route.GetMethods()
		if err != nil {
			return fmt.Errorf("route %s has no methods: every route must name its methods", tpl)
		}
		for _, m := range methods {
			out = append(out, m+" "+tpl)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// documented lists "METHOD path" for every operation in the document.
func documented(doc map[string]any) []string {
	var out []string
	for path, item := range doc["paths"].(map[string]any) {
		for k := range item.(map[string]any) {
			if slices.Contains(httpMethods, k) {
				out = append(out, strings.ToUpper(k)+" "+path)
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestOpenAPIMatchesRouter(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	client, err := postgram.New(t.Context(), postgram.Config{Store: nilStore{}})
	if err != nil {
		t.Fatal(err)
	}
	srv := rest.New(rest.Config{Client: client})
	routes, ops := routed(t, srv.Router()), documented(doc)
	for _, r := range routes {
		if !slices.Contains(ops, r) {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for _, o := range ops {
		if !slices.Contains(routes, o) {
			t.Errorf("openapi.json documents %s, which is not routed", o)
		}
	}
	if len(routes) < 10 {
		t.Errorf("only %d routes: %v", len(routes), routes)
	}
}

func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	if v, _ := doc["openapi"].(string); !strings.HasPrefix(v, "3.0.") {
		t.Errorf("openapi %q, want 3.0.x", v)
	}
	info, _ := doc["info"].(map[string]any)
	if info["title"] == nil || info["version"] == nil {
		t.Errorf("info %v", info)
	}

	// Every $ref resolves.
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				if resolve(doc, ref) == nil {
					t.Errorf("%s: $ref %s does not resolve", at, ref)
				}
			}
			for k, c := range x {
				walk(c, at+"/"+k)
			}
		case []any:
			for i, c := range x {
				walk(c, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(doc, "#")

	// Operations: unique ids, a 2xx response, 401 when authenticated, and
	// path parameters declared.
	ids := map[string]bool{}
	for path, item := range doc["paths"].(map[string]any) {
		pi := item.(map[string]any)
		for _, m := range httpMethods {
			op, ok := pi[m].(map[string]any)
			if !ok {
				continue
			}
			name := strings.ToUpper(m) + " " + path
			id, _ := op["operationId"].(string)
			if id == "" || ids[id] {
				t.Errorf("%s: operationId %q missing or repeated", name, id)
			}
			ids[id] = true
			resp, _ := op["responses"].(map[string]any)
			has2xx := false
			for code := range resp {
				if strings.HasPrefix(code, "2") || code == "101" { // 101: a WebSocket upgrade
					has2xx = true
				}
			}
			if !has2xx {
				t.Errorf("%s: no 2xx response", name)
			}
			sec, explicit := op["security"].([]any)
			public := explicit && len(sec) == 0
			if !public && resp["401"] == nil {
				t.Errorf("%s: authenticated but 401 is not documented", name)
			}
			if public != (path == "/health") {
				t.Errorf("%s: public=%v", name, public)
			}
			for _, seg := range strings.Split(path, "/") {
				if strings.HasPrefix(seg, "{") {
					p := strings.Trim(seg, "{}")
					if !hasParam(doc, pi["parameters"], "path", p) && !hasParam(doc, op["parameters"], "path", p) {
						t.Errorf("%s: path parameter %s not declared", name, p)
					}
				}
			}
		}
	}

	// Query parameters are exactly what the handlers accept.
	for path, want := range map[string][]string{"/api/entities": rest.ListParams, "/api/queue": rest.QueueParams,
		"/api/jobs": rest.JobParams, "/api/events": rest.EventParams, "/api/events/ws": rest.EventParams} {
		item, _ := doc["paths"].(map[string]any)[path].(map[string]any)
		op, ok := item["get"].(map[string]any)
		if !ok {
			t.Errorf("GET %s is not documented", path)
			continue
		}
		var got []string
		for _, p := range op["parameters"].([]any) {
			pm := deref(doc, p)
			if pm["in"] == "query" {
				got = append(got, pm["name"].(string))
			}
		}
		if !sameSet(got, want) {
			t.Errorf("GET %s query parameters: document %v, handler %v", path, got, want)
		}
	}

	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	// The error codes are apierror's table.
	var codes []string
	for _, c := range schemas["ErrorCode"].(map[string]any)["enum"].([]any) {
		codes = append(codes, c.(string))
	}
	var want []string
	for _, c := range apierror.Codes() {
		want = append(want, string(c))
	}
	if !sameSet(codes, want) {
		t.Errorf("ErrorCode enum %v, apierror %v", codes, want)
	}
}

func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do("GET", "/api/openapi.json", e.admin, nil).want(http.StatusOK)
	if !bytes.Equal(r.Body, rest.OpenAPI()) || !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		t.Errorf("served document differs (%d bytes, %s)", len(r.Body), r.Header.Get("Content-Type"))
	}
}

func resolve(doc map[string]any, ref string) map[string]any {
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var cur any = doc
	for _, part := range strings.Split(ref[2:], "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	m, _ := cur.(map[string]any)
	return m
}

func deref(doc map[string]any, v any) map[string]any {
	m, _ := v.(map[string]any)
	if ref, ok := m["$ref"].(string); ok {
		return resolve(doc, ref)
	}
	return m
}

func hasParam(doc map[string]any, params any, in, name string) bool {
	list, _ := params.([]any)
	for _, p := range list {
		pm := deref(doc, p)
		if pm["in"] == in && pm["name"] == name {
			return pm["required"] == true || in != "path"
		}
	}
	return false
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// nilStore satisfies driver.Storage for tests that only build a router.
type nilStore struct{ driver.Storage }

func (nilStore) Name() string { return "nil" }

// wireShapes maps every object schema of the OpenAPI document to the Go
// type the server encodes or decodes (package wire, the library's types,
// syncproto). The client (pgm) uses the same types, so the document, the
// server and the client cannot drift apart.
var wireShapes = map[string]any{
	"Entity":                driver.Entity{},
	"EntityResponse":        wire.EntityResponse{},
	"StoreRequest":          wire.StoreRequest{},
	"UpdateRequest":         wire.UpdateRequest{},
	"DeleteResponse":        wire.DeleteResponse{},
	"EntityList":            wire.EntityList{},
	"BulkArchiveRequest":    wire.BulkArchiveRequest{},
	"BulkArchiveResponse":   wire.BulkArchiveResponse{},
	"SearchRequest":         wire.SearchRequest{},
	"SearchResponse":        wire.SearchResponse{},
	"SearchResult":          postgram.SearchResult{},
	"Explanation":           postgram.Explanation{},
	"EdgeSummary":           postgram.EdgeSummary{},
	"Related":               postgram.Related{},
	"Degradation":           postgram.Degradation{},
	"SearchStats":           postgram.SearchStats{},
	"LinkRequest":           wire.LinkRequest{},
	"Edge":                  postgram.Edge{},
	"EdgeResponse":          wire.EdgeResponse{},
	"EdgeList":              wire.EdgeList{},
	"Graph":                 wire.Graph{},
	"QueueStatus":           wire.QueueResponse{},
	"IngestRequest":         wire.IngestRequest{},
	"Job":                   ingest.Job{},
	"JobResponse":           wire.JobResponse{},
	"JobList":               wire.JobList{},
	"Event":                 wire.Event{},
	"Health":                wire.Health{},
	"SessionContextRequest": wire.SessionContextRequest{},
	"GroomRequest":          wire.GroomRequest{},
	"GroomResult":           wire.GroomResponse{},
	"CreateTaskRequest":     wire.TaskRequest{},
	"UpdateTaskRequest":     wire.TaskUpdateRequest{},
	"CompleteTaskRequest":   wire.CompleteTaskRequest{},
	"SyncFileEntry":         syncproto.FileEntry{},
	"SyncUploadFile":        syncproto.UploadFile{},
	"SyncManifestRequest":   wire.SyncManifestRequest{},
	"SyncFilesRequest":      wire.SyncFilesRequest{},
	"SyncDiffResponse":      syncproto.DiffResponse{},
	"SyncUploadResponse":    syncproto.UploadResponse{},
	"SyncFinalizeResponse":  syncproto.FinalizeResponse{},
	"SyncPushResponse":      syncproto.PushResponse{},
	"SyncStatus":            syncproto.StatusResponse{},
	"Error":                 apierror.Envelope{},
	"ConflictError":         apierror.Envelope{},
}

// TestOpenAPIWireShapes: every object schema of the document has a Go
// type in wireShapes whose JSON fields are exactly the schema's
// properties; request bodies (the schemas that reject unknown fields) are
// the types the handlers decode.
func TestOpenAPIWireShapes(t *testing.T) {
	t.Parallel()
	doc := loadDoc(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	for name, raw := range schemas {
		s := raw.(map[string]any)
		if s["type"] != "object" {
			continue
		}
		v, ok := wireShapes[name]
		if !ok {
			t.Errorf("schema %s has no Go type in wireShapes: add its wire type", name)
			continue
		}
		var props []string
		for k := range s["properties"].(map[string]any) {
			props = append(props, k)
		}
		fields := jsonFields(reflect.TypeOf(v))
		if m, ok := v.(json.Marshaler); ok {
			fields = marshalledFields(t, m) // a custom encoding (reference-server spellings)
		} else {
			nestedShapes(t, name, s, reflect.TypeOf(v))
		}
		if diff := cmp.Diff(sorted(props), sorted(fields)); diff != "" {
			t.Errorf("schema %s (-document +%T):\n%s", name, v, diff)
		}
	}
	for name := range wireShapes {
		if _, ok := schemas[name]; !ok {
			t.Errorf("wireShapes names %s, which the document does not define", name)
		}
	}
}

// nestedShapes compares the inline object schemas inside schema s (a
// property's object, or an array's items) with the Go fields' struct
// types, recursively. $refs are checked as schemas of their own.
func nestedShapes(t *testing.T, path string, s map[string]any, typ reflect.Type) {
	t.Helper()
	props, _ := s["properties"].(map[string]any)
	for name, raw := range props {
		ps, _ := raw.(map[string]any)
		ft := fieldTypeOf(typ, name)
		for ft != nil && (ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice) {
			ft = ft.Elem()
		}
		if ps == nil || ft == nil || ft.Kind() != reflect.Struct {
			continue
		}
		if ps["type"] == "array" {
			ps, _ = ps["items"].(map[string]any)
		}
		if ps == nil || ps["$ref"] != nil || ps["properties"] == nil {
			continue
		}
		if _, custom := reflect.New(ft).Interface().(json.Marshaler); custom {
			continue
		}
		var want []string
		for k := range ps["properties"].(map[string]any) {
			want = append(want, k)
		}
		if diff := cmp.Diff(sorted(want), sorted(jsonFields(ft))); diff != "" {
			t.Errorf("schema %s.%s (-document +%s):\n%s", path, name, ft, diff)
		}
		nestedShapes(t, path+"."+name, ps, ft)
	}
}

// fieldTypeOf is the type of struct t's field with JSON name name
// (embedded structs searched too).
func fieldTypeOf(t reflect.Type, name string) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var embedded []reflect.Type
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && tag == "" {
			embedded = append(embedded, f.Type)
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name && f.IsExported() {
			return f.Type
		}
	}
	for _, e := range embedded {
		if ft := fieldTypeOf(e, name); ft != nil {
			return ft
		}
	}
	return nil
}

// marshalledFields lists the keys a zero value of a custom-encoded type
// writes.
func marshalledFields(t *testing.T, m json.Marshaler) []string {
	b, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	var out []string
	for k := range obj {
		out = append(out, k)
	}
	return out
}

func sorted(in []string) []string {
	out := slices.Clone(in)
	slices.Sort(out)
	return out
}

// jsonFields lists the top-level JSON field names of struct type t as
// encoding/json sees them: embedded structs flattened, "-" skipped, an
// outer name hiding an inner one.
func jsonFields(t reflect.Type) []string {
	seen := map[string]bool{}
	var out []string
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		var embedded []reflect.Type
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			if f.Anonymous && name == "" {
				embedded = append(embedded, f.Type)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
		for _, e := range embedded {
			walk(e)
		}
	}
	walk(t)
	return out
}
