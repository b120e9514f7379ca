package web

import (
	"net/http"

	"github.com/postgram-go/postgram/syncproto"
)

// The sync page lists the Markdown folders synced into the workspace (pgm
// sync) with their file counts and last sync, and one repository's files.

type syncPage struct {
	page
	Repos []syncproto.RepoSummary
	Repo  string
	Files []syncproto.FileStatus
}

func (h *Handler) syncRepos(w http.ResponseWriter, r *http.Request) {
	cur, c := h.signedIn(w, r)
	if c == nil {
		return
	}
	p := syncPage{page: h.userPage("Sync", cur), Repo: r.URL.Query().Get("repo")}
	status := http.StatusOK
	var err error
	if p.Repos, err = c.Sync().Repos(r.Context()); err != nil {
		status, p.Error = userError(err)
	}
	if p.Repo != "" && p.Error == "" {
		st, err := c.Sync().Status(r.Context(), p.Repo)
		if err != nil {
			status, p.Error = userError(err)
		} else {
			p.Files = st.Files
		}
	}
	w.WriteHeader(status)
	h.render(w, r, "sync.html", p)
}
