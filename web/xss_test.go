package web

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"golang.org/x/net/html"

	"github.com/postgram-go/postgram"
)

// hostile is user content built to run script in a page that shows it
// unescaped or renders it as HTML.
const hostile = `<script>alert("content")</script> <img src=x onerror="alert('img')"> ` +
	`[click](javascript:alert('link')) <svg onload=alert(1)> "><iframe src=javascript:alert(2)>` + "\n\n" +
	`# Heading <b onmouseover=alert(3)>x</b>` + "\n\n`code <script>`"

// dangerous lists the markup in page that would run script: script
// elements other than the page's own (from /static), iframes, svg, event
// handler attributes and javascript: URLs. It reads the page as a browser
// does (html.Tokenizer), so escaped text never counts.
func dangerous(page string) []string {
	var found []string
	z := html.NewTokenizer(strings.NewReader(page))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return found
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			switch tok.Data {
			case "iframe", "svg", "object", "embed":
				found = append(found, "<"+tok.Data+">")
			case "script":
				src := ""
				for _, a := range tok.Attr {
					if a.Key == "src" {
						src = a.Val
					}
				}
				if !strings.HasPrefix(src, "/static/") {
					found = append(found, "<script src="+src+">")
				}
			}
			for _, a := range tok.Attr {
				v := strings.ToLower(strings.TrimSpace(a.Val))
				if strings.HasPrefix(a.Key, "on") || ((a.Key == "href" || a.Key == "src" || a.Key == "action") && strings.HasPrefix(v, "javascript:")) {
					found = append(found, "<"+tok.Data+" "+a.Key+"="+a.Val+">")
				}
			}
		}
	}
}

func hostileEntities(t *testing.T, s *site) (*postgram.Entity, *postgram.Entity) {
	t.Helper()
	c := s.admin.Client()
	e, err := c.Store(context.Background(), postgram.StoreInput{Type: postgram.TypeMemory, Content: hostile,
		Tags: []string{`"><script>alert('tag')</script>`, "x onmouseover=alert(1)"}, Owner: `<img src=x onerror=alert(9)>`,
		Source: "javascript:alert(7)", Metadata: map[string]any{"title": `<svg onload=alert('title')>`, "note": `</pre><script>alert(8)</script>`}})
	if err != nil {
		t.Fatal(err)
	}
	task, err := c.CreateTask(context.Background(), postgram.TaskInput{Content: hostile, Context: `@<script>alert(4)</script>`,
		Tags: []string{`<img src=x onerror=alert(5)>`}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Link(context.Background(), postgram.LinkInput{SourceID: e.ID, TargetID: task.ID, Relation: `rel<script>`}); err != nil {
		t.Fatal(err)
	}
	return e, task
}

// TestHostileContentIsEscaped shows every page that displays user content
// with content built to run script: none of it reaches the page as
// markup.
func TestHostileContentIsEscaped(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, _ := s.signedInAdmin()
	e, task := hostileEntities(t, s)
	for _, path := range []string{
		"/search?q=heading+code&explain=1", "/search?q=alert",
		"/entities/" + e.ID.String(), "/entities/" + task.ID.String(),
		"/entities/" + e.ID.String() + "/graph?depth=2", "/entities/" + e.ID.String() + "/graph.json",
		"/tasks", "/admin", "/admin/audit",
	} {
		code, _, body := s.get(b, path)
		if code != http.StatusOK {
			t.Errorf("%s: %d", path, code)
			continue
		}
		if strings.HasSuffix(strings.SplitN(path, "?", 2)[0], ".json") {
			if strings.Contains(body, "<") {
				t.Errorf("%s: JSON with a raw '<' (json.Encoder escapes it)", path)
			}
			continue
		}
		if d := dangerous(body); len(d) > 0 {
			t.Errorf("%s shows markup from user content: %q", path, d)
		}
	}
	// The Markdown is rendered (heading, code) but sanitized.
	_, _, body := s.get(b, "/entities/"+e.ID.String())
	if !strings.Contains(body, "<h1>Heading") || !strings.Contains(body, "<code>code &lt;script&gt;</code>") {
		t.Errorf("the content is not rendered as Markdown:\n%s", body)
	}
}

// TestStateChangesNeedSameOrigin refuses a cross-site form post even with
// a valid session and token (a browser says where the request came from).
func TestStateChangesNeedSameOrigin(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, csrf := s.signedInAdmin()
	post := func(h http.Header) int {
		req, _ := http.NewRequest("POST", s.srv.URL+"/new", strings.NewReader(url.Values{"csrf": {csrf}, "type": {"memory"},
			"content": {"hello"}, "visibility": {"shared"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range h {
			req.Header[k] = v
		}
		res, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, tc := range []struct {
		h    http.Header
		want int
	}{
		{http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{http.Header{"Sec-Fetch-Site": {"same-site"}}, http.StatusForbidden},
		{http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
		{http.Header{"Origin": {s.srv.URL}, "Sec-Fetch-Site": {"same-origin"}}, http.StatusSeeOther},
		{http.Header{}, http.StatusSeeOther},
	} {
		if got := post(tc.h); got != tc.want {
			t.Errorf("POST with %v: %d, want %d", tc.h, got, tc.want)
		}
	}
}

// TestBrowserHostileContent opens the pages with hostile content in a
// real browser: no dialog opens and nothing is blocked by the CSP (that
// would mean markup got through and only the CSP stopped it).
func TestBrowserHostileContent(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	e, task := hostileEntities(t, s)
	ctx, problems := browserCtx(t)
	dialogs := make(chan string, 8)
	if err := chromedp.Listen(ctx, func(ev any) {
		if d, ok := ev.(*cdppage.EventJavascriptDialogOpening); ok {
			select {
			case dialogs <- d.Message:
			default:
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	signInBrowser(t, ctx, s)
	for _, path := range []string{"/entities/" + e.ID.String(), "/entities/" + task.ID.String(), "/tasks", "/search?q=alert",
		"/entities/" + e.ID.String() + "/graph?depth=2"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(s.srv.URL+path),
			chromedp.Poll[chromedp.Void](`document.readyState === "complete"`)); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	select {
	case m := <-dialogs:
		t.Errorf("a dialog opened: %q", m)
	default:
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("the pages logged errors:\n%s", strings.Join(p, "\n"))
	}
}
