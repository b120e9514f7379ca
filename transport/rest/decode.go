package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/wire"
)

// decodeJSON reads the request body (at most MaxBodyBytes) into dst, a
// pointer to a struct, strictly: the body must be one JSON object, unknown
// fields are rejected and type mismatches name the field and the expected
// type. The returned error renders as a VALIDATION or PAYLOAD_TOO_LARGE
// envelope through writeError.
func (s *Server) decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if r.Body == nil {
		return decodeBody(nil, dst)
	}
	limit := s.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		return tooLarge(limit)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return tooLarge(limit)
		}
		return envelopeError(apierror.Validation, "cannot read the request body: "+err.Error(), map[string]any{"field": "body"})
	}
	return decodeBody(body, dst)
}

func tooLarge(limit int64) error {
	return envelopeError(apierror.PayloadTooLarge,
		fmt.Sprintf("request body exceeds the limit of %d bytes", limit),
		map[string]any{"limit_bytes": limit})
}

// decodeBody decodes a complete body into dst (see decodeJSON).
func decodeBody(body []byte, dst any) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return invalid("body", "a JSON object is required; the request body is empty")
	}
	if trimmed[0] != '{' {
		return invalid("body", "must be a JSON object, got "+jsonKind(trimmed[0]))
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, dst)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("body", "must contain a single JSON object; found more data after it")
	}
	return nil
}

// decodeError explains a json decoding error, naming the field.
func decodeError(err error, dst any) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	msg := err.Error()
	switch {
	case errors.As(err, &se):
		return invalid("body", fmt.Sprintf("malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: ")))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return invalid("body", "malformed JSON: the body ends before the object is complete")
	case errors.As(err, &te):
		field := jsonFieldPath(te.Field)
		if field == "" {
			return invalid("body", "must be a JSON object")
		}
		want := fieldType(reflect.TypeOf(dst), field)
		if want != nil && (want.Kind() == reflect.Slice || want.Kind() == reflect.Array) && te.Type == want.Elem() {
			// encoding/json names the array, not the item.
			return invalid(field, fmt.Sprintf("expected %s, but an item is %s", typeName(want), gotKind(te.Value)))
		}
		return invalid(field, fmt.Sprintf("expected %s, got %s", expectedType(dst, field, te.Type), gotKind(te.Value)))
	case strings.HasPrefix(msg, "json: unknown field "):
		name, uerr := strconv.Unquote(strings.TrimPrefix(msg, "json: unknown field "))
		if uerr != nil {
			name = strings.TrimPrefix(msg, "json: unknown field ")
		}
		if len(name) > 64 {
			name = name[:64] + "…"
		}
		return envelopeError(apierror.Validation,
			fmt.Sprintf("unknown field %q in the request body; accepted fields: %s", name, strings.Join(fieldNames(dst), ", ")),
			map[string]any{"field": name})
	}
	return invalid("body", "malformed JSON: "+strings.TrimPrefix(msg, "json: "))
}

// jsonFieldPath turns encoding/json's dotted field path into the wire
// form ("tags.0" → "tags[0]").
func jsonFieldPath(p string) string {
	if p == "" {
		return ""
	}
	parts := strings.Split(p, ".")
	var b strings.Builder
	for i, part := range parts {
		if _, err := strconv.Atoi(part); err == nil && i > 0 {
			b.WriteString("[" + part + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(part)
	}
	return b.String()
}

func jsonKind(c byte) string {
	switch {
	case c == '[':
		return "an array"
	case c == '"':
		return "a string"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9'):
		return "a number"
	}
	return "something that is not JSON"
}

func gotKind(v string) string {
	switch v {
	case "":
		return "a value of another type"
	case "number", "string", "bool", "array", "object":
		if v == "bool" {
			return "a boolean"
		}
		if v == "array" || v == "object" {
			return "an " + v
		}
		return "a " + v
	}
	if strings.HasPrefix(v, "number ") {
		return "the number " + strings.TrimPrefix(v, "number ")
	}
	return v
}

// expectedType names the JSON type of the field at path in dst's type,
// falling back to t (the Go type encoding/json reported).
func expectedType(dst any, path string, t reflect.Type) string {
	if ft := fieldType(reflect.TypeOf(dst), path); ft != nil {
		return typeName(ft)
	}
	return typeName(t)
}

// fieldType resolves a wire path ("tags[0]", "a.b") in struct type t.
func fieldType(t reflect.Type, path string) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	top, _, _ := strings.Cut(path, ".")
	name, idx, hasIdx := strings.Cut(top, "[")
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if jsonName(f) != name {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if hasIdx && strings.HasSuffix(idx, "]") && (ft.Kind() == reflect.Slice || ft.Kind() == reflect.Array) {
			return ft.Elem()
		}
		return ft
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	tag := f.Tag.Get("json")
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		return f.Name
	}
	return name
}

// fieldNames lists dst's JSON field names (for unknown-field messages).
func fieldNames(dst any) []string {
	t := reflect.TypeOf(dst)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if n := jsonName(t.Field(i)); n != "-" && t.Field(i).IsExported() {
			out = append(out, n)
		}
	}
	return out
}

