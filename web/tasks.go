package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/postgram-go/postgram"
)

// The task board: tasks as a Kanban board by GTD status, filtered by
// context. Cards move by drag and drop (static/kanban.js posts the move
// with the version the card was drawn at; a stale one is refused and the
// card goes back) or, without JavaScript, by each card's own form.

type card struct {
	ID, Content, Context, Due, Tags string
	Version                         int64
}

type column struct {
	Status postgram.Status
	Cards  []card
}

type tasksPage struct {
	page
	Context  string
	Columns  []column
	Statuses []postgram.Status
}

func (h *Handler) tasks(w http.ResponseWriter, r *http.Request) {
	cur, c := h.signedIn(w, r)
	if c == nil {
		return
	}
	ctxFilter := strings.TrimSpace(r.URL.Query().Get("context"))
	p := tasksPage{page: h.userPage("Tasks", cur), Context: ctxFilter, Statuses: postgram.TaskStatuses}
	list, err := c.ListTasks(r.Context(), postgram.TaskListOptions{Context: ctxFilter, Limit: postgram.MaxListLimit})
	status := http.StatusOK
	if err != nil {
		status, p.Error = userError(err)
	}
	byStatus := map[postgram.Status][]card{}
	if list != nil {
		for _, e := range list.Items {
			cd := card{ID: e.ID.String(), Content: snippet(e.Content, 200), Version: e.Version, Tags: strings.Join(e.Tags, ", ")}
			cd.Context, _ = e.Metadata["context"].(string)
			cd.Due = dueDate(e.Metadata["due_date"])
			byStatus[e.Status] = append(byStatus[e.Status], cd)
		}
	}
	for _, s := range postgram.TaskStatuses {
		p.Columns = append(p.Columns, column{Status: s, Cards: byStatus[s]})
	}
	w.WriteHeader(status)
	h.render(w, r, "tasks.html", p)
}

func (h *Handler) createTask(w http.ResponseWriter, r *http.Request) {
	_, c, ok := h.formSession(w, r)
	if !ok {
		return
	}
	in := postgram.TaskInput{Content: strings.TrimSpace(r.PostFormValue("content")), Context: strings.TrimSpace(r.PostFormValue("context")),
		DueDate: strings.TrimSpace(r.PostFormValue("due_date"))}
	if _, err := c.CreateTask(r.Context(), in); err != nil {
		st, msg := userError(err)
		http.Error(w, msg, st)
		return
	}
	http.Redirect(w, r, "/tasks", http.StatusSeeOther)
}

// moveAnswer is what a drag's fetch reads back.
type moveAnswer struct {
	Version int64  `json:"version"`
	Status  string `json:"status"`
	Error   string `json:"error,omitempty"`
}

func (h *Handler) moveTask(w http.ResponseWriter, r *http.Request) {
	_, c, ok := h.formSession(w, r)
	if !ok {
		return
	}
	wantJSON := strings.Contains(r.Header.Get("Accept"), "application/json")
	answer := func(status int, a moveAnswer) {
		if !wantJSON {
			if status >= 400 {
				http.Error(w, a.Error, status)
				return
			}
			http.Redirect(w, r, "/tasks", http.StatusSeeOther)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(a)
	}
	id, err := postgram.ParseID("id", r.PathValue("id"))
	if err != nil {
		answer(http.StatusBadRequest, moveAnswer{Error: err.Error()})
		return
	}
	var version int64
	if _, err := fmt.Sscan(r.PostFormValue("version"), &version); err != nil || version < 1 {
		answer(http.StatusBadRequest, moveAnswer{Error: "invalid version"})
		return
	}
	status := postgram.Status(r.PostFormValue("status"))
	e, err := c.UpdateTask(r.Context(), id, postgram.TaskUpdate{Version: version, Status: &status})
	var ce *postgram.ConflictError
	switch {
	case errors.As(err, &ce) && ce.Current != nil:
		answer(http.StatusConflict, moveAnswer{Version: ce.Current.Version, Status: string(ce.Current.Status),
			Error: fmt.Sprintf("changed elsewhere (now version %d, %s): reload the board", ce.Current.Version, ce.Current.Status)})
	case err != nil:
		st, msg := userError(err)
		answer(st, moveAnswer{Error: msg})
	default:
		answer(http.StatusOK, moveAnswer{Version: e.Version, Status: string(e.Status)})
	}
}

// dueDate shows a task's due date: the day alone when it is at midnight
// UTC (a date given without a time), else the time too.
func dueDate(v any) string {
	s, _ := v.(string)
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return s
	}
	if t.UTC().Format("15:04:05") == "00:00:00" {
		return t.UTC().Format("2006-01-02")
	}
	return when(t)
}
