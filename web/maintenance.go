package web

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/postgram-go/postgram"
)

// Setting is a configuration value shown (read-only) in the admin
// console; the server masks secrets before handing them over.
type Setting struct{ Name, Value string }

// BackupFile is a scheduled backup shown in the admin console.
type BackupFile struct {
	File      string
	Bytes     int64
	CreatedAt time.Time
}

type edgeRow struct {
	ID, Source, Target, Relation, EdgeSource, Confidence string
}

type maintenancePage struct {
	page
	Models     []postgram.ModelRecord
	Settings   []Setting
	Backups    []BackupFile
	BackupsOn  bool
	BackupErr  string
	Below      string
	Relation   string
	Pruned     bool
	DryRun     bool
	Edges      []edgeRow
	EdgesTotal int
}

// maintenance shows the embedding models, a prune-edges dry run, the
// scheduled backups and the server's settings.
func (h *Handler) maintenance(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, false)
	if cur == nil {
		return
	}
	h.maintenanceView(w, r, cur, true)
}

func (h *Handler) pruneEdges(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, true)
	if cur == nil {
		return
	}
	h.maintenanceView(w, r, cur, false)
}

func (h *Handler) maintenanceView(w http.ResponseWriter, r *http.Request, cur *current, dryRun bool) {
	a := h.auth.admin
	p := maintenancePage{page: h.userPage("Maintenance", cur), Settings: h.settings, Below: r.FormValue("below"),
		Relation: strings.TrimSpace(r.FormValue("relation")), DryRun: dryRun}
	status := http.StatusOK
	var err error
	if p.Models, err = a.Models(r.Context()); err != nil {
		h.fail(w, r, err)
		return
	}
	if h.backups != nil {
		p.BackupsOn = true
		if p.Backups, err = h.backups(r.Context()); err != nil {
			p.BackupErr = err.Error()
		}
	}
	if p.Below != "" {
		below, perr := strconv.ParseFloat(p.Below, 64)
		if perr != nil {
			status, p.Error = http.StatusBadRequest, "below: a number between 0 and 1"
		} else {
			edges, err := a.PruneEdges(r.Context(), postgram.PruneOptions{Below: below, Relation: p.Relation, DryRun: dryRun})
			if err != nil {
				status, p.Error = userError(err)
			} else {
				p.Pruned, p.EdgesTotal = true, len(edges)
				for i, e := range edges {
					if i == 100 {
						break
					}
					p.Edges = append(p.Edges, edgeRow{ID: e.ID.String(), Source: e.SourceID.String(), Target: e.TargetID.String(),
						Relation: e.Relation, EdgeSource: e.Source, Confidence: strconv.FormatFloat(e.Confidence, 'f', 2, 64)})
				}
				if !dryRun {
					h.audit(r, cur, "web.edges.prune", map[string]any{"below": below, "relation": p.Relation, "deleted": len(edges)})
				}
			}
		}
	}
	w.WriteHeader(status)
	h.render(w, r, "maintenance.html", p)
}

// backupLister lists scheduled backups (Config.Backups).
type backupLister func(ctx context.Context) ([]BackupFile, error)
