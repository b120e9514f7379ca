package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/mcp"
)

// refuseAll is an authenticator that knows no key.
type refuseAll struct{}

func (refuseAll) Authenticate(context.Context, string) (*postgram.Client, error) {
	return nil, fmt.Errorf("unknown API key: %w", postgram.ErrUnauthorized)
}

// TestResourceMetadataChallenge: with OAuth on, a 401 names the
// protected-resource metadata (RFC 9728), and invalid_token when a token
// was sent and refused; without it, the challenge stays plain.
func TestResourceMetadataChallenge(t *testing.T) {
	t.Parallel()
	const meta = "https://notes.example/.well-known/oauth-protected-resource/mcp"
	for _, tc := range []struct {
		opts   []mcp.HTTPOption
		header string
		want   string
	}{
		{nil, "", `Bearer realm="postgram"`},
		{[]mcp.HTTPOption{mcp.WithResourceMetadata(meta)}, "", `Bearer realm="postgram", resource_metadata="` + meta + `"`},
		{[]mcp.HTTPOption{mcp.WithResourceMetadata(meta)}, "Bearer nope", `Bearer realm="postgram", resource_metadata="` + meta + `", error="invalid_token"`},
	} {
		srv := httptest.NewServer(mcp.HTTPHandler(mcp.NewServer(mcp.Config{}), refuseAll{}, nil, tc.opts...))
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{}`))
		if tc.header != "" {
			req.Header.Set("Authorization", tc.header)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		srv.Close()
		if res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != tc.want {
			t.Errorf("%d %q, want 401 %q", res.StatusCode, res.Header.Get("WWW-Authenticate"), tc.want)
		}
	}
}
