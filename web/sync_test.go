package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/postgram-go/postgram/syncproto"
)

func TestSyncPage(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, _ := s.signedInAdmin()
	body := "# Meeting notes"
	sum := sha256.Sum256([]byte(body))
	if _, err := s.admin.Client().Sync().Push(context.Background(), syncproto.PushRequest{Repo: "notes",
		Files: []syncproto.UploadFile{{Path: "2026/meeting.md", SHA: hex.EncodeToString(sum[:]), Content: body}}}); err != nil {
		t.Fatal(err)
	}
	code, _, page := s.get(b, "/sync")
	if code != http.StatusOK || !strings.Contains(page, `<a href="/sync?repo=notes">notes</a></td><td>1</td><td>0</td>`) {
		t.Fatalf("sync page: %d\n%s", code, page)
	}
	code, _, page = s.get(b, "/sync?repo=notes")
	if code != http.StatusOK || !strings.Contains(page, "2026/meeting.md</a></td><td>synced</td>") {
		t.Fatalf("repo page: %d\n%s", code, page)
	}
	if code, _, page := s.get(b, "/sync?repo=../etc"); code != http.StatusBadRequest || !strings.Contains(page, "repo") {
		t.Fatalf("bad repo: %d\n%s", code, page)
	}
}
