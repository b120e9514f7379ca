package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/postgram-go/postgram"
)

// This file is pure: it turns the arguments an agent sent into values of
// the types a tool declares, without I/O. Real agent clients send numbers,
// booleans, arrays and objects as strings ("5", "true", "[\"a\"]", "a,b",
// "{\"k\":1}"), so every tool accepts those forms too. Range and enum rules
// stay in the library; coercion only fixes types.

// kind is an argument's declared type.
type kind int

const (
	kindString  kind = iota // string
	kindInteger             // int64
	kindNumber              // float64 (finite)
	kindBoolean             // bool
	kindStrings             // []string
	kindObject              // map[string]any
	kindObjects             // []map[string]any
)

func (k kind) String() string {
	switch k {
	case kindString:
		return "a string"
	case kindInteger:
		return "an integer"
	case kindNumber:
		return "a number"
	case kindBoolean:
		return "a boolean"
	case kindStrings:
		return "an array of strings"
	case kindObject:
		return "a JSON object"
	case kindObjects:
		return "an array of JSON objects"
	}
	return "a value"
}

// param declares one tool argument: the coercion target and the text of
// its JSON schema.
type param struct {
	Name        string
	Kind        kind
	Description string
	Required    bool
	// Enum lists the accepted values of a string (or of the items of a
	// string array). Schema only: the library validates values.
	Enum []string
	// Min and Max are schema hints for numbers (nil: none).
	Min, Max *float64
	// Items is the JSON schema of an item of a kindObjects argument.
	// Schema only: the tool checks the items' fields.
	Items map[string]any
}

// args are coerced arguments: each present value has its param's Go type
// (string, int64, float64, bool, []string, map[string]any,
// []map[string]any). Absent and
// null arguments are not in the map.
type args map[string]any

func (a args) has(name string) bool { _, ok := a[name]; return ok }

func (a args) str(name string) (string, bool) {
	v, ok := a[name].(string)
	return v, ok
}

func (a args) int(name string) (int64, bool) {
	v, ok := a[name].(int64)
	return v, ok
}

func (a args) float(name string) (float64, bool) {
	v, ok := a[name].(float64)
	return v, ok
}

func (a args) bool(name string) bool {
	v, _ := a[name].(bool)
	return v
}

func (a args) strings(name string) ([]string, bool) {
	v, ok := a[name].([]string)
	return v, ok
}

func (a args) object(name string) (map[string]any, bool) {
	v, ok := a[name].(map[string]any)
	return v, ok
}

func (a args) objects(name string) ([]map[string]any, bool) {
	v, ok := a[name].([]map[string]any)
	return v, ok
}

// maxArgumentBytes bounds the raw arguments object. Entity content may be
// 1 MiB of UTF-8, which JSON escaping can inflate.
const maxArgumentBytes = 8 << 20

