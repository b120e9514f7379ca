package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
)

// TestOAuthWithTheOfficialSDK: the MCP TypeScript SDK's client
// (@modelcontextprotocol/sdk, e2e/oauthclient) finds postgram-server's
// authorization server from the 401 of /mcp, registers, sends the person
// to the consent page (a signed-in headless Chromium allows it), trades
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
	browser := signUpInChromium(t, base, strings.TrimSpace(string(key)))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The client's redirect target: it receives the code when Chromium
	// follows the consent's answer.
	codes := make(chan url.Values, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case codes <- r.URL.Query():
		default:
		}
		fmt.Fprint(w, "<!doctype html><title>signed in</title><p>You may close this window.</p>")
	}))
	defer cb.Close()
	redirect := cb.URL + "/callback"
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
	code := consentInChromium(t, browser, authURL.String(), codes)
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

// signUpInChromium starts a headless Chromium and creates the web app's
// admin through /setup with the bootstrap key; the returned context is the
// signed-in browser.
func signUpInChromium(t *testing.T, base, adminKey string) context.Context {
	t.Helper()
	exe := os.Getenv("POSTGRAM_TEST_CHROMIUM")
	if exe == "" {
		var err error
		if exe, err = exec.LookPath("chromium"); err != nil {
			t.Fatal("no Chromium: install Debian's chromium (scripts/test.sh does) or set POSTGRAM_TEST_CHROMIUM")
		}
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true), chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-dev-shm-usage", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelC := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelC(); cancelB(); cancelA() })
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/setup"),
		chromedp.Poll[chromedp.Void](`document.readyState === "complete" && document.querySelector('input[name="admin_key"]') !== null`),
		chromedp.SendKeys(chromedp.CSS(`input[name="admin_key"]`), adminKey),
		chromedp.SendKeys(chromedp.CSS(`input[name="name"]`), "ada"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "correct horse battery"),
		chromedp.SendKeys(chromedp.CSS(`input[name="confirm"]`), "correct horse battery")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Submit(chromedp.CSS(`form[action="/setup"]`))); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// consentInChromium opens the authorization URL in the signed-in browser,
// checks that the consent page names the client, allows, and returns the
// code that reached the client's redirect URI.
func consentInChromium(t *testing.T, ctx context.Context, authURL string, codes <-chan url.Values) string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(authURL),
		chromedp.Poll[chromedp.Void](`document.readyState === "complete" && document.querySelector("form.consent") !== null &&
			document.body.textContent.includes("SDK e2e client")`)); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#allow`))); err != nil {
		t.Fatal(err)
	}
	select {
	case q := <-codes:
		if q.Get("code") == "" {
			t.Fatalf("the client got no code: %v", q)
		}
		return q.Get("code")
	case <-time.After(30 * time.Second):
		t.Fatal("the browser never reached the client's redirect URI")
		return ""
	}
}
