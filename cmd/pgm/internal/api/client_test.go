package api

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram/transport/apierror"
	"github.com/postgram-go/postgram/wire"
)

func TestSingleEntityShapes(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"entity":{"id":"00000000-0000-4000-8000-0000000000e1","type":"memory","version":2,"metadata":{"n":12345678901234567890}}}`,
		`{"id":"00000000-0000-4000-8000-0000000000e1","type":"memory","version":2,"metadata":{"n":12345678901234567890}}`, // bare, tolerated
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.EscapedPath() != "/api/entities/a%2Fb" {
				t.Errorf("path %q", r.URL.EscapedPath())
			}
			_, _ = w.Write([]byte(body))
		}))
		c := &Client{BaseURL: srv.URL + "/", HTTP: srv.Client()}
		e, raw, err := c.Get(context.Background(), "a/b")
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if e.ID.String() != "00000000-0000-4000-8000-0000000000e1" || e.Version != 2 || string(raw) != body {
			t.Fatalf("%s: %+v", body, e)
		}
		if n := e.Metadata["n"].(json.Number).String(); n != "12345678901234567890" {
			t.Fatalf("metadata number %s", n)
		}
	}
}

func TestNoEntity(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()
	_, _, err := (&Client{BaseURL: srv.URL}).Get(context.Background(), "x")
	var pe *ProtocolError
	if !errors.As(err, &pe) {
		t.Fatalf("err %v, want a ProtocolError", err)
	}
}

func TestDegradationForms(t *testing.T) {
	t.Parallel()
	var resp wire.SearchResponse
	if err := json.Unmarshal([]byte(`{"results":[],"degraded":["vector",{"component":"vector","reason":"down"}]}`), &resp); err != nil {
		t.Fatal(err)
	}
	if len(resp.Degraded) != 2 || resp.Degraded[0].Component != "vector" || resp.Degraded[1].Reason != "down" {
		t.Fatalf("%+v", resp.Degraded)
	}
}

func TestResponseError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		body   string
		code   apierror.Code
	}{
		{409, `{"error":{"code":"CONFLICT","message":"m","details":{"current":{"version":3}}}}`, apierror.Conflict},
		{400, `{"error":{"code":"WHATEVER","message":"m"}}`, apierror.Validation},
		{418, `teapot`, apierror.Validation},
		{504, `gateway timeout`, apierror.Unavailable},
		{500, ``, apierror.Internal},
	} {
		err := responseError(tc.status, []byte(tc.body))
		var re *apierror.ResponseError
		if !errors.As(err, &re) || re.Body.Code != tc.code || re.Status != tc.status {
			t.Errorf("%d %s: %#v", tc.status, tc.body, err)
		}
	}
	err := responseError(409, []byte(`{"error":{"code":"CONFLICT","message":"m","details":{"current":{"version":3}}}}`))
	v := err.(*apierror.ResponseError).Body.Details["current"].(map[string]any)["version"]
	if v.(json.Number).String() != "3" {
		t.Fatalf("details number %v", v)
	}
}

func TestUnreachableReasons(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	_, _, err = (&Client{BaseURL: url, HTTP: &http.Client{}}).Queue(context.Background(), QueueQuery{})
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Reason() != "connection refused" || ue.TimedOut {
		t.Fatalf("closed port: %v", err)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer srv.Close()
	_, _, err = (&Client{BaseURL: srv.URL, HTTP: &http.Client{Timeout: 50 * time.Millisecond}}).Queue(context.Background(), QueueQuery{})
	if !errors.As(err, &ue) || !ue.TimedOut || ue.Reason() != "no response within 50ms" {
		t.Fatalf("timeout: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "cannot reach the Postgram server at "+srv.URL+": ") {
		t.Fatalf("message %q", err)
	}

	// The caller's cancellation is not "unreachable".
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = (&Client{BaseURL: srv.URL}).Queue(ctx, QueueQuery{})
	if !errors.Is(err, context.Canceled) || errors.As(err, &ue) {
		t.Fatalf("canceled: %v", err)
	}
}
