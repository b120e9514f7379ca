// Custom-service shows how to embed Postgram's REST API in a service of
// your own: the handler of transport/rest is mounted under /knowledge/ in
// your own http.ServeMux, next to your own routes, and your own
// authentication decides who the caller is. Here the bearer token is the
// application's session token, not a Postgram API key: a rest.Authenticator
// of our own maps each session to a postgram.Principal (scopes, visible
// types and visibilities), and admin.As gives the client that enforces it.
//
// The example serves on a loopback port, makes a few requests as two users
// and prints the answers. It runs on the embedded SQLite store in a
// temporary directory with the offline hashing embedder, so it needs no
// service and no network:
//
//	go run ./examples/custom-service
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/hashing"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/transport/rest"
)

// sessionAuth is our own authentication: it knows the application's
// sessions and what each user may do in the knowledge base.
type sessionAuth struct {
	admin    *postgram.Admin
	sessions map[string]postgram.Principal // session token → principal
}

// Authenticate implements rest.Authenticator. Unknown tokens must wrap
// postgram.ErrUnauthorized (the handler answers 401).
func (a *sessionAuth) Authenticate(ctx context.Context, token string) (*postgram.Client, error) {
	p, ok := a.sessions[token]
	if !ok {
		return nil, fmt.Errorf("unknown session: %w", postgram.ErrUnauthorized)
	}
	return a.admin.As(p), nil
}

var _ rest.Authenticator = (*sessionAuth)(nil)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "postgram-custom-service-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	store, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "postgram.db")})
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	client, err := postgram.New(ctx, postgram.Config{Store: store, Embedder: hashing.New(256)})
	if err != nil {
		return fmt.Errorf("new client: %w", err)
	}
	if err := client.Start(ctx); err != nil { // background embedding
		return fmt.Errorf("start: %w", err)
	}
	defer client.Stop(context.WithoutCancel(ctx))
	admin, err := client.Admin()
	if err != nil {
		return err
	}

	auth := &sessionAuth{admin: admin, sessions: map[string]postgram.Principal{
		"session-alice": {ClientID: "alice", Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}},
		"session-guest": {ClientID: "guest", Scopes: []postgram.Scope{postgram.ScopeRead},
			AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}},
	}}
	api := rest.New(rest.Config{Client: client, Auth: auth})

	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "hello from my own service")
	})
	// The REST routes live under /api; the prefix is stripped before them.
	mux.Handle("/knowledge/", http.StripPrefix("/knowledge", rest.RequestID(api)))

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Shutdown(context.WithoutCancel(ctx))
	base := "http://" + ln.Addr().String()

	call := func(method, path, session string, body any) error {
		var rd io.Reader
		if body != nil {
			b, err := json.Marshal(body)
			if err != nil {
				return err
			}
			rd = bytes.NewReader(b)
		}
		req, err := http.NewRequestWithContext(ctx, method, base+path, rd)
		if err != nil {
			return err
		}
		if session != "" {
			req.Header.Set("Authorization", "Bearer "+session)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s %s as %q → %s\n  %s\n", method, path, session, resp.Status, summarize(raw))
		return nil
	}

	steps := []struct {
		method, path, session string
		body                  any
	}{
		{"GET", "/hello", "", nil},
		{"POST", "/knowledge/api/entities", "session-alice", map[string]any{
			"type": "memory", "content": "The office wifi password rotates on the first Monday of each month.", "tags": []string{"office"}}},
		{"POST", "/knowledge/api/entities", "session-alice", map[string]any{
			"type": "memory", "content": "Salary review notes for the team.", "visibility": "personal"}},
		{"POST", "/knowledge/api/search", "session-guest", map[string]any{"query": "office wifi"}},
		{"POST", "/knowledge/api/search", "session-alice", map[string]any{"query": "salary review"}},
		{"POST", "/knowledge/api/search", "session-guest", map[string]any{"query": "salary review"}}, // personal: hidden
		{"POST", "/knowledge/api/entities", "session-guest", map[string]any{"type": "memory", "content": "guests cannot write"}},
		{"POST", "/knowledge/api/search", "", map[string]any{"query": "office"}},
	}
	for _, s := range steps {
		if err := call(s.method, s.path, s.session, s.body); err != nil {
			return fmt.Errorf("%s %s: %w", s.method, s.path, err)
		}
	}
	return nil
}

// summarize renders a response body in one line: the error envelope's code
// and message, a created entity, a search's contents, or the text as is.
func summarize(raw []byte) string {
	var v struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Entity *struct {
			Type       string `json:"type"`
			Visibility string `json:"visibility"`
			ClientID   string `json:"client_id"`
		} `json:"entity"`
		Results *[]struct {
			Entity struct {
				Content string `json:"content"`
			} `json:"entity"`
		} `json:"results"`
	}
	var syntax *json.SyntaxError
	if err := json.Unmarshal(raw, &v); errors.As(err, &syntax) {
		return string(bytes.TrimSpace(raw))
	}
	switch {
	case v.Error != nil:
		return fmt.Sprintf("error %s: %s", v.Error.Code, v.Error.Message)
	case v.Results != nil:
		s := fmt.Sprintf("%d result(s)", len(*v.Results))
		for _, r := range *v.Results {
			s += fmt.Sprintf("; %q", r.Entity.Content)
		}
		return s
	case v.Entity != nil:
		return fmt.Sprintf("stored a %s (visibility %s, client_id %s)", v.Entity.Type, v.Entity.Visibility, v.Entity.ClientID)
	}
	return string(bytes.TrimSpace(raw))
}
