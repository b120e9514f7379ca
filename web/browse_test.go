package web

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/web/password"
)

// signedInAdmin onboards ada and returns her browser and the page's
// session CSRF token.
func (s *site) signedInAdmin() (*http.Client, string) {
	s.t.Helper()
	b := s.browser()
	s.setup(b, "ada", "correct horse battery")
	_, _, body := s.get(b, "/")
	return b, csrfRE.FindStringSubmatch(body)[1]
}

func (s *site) store1(content string, typ postgram.EntityType, tags ...string) *postgram.Entity {
	s.t.Helper()
	e, err := s.admin.Client().Store(context.Background(), postgram.StoreInput{Type: typ, Content: content, Tags: tags})
	if err != nil {
		s.t.Fatal(err)
	}
	return e
}

func TestBrowseSearchAndEntityPages(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	if code, loc, _ := s.get(s.browser(), "/search?q=x"); code != http.StatusSeeOther || loc != "/login" {
		t.Fatalf("search signed out: %d → %q", code, loc)
	}
	b, csrf := s.signedInAdmin()
	db := s.store1("Decision: we store embeddings in pgvector for the Lighthouse project.", postgram.TypeMemory, "decision")
	s.store1("Dana Whitfield is a staff engineer on the platform team.", postgram.TypePerson)

	code, _, body := s.get(b, "/search?q=pgvector+lighthouse&explain=1")
	if code != http.StatusOK || !strings.Contains(body, `href="/entities/`+db.ID.String()+`"`) || !strings.Contains(body, `class="explain">v2: keyword`) {
		t.Fatalf("search: %d\n%s", code, body)
	}
	code, _, body = s.get(b, "/search?q=pgvector&type=person")
	if code != http.StatusOK || strings.Contains(body, db.ID.String()) || !strings.Contains(body, "Nothing found.") {
		t.Fatalf("search filtered by type: %d\n%s", code, body)
	}
	code, _, body = s.get(b, "/search?q=pgvector&type=spaceship")
	if code != http.StatusBadRequest || !strings.Contains(body, "spaceship") {
		t.Fatalf("search with a bad type: %d\n%s", code, body)
	}

	code, _, body = s.get(b, "/entities/"+db.ID.String())
	if code != http.StatusOK || !strings.Contains(body, html.EscapeString(db.Content)) || !strings.Contains(body, `name="version" value="1"`) {
		t.Fatalf("entity page: %d\n%s", code, body)
	}
	if code, _, _ := s.get(b, "/entities/nope"); code != http.StatusBadRequest {
		t.Errorf("a malformed id: %d, want 400", code)
	}
	if code, _, _ := s.get(b, "/entities/"+uuid.NewString()); code != http.StatusNotFound {
		t.Errorf("an unknown id: %d, want 404", code)
	}

	// Edit: saved with the version it was read at.
	form := url.Values{"csrf": {csrf}, "version": {"1"}, "content": {"Decision: embeddings live in pgvector (HNSW)."},
		"tags": {"decision, storage"}, "status": {"active"}, "visibility": {"work"}}
	res, _ := s.post(b, "/entities/"+db.ID.String(), form)
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("save: %d", res.StatusCode)
	}
	got, _ := s.admin.Client().Recall(context.Background(), db.ID)
	if got.Version != 2 || got.Content != "Decision: embeddings live in pgvector (HNSW)." || strings.Join(got.Tags, ",") != "decision,storage" || got.Visibility != postgram.VisibilityWork {
		t.Fatalf("after save: %+v", got)
	}
	// A stale version shows the conflict, the current text and mine.
	form.Set("content", "My stale edit")
	res, body = s.post(b, "/entities/"+db.ID.String(), form)
	if res.StatusCode != http.StatusConflict || !strings.Contains(body, "your version 1, now 2") ||
		!strings.Contains(body, "embeddings live in pgvector (HNSW).</textarea>") || !strings.Contains(body, `<pre class="mine">My stale edit</pre>`) {
		t.Fatalf("stale save: %d\n%s", res.StatusCode, body)
	}
	// Forms need the session's token.
	form.Set("csrf", "forged")
	if res, _ := s.post(b, "/entities/"+db.ID.String(), form); res.StatusCode != http.StatusForbidden {
		t.Fatalf("save without the token: %d", res.StatusCode)
	}

	// Archive and restore.
	if res, _ := s.post(b, "/entities/"+db.ID.String()+"/archive", url.Values{"csrf": {csrf}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("archive: %d", res.StatusCode)
	}
	got, _ = s.admin.Client().Recall(context.Background(), db.ID)
	if got.Status != postgram.StatusArchived {
		t.Fatalf("after archive: %s", got.Status)
	}
	if res, _ := s.post(b, "/entities/"+db.ID.String()+"/restore", url.Values{"csrf": {csrf}, "version": {"3"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("restore: %d", res.StatusCode)
	}
	got, _ = s.admin.Client().Recall(context.Background(), db.ID)
	if got.Status != postgram.StatusActive {
		t.Fatalf("after restore: %s", got.Status)
	}
	if res, _ := s.post(b, "/entities/"+db.ID.String()+"/explode", url.Values{"csrf": {csrf}}); res.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown action: %d", res.StatusCode)
	}

	// Create: bad input names the field; good input lands on the new page.
	res, body = s.post(b, "/new", url.Values{"csrf": {csrf}, "type": {"memory"}, "content": {"  "}, "visibility": {"shared"}})
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(body, "invalid content") {
		t.Fatalf("create empty: %d\n%s", res.StatusCode, body)
	}
	res, _ = s.post(b, "/new", url.Values{"csrf": {csrf}, "type": {"task"}, "content": {"Renew the TLS certificate"},
		"visibility": {"shared"}, "tags": {"ops"}})
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/entities/") {
		t.Fatalf("create: %d %s", res.StatusCode, res.Header.Get("Location"))
	}
}

