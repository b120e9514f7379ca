package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// Request is a checked authorization request, ready for the consent page.
type Request struct {
	Client      *Client
	RedirectURI string
	State       string
	Challenge   string
	// Scopes are the scopes the client asked for (read when it named
	// none), to pre-select on the consent page.
	Scopes []postgram.Scope
	// Query is the original query, for the consent form to send back.
	Query url.Values
}

// RequestError is a refused authorization request. With Redirect set the
// client is told (the person is sent back to it with the error); without,
// the redirect URI itself cannot be trusted and the person sees Message.
type RequestError struct {
	Redirect string
	Message  string
}

func (e *RequestError) Error() string { return e.Message }

// ParseAuthorize checks an authorization request's query: a known client,
// a redirect_uri registered for it (exactly), response_type code and a
// PKCE S256 challenge.
func (s *Server) ParseAuthorize(ctx context.Context, q url.Values) (*Request, error) {
	cl, err := s.client(ctx, q.Get("client_id"))
	if errors.Is(err, driver.ErrNotFound) {
		return nil, &RequestError{Message: "This application is not registered here (unknown or revoked client_id)."}
	}
	if err != nil {
		return nil, err
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" && len(cl.RedirectURIs) == 1 {
		redirect = cl.RedirectURIs[0]
	}
	if !slices.Contains(cl.RedirectURIs, redirect) {
		return nil, &RequestError{Message: "The redirect_uri is not one registered by this application; nothing was sent to it."}
	}
	req := &Request{Client: cl, RedirectURI: redirect, State: q.Get("state"), Challenge: q.Get("code_challenge"), Query: q}
	back := func(code, desc string) error {
		return &RequestError{Redirect: errorRedirect(redirect, code, desc, req.State, s.issuer), Message: desc}
	}
	if q.Get("response_type") != "code" {
		return nil, back("unsupported_response_type", "response_type must be code")
	}
	if m := q.Get("code_challenge_method"); m != "S256" {
		return nil, back("invalid_request", "code_challenge_method must be S256 (PKCE; plain is refused)")
	}
	if len(req.Challenge) != 43 {
		return nil, back("invalid_request", "code_challenge must be a base64url SHA-256 (43 characters)")
	}
	if res := q.Get("resource"); res != "" && strings.TrimRight(res, "/") != s.Resource() {
		return nil, back("invalid_target", "resource must be "+s.Resource())
	}
	for _, sc := range strings.Fields(q.Get("scope")) {
		if !slices.Contains(scopeNames, sc) {
			return nil, back("invalid_scope", fmt.Sprintf("scope %q is not one of %s", clip(sc), strings.Join(scopeNames, ", ")))
		}
		req.Scopes = append(req.Scopes, postgram.Scope(sc))
	}
	if len(req.Scopes) == 0 {
		req.Scopes = []postgram.Scope{postgram.ScopeRead}
	}
	return req, nil
}

func errorRedirect(redirect, code, desc, state, iss string) string {
	v := url.Values{"error": {code}, "error_description": {desc}, "iss": {iss}}
	if state != "" {
		v.Set("state", state)
	}
	return withQuery(redirect, v)
}

func withQuery(redirect string, v url.Values) string {
	sep := "?"
	if strings.Contains(redirect, "?") {
		sep = "&"
	}
	return redirect + sep + v.Encode()
}

// Approve records the person's consent with the rights they chose and
// returns where to send them: the client's redirect URI with a fresh
// single-use code. The rights must lie within the person's own (mine).
func (s *Server) Approve(ctx context.Context, req *Request, userID, userName string, mine postgram.Principal, rights Rights) (string, error) {
	if len(rights.Scopes) == 0 {
		return "", &postgram.FieldError{Field: "scopes", Message: "choose at least one right"}
	}
	if !rights.Within(mine) {
		return "", &postgram.FieldError{Field: "scopes", Message: "you cannot grant rights you do not have"}
	}
	codeTok := secret()
	exp := s.now().Add(s.code)
	c := code{ClientID: req.Client.ID, RedirectURI: req.RedirectURI, Challenge: req.Challenge, UserID: userID,
		UserName: userName, Rights: rights}
	if _, err := s.put(ctx, kindCode, digest(codeTok), c, &exp); err != nil {
		return "", fmt.Errorf("oauth: store code: %w", err)
	}
	v := url.Values{"code": {codeTok}, "iss": {s.issuer}}
	if req.State != "" {
		v.Set("state", req.State)
	}
	return withQuery(req.RedirectURI, v), nil
}

// Deny returns where to send a person who refused: the client's redirect
// URI with error=access_denied.
func (s *Server) Deny(req *Request) string {
	return errorRedirect(req.RedirectURI, "access_denied", "the person refused", req.State, s.issuer)
}
