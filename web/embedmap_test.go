package web

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
)

func TestEmbeddingMapPage(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, _ := s.signedInAdmin()
	for _, c := range []string{"Invoices are due on the first.", "The invoice template changed.", "Hiking trip to the Alps.",
		"Packing list for the hiking trip."} {
		s.store1(c, postgram.TypeMemory)
	}
	s.store1("Dana Whitfield is a staff engineer.", postgram.TypePerson)
	if _, err := s.admin.EnrichPending(context.Background()); err != nil {
		t.Fatal(err)
	}
	code, _, body := s.get(b, "/map")
	points := regexp.MustCompile(`<circle cx="([0-9.]+)" cy="([0-9.]+)" r="5" class="pt t-(\w+)"><title>`).FindAllStringSubmatch(body, -1)
	if code != http.StatusOK || len(points) != 5 || !strings.Contains(body, "test/deterministic-v1") {
		t.Fatalf("map: %d, %d points\n%s", code, len(points), body)
	}
	for _, p := range points {
		if p[1] == p[2] && p[1] == "500" {
			t.Errorf("a point sits in the middle: the projection did not spread them")
		}
	}
	if code, _, body := s.get(b, "/map?limit=5000"); code != http.StatusBadRequest || !strings.Contains(body, "limit") {
		t.Fatalf("limit 5000: %d", code)
	}
	// A member sees only what its key may read: the read-only key can read
	// everything here, but a member bound to a key limited to persons sees
	// only the person.
	ctx := context.Background()
	_, k, err := s.admin.CreateKey(ctx, postgram.KeySpec{Name: "people", AllowedTypes: []postgram.EntityType{postgram.TypePerson}})
	if err != nil {
		t.Fatal(err)
	}
	u := memberUser(t, s, "rita")
	u.KeyID = k.ID.String()
	if err := s.store.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	mb := s.browser()
	s.login(mb, "rita", "member password!")
	_, _, body = s.get(mb, "/map")
	if n := strings.Count(body, `class="pt t-`); n != 1+len(postgram.EntityTypes) || strings.Contains(body, "Hiking") {
		t.Fatalf("member's map: %d circles\n%s", n, body)
	}
}
