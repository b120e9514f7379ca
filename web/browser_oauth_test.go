package web

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserConsent: in a real browser, a signed-in person opens an OAuth
// client's authorization request, sees the consent page, narrows the
// rights to memories and allows: Chromium follows the redirect to the
// client (the page's CSP must allow that form-action) with a code that
// trades for tokens with exactly those rights.
func TestBrowserConsent(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	got := make(chan url.Values, 1)
	cb := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case got <- r.URL.Query():
		default:
		}
		fmt.Fprint(w, `<!doctype html><title>back at the client</title><p id="back">done</p>`)
	}))
	t.Cleanup(cb.Close)
	c := s.register(cb.URL + "/cb")
	ctx, problems := browserCtx(t)
	signInBrowser(t, ctx, s)
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	do(chromedp.Navigate(s.srv.URL+c.authorizeQuery(nil)),
		chromedp.Poll[chromedp.Void](`document.readyState === "complete" && document.querySelector("form.consent") !== null`),
		chromedp.Click(chromedp.CSS(`form.consent input[name="type"][value="memory"]`)))
	if _, err := chromedp.RunResponse(ctx, chromedp.Click(chromedp.CSS(`#allow`))); err != nil {
		t.Fatal(err)
	}
	// A query waits across the navigation to the client; a Poll runs in
	// one page's JavaScript context and fails when the redirect replaces
	// it ("Cannot find context with specified id").
	do(chromedp.WaitVisible(chromedp.CSS(`#back`)))
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if u, err := url.Parse(loc); err != nil || u.Path != "/cb" {
		t.Fatalf("the browser is at %q, want the client's /cb", loc)
	}
	var q url.Values
	select {
	case q = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the browser never reached the client")
	}
	if q.Get("state") != "st-1" || q.Get("code") == "" {
		t.Fatalf("callback query: %v", q)
	}
	st, tok := s.exchange(c, q.Get("code"))
	if st != 200 || tok["scope"] != "read write" {
		t.Fatalf("exchange: %d %v", st, tok)
	}
	cl, err := s.admin.Authenticate(t.Context(), tok["access_token"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if p := cl.Principal(); len(p.AllowedTypes) != 1 || p.AllowedTypes[0] != "memory" {
		t.Fatalf("token rights: %+v", p)
	}
	for _, p := range problems() {
		if !strings.Contains(p, "favicon") {
			t.Errorf("browser problem: %s", p)
		}
	}
}
