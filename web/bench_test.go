package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/hashing"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/web/password"
)

// BenchmarkPages renders the signed-in pages server-side over a store of
// 10,000 entities (and 500 tasks): the handler's time per page, as the
// issue's budget (≤ 50 ms) counts it. Run:
//
//	go test -run '^$' -bench Pages -benchtime 200x ./web
func BenchmarkPages(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "postgram.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	c, err := postgram.New(ctx, postgram.Config{Store: st, Embedder: hashing.New(256)})
	if err != nil {
		b.Fatal(err)
	}
	admin, _ := c.Admin()
	words := []string{"lighthouse", "pgvector", "release", "budget", "onboarding", "latency", "invoice", "kanban", "roadmap", "incident"}
	var first *postgram.Entity
	for i := range 10_000 {
		e, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Tags: []string{words[i%7]},
			Content: fmt.Sprintf("Note %d about %s and %s: the team discussed %s at length.", i, words[i%10], words[(i/10)%10], words[(i/100)%10])})
		if err != nil {
			b.Fatal(err)
		}
		if first == nil {
			first = e
		}
	}
	for i := range 500 {
		if _, err := c.CreateTask(ctx, postgram.TaskInput{Content: fmt.Sprintf("Task %d: follow up on %s", i, words[i%10]),
			Context: "@desk", Status: postgram.TaskStatuses[i%len(postgram.TaskStatuses)]}); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := admin.EnrichPending(ctx); err != nil {
		b.Fatal(err)
	}
	h, err := New(Config{Users: st, Admin: admin, Password: password.Params{MemoryKiB: 1024, Time: 1, Threads: 1}})
	if err != nil {
		b.Fatal(err)
	}
	// Sign in once; every request carries the session cookie.
	var token string
	{
		key, _, _ := admin.CreateKey(ctx, postgram.KeySpec{Name: "boot", Scopes: postgram.AllScopes})
		s := &signIn{users: st, admin: admin, now: time.Now, ttl: time.Hour, params: password.Params{MemoryKiB: 1024, Time: 1, Threads: 1}}
		nu, msg := s.createFirstAdmin(ctx, key, "ada", "correct horse battery", "correct horse battery")
		if nu == nil {
			b.Fatal(msg)
		}
		rec := httptest.NewRecorder()
		if err := s.startSession(rec, httptest.NewRequest("GET", "/", nil), nu); err != nil {
			b.Fatal(err)
		}
		for _, ck := range rec.Result().Cookies() {
			if ck.Name == sessionCookie {
				token = ck.Value
			}
		}
	}
	for _, path := range []string{"/", "/search?q=lighthouse+budget", "/search?q=incident+roadmap&explain=1",
		"/entities/" + first.ID.String(), "/tasks", "/admin"} {
		b.Run(path, func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.AddCookie(&http.Cookie{Name: sessionCookie, Value: token})
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s: %d", path, rec.Code)
				}
			}
		})
	}
}
