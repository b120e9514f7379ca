package web

import (
	"math"
	"net/http"
	"strconv"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// The embedding map: the workspace's entities placed by the two principal
// components of their embeddings (computed in Go), drawn as server-side
// SVG, one colour per type; a point links to its entity.

type mapPoint struct {
	ID, Name, Type string
	X, Y           float64
}

type mapPage struct {
	page
	Points    []mapPoint
	Types     []postgram.EntityType
	Explained string
	Model     string
	Limit     int
}

const mapW, mapH, mapPad = 1000.0, 640.0, 20.0

func (h *Handler) embeddingMap(w http.ResponseWriter, r *http.Request) {
	cur, c := h.signedIn(w, r)
	if c == nil {
		return
	}
	limit := 500
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			http.Error(w, "invalid limit: a whole number", http.StatusBadRequest)
			return
		}
		limit = n
	}
	var p *postgram.Principal
	if cur.user.Role != driver.UserAdmin {
		p = c.Principal()
	}
	pg := mapPage{page: h.userPage("Embedding map", cur), Types: postgram.EntityTypes, Limit: limit}
	m, err := h.auth.admin.EmbeddingMap(r.Context(), p, limit)
	if err != nil {
		st, msg := userError(err)
		pg.Error = msg
		w.WriteHeader(st)
		h.render(w, r, "map.html", pg)
		return
	}
	pg.Model = m.Model.Provider + "/" + m.Model.Name
	pg.Explained = strconv.FormatFloat(100*(m.Explained[0]+m.Explained[1]), 'f', 0, 64) + "%"
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, pt := range m.Points {
		minX, maxX = math.Min(minX, pt.X), math.Max(maxX, pt.X)
		minY, maxY = math.Min(minY, pt.Y), math.Max(maxY, pt.Y)
	}
	scale := func(v, lo, hi, size float64) float64 {
		if hi <= lo {
			return size / 2
		}
		return mapPad + (v-lo)/(hi-lo)*(size-2*mapPad)
	}
	for _, pt := range m.Points {
		pg.Points = append(pg.Points, mapPoint{ID: pt.ID.String(), Name: pt.Name, Type: string(pt.Type),
			X: math.Round(scale(pt.X, minX, maxX, mapW)*10) / 10, Y: math.Round((mapH-scale(pt.Y, minY, maxY, mapH))*10) / 10})
	}
	h.render(w, r, "map.html", pg)
}