var rawMessageType = reflect.TypeOf(json.RawMessage(nil))

// typeName is the JSON name of a Go type, for messages.
func typeName(t reflect.Type) string {
	if t == nil {
		return "a value of another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == wire.StringListType {
		return "a string or an array of strings"
	}
	if t == rawMessageType {
		return "a JSON value"
	}
	if t == reflect.TypeOf(uuid.UUID{}) {
		return "a UUID string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		e := typeName(t.Elem())
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(e, "an "), "a ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Interface:
		return "a JSON value"
	}
	return "a value of another type"
}

// pathID parses the {id} path variable; an invalid one is a VALIDATION
// error naming "id".
func pathID(r *http.Request) (uuid.UUID, error) {
	return postgram.ParseID("id", mux.Vars(r)["id"])
}

// queryParams parses and checks query parameters. Every parse error names
// the parameter; the first one is kept in err.
type queryParams struct {
	v   url.Values
	err error
}

// params parses r's query string and rejects parameters not in allowed.
func params(r *http.Request, allowed ...string) *queryParams {
	v, err := url.ParseQuery(r.URL.RawQuery)
	p := &queryParams{v: v}
	if err != nil {
		p.err = invalid("query", "malformed query string: "+strings.TrimPrefix(err.Error(), "invalid semicolon separator in query: "))
		if strings.Contains(err.Error(), "semicolon") {
			p.err = invalid("query", "malformed query string: ';' is not a parameter separator; use '&'")
		}
		return p
	}
	for _, name := range slices.Sorted(maps.Keys(v)) {
		if !slices.Contains(allowed, name) {
			n := truncateName(name)
			msg := fmt.Sprintf("unknown query parameter %q", n)
			if len(allowed) > 0 {
				msg += "; accepted: " + strings.Join(allowed, ", ")
			} else {
				msg += "; this route takes none"
			}
			p.fail(envelopeError(apierror.Validation, msg, map[string]any{"field": n}))
		}
	}
	return p
}

func truncateName(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func (p *queryParams) fail(err error) {
	if p.err == nil {
		p.err = err
	}
}

// one returns the single value of name ("" when absent); a repeated
// parameter is an error.
func (p *queryParams) one(name string) (string, bool) {
	vs, ok := p.v[name]
	if !ok {
		return "", false
	}
	if len(vs) > 1 {
		p.fail(invalid(name, "is given more than once"))
		return "", false
	}
	return vs[0], true
}

// str returns a string parameter, "" when absent.
func (p *queryParams) str(name string) string {
	s, _ := p.one(name)
	return s
}

// int returns an integer parameter, or def when absent. Its range is the
// library's to check (it names the field in its error), not this adapter's.
func (p *queryParams) int(name string, def int) int {
	s, ok := p.one(name)
	if !ok {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		p.fail(invalid(name, fmt.Sprintf("must be an integer, got %q", truncateName(s))))
		return def
	}
	return n
}

// bool returns a boolean parameter ("true"/"false", "1"/"0"), or def when
// absent.
func (p *queryParams) bool(name string, def bool) bool {
	s, ok := p.one(name)
	if !ok {
		return def
	}
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1", "yes":
		return true
	case "false", "0", "no":
		return false
	}
	p.fail(invalid(name, fmt.Sprintf("must be true or false, got %q", truncateName(s))))
	return def
}

// list returns a list parameter given as comma-separated values and/or
// repeated (type=a,b&type=c); empty items are dropped.
func (p *queryParams) list(name string) []string {
	var out []string
	for _, v := range p.v[name] {
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item != "" {
				out = append(out, item)
			}
		}
	}
	return out
}

// convert maps strings to a string-based library type.
func convert[T ~string](in []string) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i, s := range in {
		out[i] = T(s)
	}
	return out
}

// stringOrList decodes a JSON value that may be one string or an array of
// strings (null or absent: nil).
func stringOrList(field string, raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		if one == "" {
			return nil, nil
		}
		return []string{one}, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		got := jsonKind(raw[0])
		if raw[0] == '[' {
			got = "an array with an item that is not a string"
		}
		return nil, invalid(field, "expected a string or an array of strings, got "+got)
	}
	return many, nil
}