// decodeArguments parses a tools/call arguments payload: a JSON object,
// or null/absent for none. Numbers are kept exact as json.Number.
func decodeArguments(raw []byte) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	if len(raw) > maxArgumentBytes {
		return nil, &postgram.FieldError{Field: "arguments", Message: fmt.Sprintf("are %d bytes; the maximum is %d", len(raw), maxArgumentBytes)}
	}
	if raw[0] != '{' {
		return nil, &postgram.FieldError{Field: "arguments", Message: "must be a JSON object of named arguments"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || !consumed(dec, string(raw)) {
		return nil, &postgram.FieldError{Field: "arguments", Message: "are not a single valid JSON object"}
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// coerce checks raw against params: unknown names and missing required
// arguments are errors, and each value is converted to its declared kind.
// Every error is a *postgram.FieldError (a VALIDATION error) naming the
// argument.
func coerce(params []param, raw map[string]any) (args, error) {
	var unknown []string
	for name := range raw {
		if !slices.ContainsFunc(params, func(p param) bool { return p.Name == name }) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		names := make([]string, len(params))
		for i, p := range params {
			names[i] = p.Name
		}
		quoted := make([]string, len(unknown))
		for i, u := range unknown {
			quoted[i] = strconv.Quote(clip(u, 64))
		}
		return nil, &postgram.FieldError{Field: clip(unknown[0], 64), Message: fmt.Sprintf(
			"unknown argument %s; accepted arguments are %s", strings.Join(quoted, ", "), strings.Join(names, ", "))}
	}
	out := make(args, len(raw))
	for _, p := range params {
		v, present := raw[p.Name]
		if present {
			cv, ok, err := coerceValue(p, v)
			if err != nil {
				return nil, err
			}
			if ok {
				out[p.Name] = cv
				continue
			}
		}
		if p.Required {
			return nil, &postgram.FieldError{Field: p.Name, Message: "is required (" + p.Kind.String() + ")"}
		}
	}
	return out, nil
}

// coerceValue converts v to p's kind. ok is false when the value counts as
// absent: null, or an empty string given for an argument that is not free
// text (a non-string, or a string with a fixed set of values).
func coerceValue(p param, v any) (out any, ok bool, err error) {
	if v == nil {
		return nil, false, nil
	}
	bad := func(format string, a ...any) (any, bool, error) {
		return nil, false, &postgram.FieldError{Field: p.Name, Message: fmt.Sprintf(format, a...)}
	}
	// Clients that fill every optional field send "" for "not given". An
	// empty string is a real value only for free-text string arguments.
	if s, isStr := v.(string); isStr && (p.Kind != kindString || len(p.Enum) > 0) && strings.TrimSpace(s) == "" {
		return nil, false, nil
	}
	switch p.Kind {
	case kindString:
		s, ok := scalarText(v)
		if !ok {
			return bad("must be a string, not %s", jsonKind(v))
		}
		return s, true, nil
	case kindInteger:
		n, err := toInt(v)
		if err != nil {
			return bad("must be an integer (got %s)", describe(v))
		}
		return n, true, nil
	case kindNumber:
		f, err := toFloat(v)
		if err != nil {
			return bad("must be a number (got %s)", describe(v))
		}
		return f, true, nil
	case kindBoolean:
		b, err := toBool(v)
		if err != nil {
			return bad("must be a boolean: true or false (got %s)", describe(v))
		}
		return b, true, nil
	case kindStrings:
		list, err := toStrings(v)
		if err != nil {
			return bad("%s", err.Error())
		}
		return list, true, nil
	case kindObject:
		m, err := toObject(v)
		if err != nil {
			return bad("%s", err.Error())
		}
		return m, true, nil
	case kindObjects:
		list, err := toObjects(v)
		if err != nil {
			return bad("%s", err.Error())
		}
		return list, true, nil
	}
	return bad("has an undeclared type")
}

// scalarText renders a string, number or boolean as text.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return "", false
		}
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	}
	return "", false
}

var errType = fmt.Errorf("wrong type")

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case float64:
		return floatToInt(x)
	case json.Number:
		return parseInt(string(x))
	case string:
		return parseInt(strings.TrimSpace(x))
	}
	return 0, errType
}

func parseInt(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !plainNumber(s) {
		return 0, errType
	}
	return floatToInt(f)
}

// plainNumber reports whether s is written as a decimal JSON-style number
// (strconv also accepts hex floats, "inf" and underscores).
func plainNumber(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789+-.eE", r) {
			return false
		}
	}
	return true
}

func floatToInt(f float64) (int64, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f != math.Trunc(f) || f < -(1<<63) || f >= 1<<63 {
		return 0, errType
	}
	return int64(f), nil
}

func toFloat(v any) (float64, error) {
	var f float64
	switch x := v.(type) {
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case float64:
		f = x
	case json.Number:
		g, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return 0, errType
		}
		f = g
	case string:
		s := strings.TrimSpace(x)
		g, err := strconv.ParseFloat(s, 64)
		if err != nil || !plainNumber(s) {
			return 0, errType
		}
		f = g
	default:
		return 0, errType
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errType
	}
	return f, nil
}

func toBool(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case json.Number:
		switch x.String() {
		case "1":
			return true, nil
		case "0":
			return false, nil
		}
	case float64:
		switch x {
		case 1:
			return true, nil
		case 0:
			return false, nil
		}
	case int:
		switch x {
		case 1:
			return true, nil
		case 0:
			return false, nil
		}
	case string:
		switch strings.ToLower(strings.TrimSpace(x)) {
		case "true", "1":
			return true, nil
		case "false", "0":
			return false, nil
		}
	}
	return false, errType
}

