package web

import (
	"context"
	"net/http"
	"net/url"
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
	// Model switch (embeddings migrate): the form's values, then the dry
	// run's or the switch's report.
	Provider, ModelName, Dimensions string
	Switch                          *postgram.ModelSwitch
	// Reembedded is how many entities a re-embed queued (-1: none asked).
	Reembedded int
}

// maintenance shows the embedding models, a prune-edges dry run, the
// scheduled backups and the server's settings.
func (h *Handler) maintenance(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, false)
	if cur == nil {
		return
	}
	h.maintenanceView(w, r, cur, true, -1)
}

func (h *Handler) pruneEdges(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, true)
	if cur == nil {
		return
	}
	h.maintenanceView(w, r, cur, false, -1)
}

func (h *Handler) maintenanceView(w http.ResponseWriter, r *http.Request, cur *current, dryRun bool, reembedded int) {
	a := h.auth.admin
	p := maintenancePage{page: h.userPage("Maintenance", cur), Settings: h.settings, Below: r.FormValue("below"),
		Relation: strings.TrimSpace(r.FormValue("relation")), DryRun: dryRun, Reembedded: reembedded,
		Provider: strings.TrimSpace(r.FormValue("provider")), ModelName: strings.TrimSpace(r.FormValue("model")),
		Dimensions: strings.TrimSpace(r.FormValue("dimensions"))}
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
	if p.Provider != "" || p.ModelName != "" || p.Dimensions != "" {
		dims, derr := strconv.Atoi(p.Dimensions)
		if derr != nil {
			status, p.Error = http.StatusBadRequest, "dimensions: a whole number"
		} else {
			sw, err := a.SwitchModel(r.Context(), postgram.ModelInfo{Provider: p.Provider, Name: p.ModelName, Dimensions: dims}, dryRun)
			if err != nil {
				status, p.Error = userError(err)
			} else {
				p.Switch = sw
				if !dryRun {
					h.audit(r, cur, "web.model.switch", map[string]any{"provider": p.Provider, "model": p.ModelName, "dimensions": dims, "queued": sw.Queued})
				}
			}
		}
	}
	w.WriteHeader(status)
	h.render(w, r, "maintenance.html", p)
}

// switchModel makes the form's model active (the dry run's confirmation):
// every entity is queued for re-embedding.
func (h *Handler) switchModel(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, true)
	if cur == nil {
		return
	}
	if r.PostFormValue("confirm") != "yes" {
		http.Error(w, "switching the model needs the dry run's confirmation", http.StatusBadRequest)
		return
	}
	h.maintenanceView(w, r, cur, false, -1)
}

// reembed queues the workspace's entities for embedding again with the
// active model.
func (h *Handler) reembed(w http.ResponseWriter, r *http.Request) {
	cur := h.adminOnly(w, r, true)
	if cur == nil {
		return
	}
	n, err := h.auth.admin.Reembed(r.Context(), nil)
	if err != nil {
		st, msg := userError(err)
		http.Error(w, msg, st)
		return
	}
	h.audit(r, cur, "web.model.reembed", map[string]any{"queued": n})
	r.Form = url.Values{} // the view then reads no prune or switch fields
	h.maintenanceView(w, r, cur, true, n)
}

// backupLister lists scheduled backups (Config.Backups).
type backupLister func(ctx context.Context) ([]BackupFile, error)
