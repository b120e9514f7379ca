package web

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp/totp"
)

// TestBrowserKeyCreationAndTwoFactor: in a real browser an admin creates
// an API key (the token is shown once), turns on two-factor sign-in with a
// code from the secret shown, signs out, and signs in again with password
// and code.
func TestBrowserKeyCreationAndTwoFactor(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	ctx, problems := browserCtx(t)
	signInBrowser(t, ctx, s)
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatal(err)
		}
	}
	submit := func(a chromedp.Action[chromedp.Void]) {
		t.Helper()
		if _, err := chromedp.RunResponse(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	at := func(path, sel string) chromedp.Action[chromedp.Void] {
		return chromedp.Poll[chromedp.Void](fmt.Sprintf(`document.readyState === "complete" && location.pathname === %q && document.querySelector(%q) !== null`, path, sel))
	}
	text := func(sel string) string {
		t.Helper()
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	// Create a key with the write scope, limited to tasks.
	do(chromedp.Navigate(s.srv.URL+"/admin/keys"), at("/admin/keys", `form.key`),
		chromedp.SendKeys(chromedp.CSS(`form.key input[name="name"]`), "ci-bot"),
		chromedp.Click(chromedp.CSS(`form.key input[name="scope"][value="write"]`)),
		chromedp.Click(chromedp.CSS(`form.key input[name="type"][value="task"]`)))
	submit(chromedp.Submit(chromedp.CSS(`form.key`)))
	do(at("/admin/keys", `code.token`))
	token := text(`code.token`)
	c, err := s.admin.Authenticate(t.Context(), token)
	if err != nil {
		t.Fatalf("the key shown does not authenticate: %v", err)
	}
	if p := c.Principal(); len(p.AllowedTypes) != 1 || p.AllowedTypes[0] != "task" {
		t.Fatalf("the key's limits: %+v", p)
	}

	// Turn on two-factor sign-in.
	do(chromedp.Navigate(s.srv.URL+"/account"), at("/account", `form[action="/account/totp"]`))
	submit(chromedp.Submit(chromedp.CSS(`form[action="/account/totp"]`)))
	do(at("/account/totp", `code.secret`))
	secret := text(`code.secret`)
	code, err := totp.GenerateCode(secret, s.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	do(chromedp.SendKeys(chromedp.CSS(`form[action="/account/totp/enable"] input[name="code"]`), code))
	submit(chromedp.Submit(chromedp.CSS(`form[action="/account/totp/enable"]`)))
	do(at("/account/totp/enable", `ol.recovery`))
	items, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("ol.recovery li").length`))
	if err != nil || items != recoveryCodes {
		t.Fatalf("recovery codes shown: %d, %v", items, err)
	}

	// Sign out, then in with password and code.
	submit(chromedp.Click(chromedp.CSS(`header form[action="/logout"] button`)))
	do(at("/login", `form[action="/login"]`),
		chromedp.SendKeys(chromedp.CSS(`input[name="name"]`), "ada"),
		chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "correct horse battery"))
	submit(chromedp.Submit(chromedp.CSS(`form[action="/login"]`)))
	do(at("/login", `p.error`))
	if msg := text(`p.error`); !strings.HasPrefix(msg, "code: enter the current code") {
		t.Fatalf("password alone: %q", msg)
	}
	s.clock.add(60e9) // the next 30-second step: a fresh code
	code, _ = totp.GenerateCode(secret, s.clock.now())
	do(chromedp.SendKeys(chromedp.CSS(`input[name="password"]`), "correct horse battery"),
		chromedp.SendKeys(chromedp.CSS(`input[name="code"]`), code))
	submit(chromedp.Submit(chromedp.CSS(`form[action="/login"]`)))
	do(at("/", `p.who`))

	var unexpected []string
	for _, p := range problems() {
		if !strings.Contains(p, "status of 401") { // the refused sign-in's answer
			unexpected = append(unexpected, p)
		}
	}
	if len(unexpected) > 0 {
		t.Errorf("the pages logged errors:\n%s", strings.Join(unexpected, "\n"))
	}
}
