package mcp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
)

// testParams has one argument of every kind.
var testParams = []param{
	{Name: "s", Kind: kindString},
	{Name: "i", Kind: kindInteger},
	{Name: "n", Kind: kindNumber},
	{Name: "b", Kind: kindBoolean},
	{Name: "l", Kind: kindStrings},
	{Name: "o", Kind: kindObject},
	{Name: "e", Kind: kindString, Enum: []string{"x", "y"}},
}

func decodeT(t *testing.T, s string) map[string]any {
	t.Helper()
	m, err := decodeArguments([]byte(s))
	if err != nil {
		t.Fatalf("decodeArguments(%s): %v", s, err)
	}
	return m
}

func TestCoerceAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want args
	}{
		{`{}`, args{}},
		{`{"s":"x","i":5,"n":0.5,"b":true,"l":["a","b"],"o":{"k":"v"}}`,
			args{"s": "x", "i": int64(5), "n": 0.5, "b": true, "l": []string{"a", "b"}, "o": map[string]any{"k": "v"}}},
		// Stringly typed, as real agent clients send them.
		{`{"i":"5","n":"0.3","b":"true","l":"[\"a\",\"b\"]","o":"{\"k\":1}"}`,
			args{"i": int64(5), "n": 0.3, "b": true, "l": []string{"a", "b"}, "o": map[string]any{"k": json.Number("1")}}},
		{`{"i":" 7 ","b":"FALSE","l":"a, b ,,c"}`, args{"i": int64(7), "b": false, "l": []string{"a", "b", "c"}}},
		{`{"b":"1"}`, args{"b": true}},
		{`{"b":"0"}`, args{"b": false}},
		{`{"b":1}`, args{"b": true}},
		{`{"i":5.0}`, args{"i": int64(5)}},
		{`{"i":"1e2"}`, args{"i": int64(100)}},
		{`{"l":"single"}`, args{"l": []string{"single"}}},
		{`{"l":[]}`, args{"l": []string{}}},
		{`{"l":"[]"}`, args{"l": []string{}}},
		{`{"l":[1,true]}`, args{"l": []string{"1", "true"}}},
		{`{"s":42}`, args{"s": "42"}},
		{`{"s":""}`, args{"s": ""}},
		// null, and empty strings for non-string kinds, count as absent.
		{`{"s":null,"i":null,"l":null,"o":null}`, args{}},
		{`{"i":"","n":" ","b":"","l":"","o":"","e":""}`, args{}},
		{`{"e":"x"}`, args{"e": "x"}},
		{`null`, args{}},
	}
	for _, tt := range tests {
		got, err := coerce(testParams, decodeT(t, tt.in))
		if err != nil {
			t.Errorf("coerce(%s): %v", tt.in, err)
			continue
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("coerce(%s) (-want +got):\n%s", tt.in, d)
		}
	}
}

func TestCoerceRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, field, msg string
	}{
		{`{"i":"abc"}`, "i", "must be an integer"},
		{`{"i":5.5}`, "i", "must be an integer"},
		{`{"i":"0x10"}`, "i", "must be an integer"},
		{`{"i":1e300}`, "i", "must be an integer"},
		{`{"n":"NaN"}`, "n", "must be a number"},
		{`{"n":"Inf"}`, "n", "must be a number"},
		{`{"n":[1]}`, "n", "must be a number"},
		{`{"b":"yes please"}`, "b", "must be a boolean"},
		{`{"b":2}`, "b", "must be a boolean"},
		{`{"l":"[1,"}`, "l", "not a JSON array"},
		{`{"l":[["a"]]}`, "l", "item 0 must be a string"},
		{`{"l":{"a":1}}`, "l", "must be an array of strings"},
		{`{"o":"[1]"}`, "o", "must be a JSON object"},
		{`{"o":"{\"a\":1} trailing"}`, "o", "must be a JSON object"},
		{`{"o":5}`, "o", "must be a JSON object"},
		{`{"s":{"a":1}}`, "s", "must be a string"},
		{`{"zzz":1,"aaa":2}`, "aaa", `unknown argument "aaa", "zzz"`},
	}
	for _, tt := range tests {
		_, err := coerce(testParams, decodeT(t, tt.in))
		var fe *postgram.FieldError
		if !errors.As(err, &fe) {
			t.Errorf("coerce(%s) = %v, want a *FieldError", tt.in, err)
			continue
		}
		if fe.Field != tt.field || !strings.Contains(fe.Message, tt.msg) {
			t.Errorf("coerce(%s) = field %q message %q, want field %q message containing %q", tt.in, fe.Field, fe.Message, tt.field, tt.msg)
		}
		if env := apierror.From(err); env.Error.Code != apierror.Validation || env.Error.Details["field"] != tt.field {
			t.Errorf("coerce(%s) envelope = %+v, want VALIDATION naming %q", tt.in, env.Error, tt.field)
		}
	}
}

