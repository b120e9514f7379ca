package oauth

import (
	"testing"

	"github.com/postgram-go/postgram"
)

func TestRightsWithin(t *testing.T) {
	t.Parallel()
	reader := postgram.Principal{Scopes: []postgram.Scope{postgram.ScopeRead}, AllowedTypes: []postgram.EntityType{"memory", "task"}}
	for _, tc := range []struct {
		r    Rights
		p    postgram.Principal
		want bool
	}{
		{Rights{Scopes: []postgram.Scope{"read"}, Types: []postgram.EntityType{"memory"}}, reader, true},
		{Rights{Scopes: []postgram.Scope{"read", "write"}, Types: []postgram.EntityType{"memory"}}, reader, false},
		{Rights{Scopes: []postgram.Scope{"read"}}, reader, false}, // all types is wider than memory+task
		{Rights{Scopes: []postgram.Scope{"read"}, Types: []postgram.EntityType{"person"}}, reader, false},
		{Rights{Scopes: []postgram.Scope{"read", "backup"}}, postgram.Principal{Scopes: []postgram.Scope{"read", "write", "delete", "sync", "backup"}}, true},
		{Rights{Scopes: []postgram.Scope{"read"}, Visibilities: []postgram.Visibility{"work"}}, postgram.Principal{Scopes: []postgram.Scope{"read"}}, true},
	} {
		if got := tc.r.Within(tc.p); got != tc.want {
			t.Errorf("%+v within %+v = %v, want %v", tc.r, tc.p, got, tc.want)
		}
	}
}

func TestCheckRedirectAndIssuer(t *testing.T) {
	t.Parallel()
	for u, ok := range map[string]bool{
		"https://claude.example/api/callback": true, "http://127.0.0.1:33418/cb": true, "http://localhost/cb": true,
		"http://[::1]:8080/cb": true, "http://example.com/cb": false, "https://x.example/cb#f": false, "javascript:alert(1)": false,
		"/relative": false, "custom-scheme://cb": false,
	} {
		if err := checkRedirect(u); (err == nil) != ok {
			t.Errorf("checkRedirect(%q) = %v, want ok=%v", u, err, ok)
		}
	}
	for iss, ok := range map[string]bool{
		"https://notes.example.com": true, "http://127.0.0.1:3100": true, "http://notes.example.com": false,
		"https://notes.example.com/sub": false, "notes.example.com": false, "": false, "https://x.example?q=1": false,
	} {
		if err := checkIssuer(iss); (err == nil) != ok {
			t.Errorf("checkIssuer(%q) = %v, want ok=%v", iss, err, ok)
		}
	}
}

func TestVerifier(t *testing.T) {
	t.Parallel()
	// RFC 7636 appendix B's example.
	const v, c = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk", "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
	if !verifierOK(v, c) || verifierOK(v+"x", c) || verifierOK("short", c) || verifierOK(v[:42]+"!", c) {
		t.Fatal("PKCE S256 check")
	}
}
