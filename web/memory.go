package web

import (
	"net/http"
	"strings"

	"github.com/postgram-go/postgram"
)

// Memory views: an agent's session context (working notes that expire)
// beside durable memory (what future agents should trust), and grooming
// of stale session context: a dry run lists what is eligible, archiving
// it is a separate, confirmed step.

type memoryItem struct {
	ID, Name, Client, Updated, Preview, Action string
}

type memoryPage struct {
	page
	OlderThan      string
	Session        []memoryItem
	SessionTotal   int
	Durable        []memoryItem
	DurableTotal   int
	Groom          *postgram.GroomResult
	GroomItems     []memoryItem
	Operator       bool
	ArchiveApplied bool
}

func memoryItems(es []*postgram.Entity) []memoryItem {
	out := make([]memoryItem, 0, len(es))
	for _, e := range es {
		out = append(out, memoryItem{ID: e.ID.String(), Name: postgram.DisplayName(e), Client: e.ClientID,
			Updated: when(e.UpdatedAt), Preview: snippet(e.Content, 200)})
	}
	return out
}

func (h *Handler) memory(w http.ResponseWriter, r *http.Request) {
	cur, c := h.signedIn(w, r)
	if c == nil {
		return
	}
	h.memoryView(w, r, cur, c, postgram.GroomDryRun)
}

func (h *Handler) memoryView(w http.ResponseWriter, r *http.Request, cur *current, c *postgram.Client, mode postgram.GroomMode) {
	older := strings.TrimSpace(r.FormValue("older_than"))
	if older == "" {
		older = "7d"
	}
	p := memoryPage{page: h.userPage("Memory", cur), OlderThan: older, Operator: c.Principal() == nil}
	status := http.StatusOK
	for _, part := range []struct {
		role  postgram.MemoryRole
		items *[]memoryItem
		total *int
	}{{postgram.RoleSessionContext, &p.Session, &p.SessionTotal}, {postgram.RoleDurableMemory, &p.Durable, &p.DurableTotal}} {
		list, err := c.List(r.Context(), postgram.ListOptions{MemoryRole: part.role, Limit: 50})
		if err != nil {
			status, p.Error = userError(err)
			break
		}
		*part.items, *part.total = memoryItems(list.Items), list.Total
	}
	if p.Error == "" && r.FormValue("groom") != "" {
		res, err := c.GroomSessionContext(r.Context(), postgram.GroomRequest{Mode: mode, OlderThan: older, AllClients: p.Operator})
		if err != nil {
			status, p.Error = userError(err)
		} else {
			p.Groom, p.ArchiveApplied = res, mode == postgram.GroomArchive
			for _, it := range res.Items {
				p.GroomItems = append(p.GroomItems, memoryItem{ID: it.ID.String(), Client: it.ClientID, Updated: when(it.UpdatedAt),
					Preview: it.Preview, Action: it.Action})
			}
		}
	}
	w.WriteHeader(status)
	h.render(w, r, "memory.html", p)
}

// groomArchive archives the stale session context the dry run listed
// (the same selection, recomputed now).
func (h *Handler) groomArchive(w http.ResponseWriter, r *http.Request) {
	cur, c, ok := h.formSession(w, r)
	if !ok {
		return
	}
	h.memoryView(w, r, cur, c, postgram.GroomArchive)
}
