package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
)

// TestOAuthWithTheOfficialSDK: the MCP TypeScript SDK's client
// (@modelcontextprotocol/sdk, e2e/oauthclient) finds postgram-server's
// authorization server from the 401 of /mcp, registers, sends the person
// to the consent page (answered here as a signed-in browser would), trades
// the code with its PKCE verifier, calls tools with the access token
// (audited under its key), and refreshes by itself once that token is
// revoked. On PostgreSQL, through the real binaries.
func TestOAuthWithTheOfficialSDK(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("oauthclient", "node_modules", "@modelcontextprotocol", "sdk")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the MCP TypeScript SDK is not installed (%v): run scripts/test.sh, or npm ci --prefix e2e/oauthclient", err)
	}
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	dsn := freshDSN(t)
	s := startServer(t, dsn, fmt.Sprintf("PORT=%d", port), "OAUTH_ENABLED=true", "PUBLIC_BASE_URL="+base)
	if s.URL != base {
		t.Fatalf("server at %s, PUBLIC_BASE_URL %s", s.URL, base)
	}
	key, err := os.ReadFile(s.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	browser := signUp(t, base, strings.TrimSpace(string(key)))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", freePort(t))
	cmd := exec.CommandContext(ctx, "node", "client.mjs", base, redirect)
	cmd.Dir = "oauthclient"
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	read := func(prefix string) string {
		t.Helper()
		for lines.Scan() {
			if rest, ok := strings.CutPrefix(lines.Text(), prefix+" "); ok {
				return rest
			}
		}
		_ = cmd.Wait()
		t.Fatalf("the SDK client never said %s:\n%s\nserver:\n%s", prefix, stderr.String(), s.stderr.String())
		return ""
	}

	authURL, err := url.Parse(read("AUTHORIZE"))
	if err != nil || authURL.Path != "/oauth/authorize" || authURL.Query().Get("code_challenge_method") != "S256" {
		t.Fatalf("authorization URL %v %v", authURL, err)
	}
	code := consentAllow(t, browser, authURL.String(), redirect, "read", "write")
	fmt.Fprintf(stdin, "CODE %s\n", code)

	var called struct {
		Tools   []string `json:"tools"`
		Stored  string   `json:"stored"`
		Found   string   `json:"found"`
		Refresh string   `json:"refresh"`
	}
	if err := json.Unmarshal([]byte(read("CALLED")), &called); err != nil {
		t.Fatal(err)
	}
	if len(called.Tools) < 10 || called.Stored == "" || !strings.Contains(called.Found, "OAuth e2e note one") || called.Refresh == "" {
		t.Fatalf("first calls: %+v", called)
	}
	// The access token is an API key: its use is audited under it.
	admin := postgramtest.Admin(t, adminClient(t, dsn))
	keys, err := admin.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var tokenKey *postgram.APIKey
	for i := range keys {
		if strings.HasPrefix(keys[i].Name, "oauth: SDK e2e client") && keys[i].RevokedAt == nil {
			tokenKey = &keys[i]
		}
	}
	if tokenKey == nil || tokenKey.ExpiresAt == nil || time.Until(*tokenKey.ExpiresAt) > time.Hour {
		t.Fatalf("access token key: %+v", tokenKey)
	}
	audit, err := admin.Audit(context.Background(), postgram.AuditFilter{KeyID: tokenKey.ID.String()})
	if err != nil || len(audit) == 0 {
		t.Fatalf("audit under the token's key: %v %v", audit, err)
	}
	// Revoke the access token: the SDK gets 401, refreshes (rotation) and
	// calls again.
	if err := admin.RevokeKey(context.Background(), tokenKey.ID); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(stdin, "AGAIN")
	first := called.Refresh
	if err := json.Unmarshal([]byte(read("CALLED")), &called); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(called.Found, "OAuth e2e note two") || called.Refresh == "" || called.Refresh == first {
		t.Fatalf("after refresh: %+v", called)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("SDK client: %v\n%s", err, stderr.String())
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

var (
	csrfField    = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	requestField = regexp.MustCompile(`name="request" value="([^"]+)"`)
)

// signUp creates the web app's admin with the bootstrap key and returns
// the signed-in browser (a cookie jar that does not follow redirects).
func signUp(t *testing.T, base, adminKey string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	page := fetch(t, b, base+"/setup")
	res, err := b.PostForm(base+"/setup", url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]}, "admin_key": {adminKey},
		"name": {"ada"}, "password": {"correct horse battery"}, "confirm": {"correct horse battery"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("setup: %d", res.StatusCode)
	}
	return b
}

func fetch(t *testing.T, b *http.Client, u string) string {
	t.Helper()
	res, err := b.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", u, res.StatusCode, body)
	}
	return string(body)
}

// consentAllow answers the consent page of authURL with the scopes and
// returns the code sent to redirect.
func consentAllow(t *testing.T, b *http.Client, authURL, redirect string, scopes ...string) string {
	t.Helper()
	page := fetch(t, b, authURL)
	req := html.UnescapeString(requestField.FindStringSubmatch(page)[1])
	u, _ := url.Parse(authURL)
	res, err := b.PostForm(u.Scheme+"://"+u.Host+"/oauth/authorize", url.Values{"csrf": {csrfField.FindStringSubmatch(page)[1]},
		"request": {req}, "decision": {"allow"}, "scope": scopes})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	to, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || err != nil || !strings.HasPrefix(to.String(), redirect) || to.Query().Get("code") == "" {
		t.Fatalf("consent: %d %q\n%s", res.StatusCode, res.Header.Get("Location"), body)
	}
	return to.Query().Get("code")
}