func TestCoerceRequired(t *testing.T) {
	t.Parallel()
	ps := []param{{Name: "id", Kind: kindString, Required: true}, {Name: "version", Kind: kindInteger, Required: true}}
	for _, in := range []string{`{}`, `{"id":null,"version":1}`, `{"id":"x","version":""}`} {
		_, err := coerce(ps, decodeT(t, in))
		var fe *postgram.FieldError
		if !errors.As(err, &fe) || !strings.Contains(fe.Message, "is required") {
			t.Errorf("coerce(%s) = %v, want a required error", in, err)
		}
	}
}

func TestDecodeArgumentsRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`[1]`, `"x"`, `{"a":1} {}`, `{`, `5`} {
		_, err := decodeArguments([]byte(in))
		if FieldOf := postgram.FieldOf(err); FieldOf != "arguments" {
			t.Errorf("decodeArguments(%s) = %v, want an error naming arguments", in, err)
		}
	}
}

// FuzzCoerce: coercion never panics; it either returns values of the
// declared Go types or a VALIDATION error naming an argument.
func FuzzCoerce(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"s":"x","i":"5","n":"0.3","b":"true","l":"[\"a\"]","o":"{\"k\":1}"}`,
		`{"l":"a,b","i":1e3,"b":0}`, `{"unknown":1}`, `{"o":{"nested":[1,{"x":null}]}}`,
		`{"i":"-9223372036854775808","n":"1e308"}`, `{"l":[1,"2",true,null]}`, `null`, `[]`,
	} {
		f.Add([]byte(s), "5")
	}
	f.Add([]byte(`{}`), "[\"a\",\"b\"]")
	f.Add([]byte(`{}`), "{\"k\":\"v\"}")
	f.Add([]byte(`{}`), "true")
	f.Fuzz(func(t *testing.T, data []byte, str string) {
		check := func(raw map[string]any) {
			a, err := coerce(testParams, raw)
			if err != nil {
				var fe *postgram.FieldError
				if !errors.As(err, &fe) || fe.Field == "" || !strings.Contains(fe.Error(), fe.Field) {
					t.Fatalf("coerce error %v (%T) is not a FieldError naming an argument", err, err)
				}
				if env := apierror.From(err); env.Error.Code != apierror.Validation {
					t.Fatalf("coerce error maps to %s, want VALIDATION", env.Error.Code)
				}
				if _, known := raw[fe.Field]; !known && !strings.HasSuffix(fe.Field, "…") {
					if !strings.Contains(fe.Message, "is required") {
						t.Fatalf("error names %q, which is not an argument given", fe.Field)
					}
				}
				return
			}
			for name, v := range a {
				var p param
				for _, q := range testParams {
					if q.Name == name {
						p = q
					}
				}
				ok := false
				switch p.Kind {
				case kindString:
					_, ok = v.(string)
				case kindInteger:
					_, ok = v.(int64)
				case kindNumber:
					var f float64
					f, ok = v.(float64)
					ok = ok && f == f && f-f == 0 // finite
				case kindBoolean:
					_, ok = v.(bool)
				case kindStrings:
					_, ok = v.([]string)
				case kindObject:
					_, ok = v.(map[string]any)
				}
				if !ok {
					t.Fatalf("argument %q coerced to %T (%v), not its declared kind %v", name, v, v, p.Kind)
				}
			}
			if _, err := json.Marshal(map[string]any(a)); err != nil {
				t.Fatalf("coerced arguments do not marshal: %v", err)
			}
		}
		if raw, err := decodeArguments(data); err == nil {
			check(raw)
		} else if postgram.FieldOf(err) != "arguments" {
			t.Fatalf("decodeArguments error %v does not name arguments", err)
		}
		// The same string given for every argument.
		raw := map[string]any{}
		for _, p := range testParams {
			raw[p.Name] = str
		}
		check(raw)
	})
}