// TestBrowseAsMember shows a member acting with its API key's rights: a
// read-only key's member searches and reads, and is refused writes.
func TestBrowseAsMember(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	s.setup(s.browser(), "ada", "correct horse battery")
	e := s.store1("The release train leaves every second Tuesday.", postgram.TypeMemory)
	u := memberUser(t, s, "rita")
	reader := u.KeyID
	if err := s.store.CreateUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	b := s.browser()
	if res, _ := s.login(b, "rita", "member password!"); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("member login: %d", res.StatusCode)
	}
	code, _, body := s.get(b, "/search?q=release+train")
	if code != http.StatusOK || !strings.Contains(body, e.ID.String()) {
		t.Fatalf("member search: %d\n%s", code, body)
	}
	_, _, body = s.get(b, "/")
	csrf := csrfRE.FindStringSubmatch(body)[1]
	res, body := s.post(b, "/new", url.Values{"csrf": {csrf}, "type": {"memory"}, "content": {"x"}, "visibility": {"shared"}})
	if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "may not") {
		t.Fatalf("member create: %d\n%s", res.StatusCode, body)
	}
	// Revoking the key stops the member at once.
	if err := s.admin.RevokeKey(context.Background(), uuid.MustParse(reader)); err != nil {
		t.Fatal(err)
	}
	if code, _, body := s.get(b, "/search?q=release"); code != http.StatusForbidden || !strings.Contains(body, "revoked") {
		t.Fatalf("member after revocation: %d\n%s", code, body)
	}
}

// memberUser returns a member named name, password "member password!",
// bound to the site's read-only key.
func memberUser(t *testing.T, s *site, name string) *driver.User {
	t.Helper()
	keys, err := s.admin.ListKeys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var reader string
	for _, k := range keys {
		if k.Name == "reader" {
			reader = k.ID.String()
		}
	}
	hash, err := password.Hash(password.Params{MemoryKiB: 1024, Time: 1, Threads: 1}, "member password!")
	if err != nil {
		t.Fatal(err)
	}
	return &driver.User{ID: uuid.New(), Name: name, PasswordHash: hash, Role: driver.UserMember, KeyID: reader, CreatedAt: s.clock.now()}
}
