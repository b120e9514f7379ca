package driver

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error the library returns wraps exactly one of them,
// so callers (and the REST, MCP and CLI adapters) classify failures with
// errors.Is and map them to a status in one place.
var (
	// ErrNotFound: the entity, edge or key does not exist in this workspace,
	// or the caller may not see it.
	ErrNotFound = errors.New("not found")
	// ErrConflict: an optimistic-concurrency check failed. The error is a
	// *ConflictError carrying the current state.
	ErrConflict = errors.New("conflict")
	// ErrInvalidArgument: a value failed validation. The error is a
	// *FieldError naming the field.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrForbidden: the caller is authenticated but lacks a scope, entity
	// type or visibility the operation needs.
	ErrForbidden = errors.New("forbidden")
	// ErrUnauthorized: the caller is not authenticated (missing, unknown or
	// revoked key).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrUnavailable: a dependency (the store, the embedding provider) cannot
	// serve the request right now.
	ErrUnavailable = errors.New("unavailable")
	// ErrEmbeddingFailed: the embedding provider answered with an error.
	ErrEmbeddingFailed = errors.New("embedding failed")
	// ErrLLMFailed: the LLM provider (extraction, edge validation,
	// grooming) refused, or answered with something that is not the
	// requested JSON (malformed, truncated, off-schema, a refusal).
	ErrLLMFailed = errors.New("llm failed")
	// ErrRateLimited: too many requests.
	ErrRateLimited = errors.New("rate limited")
	// ErrModelMismatch: the store's active embedding model differs from the
	// configured embedder; an explicit migration is needed.
	ErrModelMismatch = errors.New("embedding model mismatch")
)

// FieldError is an invalid-argument error that names the offending field.
type FieldError struct {
	Field   string // snake_case field name as it appears on the wire, e.g. "visibility" or "ids[3]"
	Message string // what is wrong and what is accepted
}

func (e *FieldError) Error() string { return fmt.Sprintf("invalid %s: %s", e.Field, e.Message) }

// Unwrap makes errors.Is(err, ErrInvalidArgument) true.
func (e *FieldError) Unwrap() error { return ErrInvalidArgument }

// ConflictError reports a stale version; Current is the entity as stored now.
type ConflictError struct {
	ID       string
	Expected int64
	Current  *Entity
}

func (e *ConflictError) Error() string {
	if e.Current != nil {
		return fmt.Sprintf("version conflict on %s: expected version %d, current version is %d", e.ID, e.Expected, e.Current.Version)
	}
	return fmt.Sprintf("version conflict on %s: expected version %d", e.ID, e.Expected)
}

// Unwrap makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// FieldOf returns the field named by a *FieldError in err's chain, or "".
func FieldOf(err error) string {
	var fe *FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// ModelMismatchError reports that the store's active embedding model is not
// the configured embedder's; backends return it from EnsureModel, and its
// message tells the operator what to do.
type ModelMismatchError struct {
	Active     ModelInfo
	Configured ModelInfo
}

func (e *ModelMismatchError) Error() string {
	a, c := e.Active, e.Configured
	return fmt.Sprintf("%v: the store's active embedding model is %s/%s (%d dimensions) but the configured embedder is %s/%s (%d dimensions); "+
		"configure EMBEDDING_PROVIDER, EMBEDDING_MODEL and EMBEDDING_DIMENSIONS to match the store, or switch the store with "+
		"`pgm-admin embeddings migrate --provider %s --model %s --dimensions %d --yes` (re-embeds every chunk)",
		ErrModelMismatch, a.Provider, a.Name, a.Dimensions, c.Provider, c.Name, c.Dimensions, c.Provider, c.Name, c.Dimensions)
}

// Unwrap makes errors.Is(err, ErrModelMismatch) true.
func (e *ModelMismatchError) Unwrap() error { return ErrModelMismatch }

// BackendError is a store's failure classified as one of the sentinels
// (Kind: ErrUnavailable, ErrInvalidArgument, ...). Public says what happened
// in words a client may read; Err is the driver's own error, whose text
// can carry SQL, values, host names or file paths: it is for logs only.
// Transports (transport/apierror) show Public, never Err.
type BackendError struct {
	Kind   error
	Public string
	Err    error
}

func (e *BackendError) Error() string {
	if e.Err == nil {
		return e.Kind.Error() + ": " + e.Public
	}
	return e.Kind.Error() + ": " + e.Public + " (" + e.Err.Error() + ")"
}

// Unwrap makes errors.Is(err, e.Kind) true and keeps the driver's error
// reachable for errors.As.
func (e *BackendError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}
