package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/postgram-go/postgram"
)

func (s *site) task(content, ctx string) *postgram.Entity {
	s.t.Helper()
	e, err := s.admin.Client().CreateTask(context.Background(), postgram.TaskInput{Content: content, Context: ctx})
	if err != nil {
		s.t.Fatal(err)
	}
	return e
}

func TestTaskBoard(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	b, csrf := s.signedInAdmin()
	if res, _ := s.post(b, "/tasks", url.Values{"csrf": {csrf}, "content": {"Call the bank"}, "context": {"@phone"}, "due_date": {"2026-12-10"}}); res.StatusCode != http.StatusSeeOther {
		t.Fatalf("add: %d", res.StatusCode)
	}
	other := s.task("Write the report", "@desk")
	code, _, body := s.get(b, "/tasks?context=@phone")
	if code != http.StatusOK || !strings.Contains(body, "Call the bank") || strings.Contains(body, "Write the report") ||
		!strings.Contains(body, `<span class="due">due 2026-12-10</span>`) {
		t.Fatalf("board filtered by context: %d\n%s", code, body)
	}

	move := func(id string, version int64, status string, jsonAnswer bool) (int, moveAnswer) {
		req, _ := http.NewRequest("POST", s.srv.URL+"/tasks/"+id+"/move",
			strings.NewReader(url.Values{"csrf": {csrf}, "version": {fmt.Sprint(version)}, "status": {status}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if jsonAnswer {
			req.Header.Set("Accept", "application/json")
		}
		res, err := b.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var a moveAnswer
		if jsonAnswer {
			_ = json.NewDecoder(res.Body).Decode(&a)
		}
		return res.StatusCode, a
	}
	if code, a := move(other.ID.String(), 1, "next", true); code != http.StatusOK || a.Version != 2 || a.Status != "next" {
		t.Fatalf("move: %d %+v", code, a)
	}
	if code, a := move(other.ID.String(), 1, "waiting", true); code != http.StatusConflict || a.Version != 2 || !strings.Contains(a.Error, "changed elsewhere") {
		t.Fatalf("stale move: %d %+v", code, a)
	}
	if code, a := move(other.ID.String(), 2, "flying", true); code != http.StatusBadRequest || !strings.Contains(a.Error, "status") {
		t.Fatalf("bad status: %d %+v", code, a)
	}
	if code, _ := move(other.ID.String(), 2, "done", false); code != http.StatusSeeOther {
		t.Fatalf("form move: %d", code)
	}
	got, _ := s.admin.Client().Recall(context.Background(), other.ID)
	if got.Status != postgram.StatusDone || got.Version != 3 {
		t.Fatalf("after moves: %s v%d", got.Status, got.Version)
	}
}

// TestBrowserKanbanDragAndDrop drags a card to another column (the
// browser's drag events, dispatched in the page): the move is stored with
// the card's version; a card whose task changed elsewhere stays put and
// says why.
func TestBrowserKanbanDragAndDrop(t *testing.T) {
	t.Parallel()
	s := newSite(t)
	a := s.task("Call the bank", "@phone")
	stale := s.task("Water the plants", "@home")
	ctx, problems := browserCtx(t)
	signInBrowser(t, ctx, s)
	ready := chromedp.Poll[chromedp.Void](`document.readyState === "complete" && location.pathname === "/tasks" && document.getElementById("board") !== null`)
	if err := chromedp.Do(ctx, chromedp.Navigate(s.srv.URL+"/tasks"), ready); err != nil {
		t.Fatal(err)
	}
	// Meanwhile someone moves the second task.
	next := postgram.StatusNext
	if _, err := s.admin.Client().UpdateTask(context.Background(), stale.ID, postgram.TaskUpdate{Version: 1, Status: &next}); err != nil {
		t.Fatal(err)
	}
	drag := func(id, to string) {
		t.Helper()
		js := fmt.Sprintf(`(function(){
			var card = document.getElementById("card-%s"), col = document.querySelector('.column[data-status="%s"]');
			var dt = new DataTransfer();
			card.dispatchEvent(new DragEvent("dragstart", {bubbles: true, dataTransfer: dt}));
			col.dispatchEvent(new DragEvent("dragover", {bubbles: true, cancelable: true, dataTransfer: dt}));
			col.dispatchEvent(new DragEvent("drop", {bubbles: true, cancelable: true, dataTransfer: dt}));
			return true;
		})()`, id, to)
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
			t.Fatal(err)
		}
	}
	drag(a.ID.String(), "next")
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](fmt.Sprintf(
		`document.querySelector('.column[data-status="next"] #card-%s') !== null && document.getElementById("card-%s").dataset.version === "2"`, a.ID, a.ID))); err != nil {
		t.Fatal(err)
	}
	got, _ := s.admin.Client().Recall(context.Background(), a.ID)
	if got.Status != postgram.StatusNext || got.Version != 2 {
		t.Fatalf("stored after the drop: %s v%d", got.Status, got.Version)
	}
	drag(stale.ID.String(), "done")
	if err := chromedp.Do(ctx, chromedp.Poll[chromedp.Void](fmt.Sprintf(
		`!document.querySelector("#card-%s .card-error").hidden`, stale.ID))); err != nil {
		t.Fatal(err)
	}
	state, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(
		`document.querySelector("#card-%s").closest(".column").dataset.status + "|" + document.querySelector("#card-%s .card-error").textContent`, stale.ID, stale.ID)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(state, "inbox|changed elsewhere (now version 2, next)") {
		t.Fatalf("the stale card: %q", state)
	}
	got, _ = s.admin.Client().Recall(context.Background(), stale.ID)
	if got.Status != postgram.StatusNext {
		t.Fatalf("a stale drop changed the task: %s", got.Status)
	}
	var unexpected []string
	for _, p := range problems() {
		if !strings.Contains(p, "status of 409") { // the refused move's answer
			unexpected = append(unexpected, p)
		}
	}
	if len(unexpected) > 0 {
		t.Errorf("the board logged errors:\n%s", strings.Join(unexpected, "\n"))
	}
}