// toStrings accepts an array of strings (numbers and booleans are taken as
// text), a JSON array in a string, or a comma-separated string.
func toStrings(v any) ([]string, error) {
	var items []any
	switch x := v.(type) {
	case []string:
		return slices.Clone(x), nil
	case []any:
		items = x
	case string:
		s := strings.TrimSpace(x)
		if strings.HasPrefix(s, "[") {
			dec := json.NewDecoder(strings.NewReader(s))
			dec.UseNumber()
			if err := dec.Decode(&items); err != nil || !consumed(dec, s) {
				return nil, fmt.Errorf("is a string starting with '[' but not a JSON array of strings")
			}
			break
		}
		parts := strings.Split(s, ",")
		out := make([]string, 0, len(parts))
		for _, p := range parts {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		return out, nil
	default:
		if s, ok := scalarText(v); ok {
			return []string{s}, nil
		}
		return nil, fmt.Errorf("must be an array of strings, not %s", jsonKind(v))
	}
	out := make([]string, len(items))
	for i, it := range items {
		s, ok := scalarText(it)
		if !ok {
			return nil, fmt.Errorf("item %d must be a string, not %s", i, jsonKind(it))
		}
		out[i] = s
	}
	return out, nil
}

// toObject accepts a JSON object, or a JSON object in a string.
func toObject(v any) (map[string]any, error) {
	switch x := v.(type) {
	case map[string]any:
		return x, nil
	case string:
		dec := json.NewDecoder(strings.NewReader(x))
		dec.UseNumber()
		var m map[string]any
		if err := dec.Decode(&m); err != nil || m == nil || !consumed(dec, x) {
			return nil, fmt.Errorf("must be a JSON object (a string must hold one, e.g. {\"key\":\"value\"})")
		}
		return m, nil
	}
	return nil, fmt.Errorf("must be a JSON object, not %s", jsonKind(v))
}

// toObjects accepts an array of JSON objects (an item may be a JSON object
// in a string), a JSON array in a string, or one object (a list of one).
func toObjects(v any) ([]map[string]any, error) {
	var items []any
	switch x := v.(type) {
	case []map[string]any:
		return slices.Clone(x), nil
	case []any:
		items = x
	case map[string]any:
		return []map[string]any{x}, nil
	case string:
		s := strings.TrimSpace(x)
		if strings.HasPrefix(s, "{") {
			m, err := toObject(s)
			if err != nil {
				return nil, err
			}
			return []map[string]any{m}, nil
		}
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		if !strings.HasPrefix(s, "[") || dec.Decode(&items) != nil || !consumed(dec, s) {
			return nil, fmt.Errorf("must be an array of JSON objects (a string must hold one, e.g. [{\"key\":\"value\"}])")
		}
	default:
		return nil, fmt.Errorf("must be an array of JSON objects, not %s", jsonKind(v))
	}
	out := make([]map[string]any, len(items))
	for i, it := range items {
		m, err := toObject(it)
		if err != nil {
			return nil, fmt.Errorf("item %d %s", i, err.Error())
		}
		out[i] = m
	}
	return out, nil
}

// consumed reports whether dec read all of s but trailing white space.
func consumed(dec *json.Decoder, s string) bool {
	off := dec.InputOffset()
	return off <= int64(len(s)) && strings.TrimSpace(s[off:]) == ""
}

// jsonKind names v's JSON type for messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64, int, int64:
		return "a number"
	case []any, []string:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// describe quotes a short rendering of v for messages.
func describe(v any) string {
	if s, ok := scalarText(v); ok {
		if _, isStr := v.(string); isStr {
			return strconv.Quote(clip(s, 40))
		}
		return clip(s, 40)
	}
	return jsonKind(v)
}

// clip shortens s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// clampInt converts an integer argument for the library, which checks its
// range: values beyond int32 become the nearest int32 bound (still out of
// every range, so the library's error names the field).
func clampInt(v int64) int {
	return int(max(min(v, math.MaxInt32), math.MinInt32))
}
