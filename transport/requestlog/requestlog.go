// Package requestlog carries what an access log line needs to know about a
// request from the handler that learns it to the middleware that writes
// the line: the id of the API key that authenticated it. rest.AccessLog
// puts a State into every request's context; the REST API's and the MCP
// endpoint's authentication record the key id in it.
package requestlog

import (
	"context"
	"sync"
)

// State is one request's loggable facts.
type State struct {
	mu    sync.Mutex
	keyID string
}

type stateKey struct{}

// NewContext returns ctx carrying a fresh State, and the State.
func NewContext(ctx context.Context) (context.Context, *State) {
	s := &State{}
	return context.WithValue(ctx, stateKey{}, s), s
}

// SetKeyID records the authenticated key's id in ctx's State (nothing
// when ctx carries none).
func SetKeyID(ctx context.Context, id string) {
	if s, ok := ctx.Value(stateKey{}).(*State); ok && s != nil {
		s.mu.Lock()
		s.keyID = id
		s.mu.Unlock()
	}
}

// KeyID returns the recorded key id, or "".
func (s *State) KeyID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keyID
}
