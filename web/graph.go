package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/postgram-go/postgram"
)

// CytoscapeVersion is the pinned version of the vendored Cytoscape.js.
const CytoscapeVersion = "3.35.0"

type graphNode struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Type  string `json:"type"`
	Depth int    `json:"depth"`
}

type graphEdge struct {
	ID         string  `json:"id"`
	Source     string  `json:"source"`
	Target     string  `json:"target"`
	Relation   string  `json:"relation"`
	Confidence float64 `json:"confidence"`
	SourceName string  `json:"-"`
	TargetName string  `json:"-"`
}

type graphJSON struct {
	Seed      string      `json:"seed"`
	Nodes     []graphNode `json:"nodes"`
	Edges     []graphEdge `json:"edges"`
	Truncated bool        `json:"truncated"`
}

type graphPage struct {
	page
	graphJSON
	SeedID, Name, Relation, Src, Cytoscape string
	Depth                                  int
	Depths                                 []int
}

// expand reads the depth and relation parameters and expands the graph
// around the path's entity as the signed-in user.
func (h *Handler) expand(w http.ResponseWriter, r *http.Request) (*current, *graphJSON, int, string, string, bool) {
	cur, c := h.signedIn(w, r)
	if c == nil {
		return nil, nil, 0, "", "", false
	}
	id, err := postgram.ParseID("id", r.PathValue("id"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, nil, 0, "", "", false
	}
	q := r.URL.Query()
	depth := 1
	if d := q.Get("depth"); d != "" {
		if depth, err = strconv.Atoi(d); err != nil || depth < 1 || depth > postgram.MaxExpandDepth {
			http.Error(w, fmt.Sprintf("invalid depth: 1 to %d", postgram.MaxExpandDepth), http.StatusBadRequest)
			return nil, nil, 0, "", "", false
		}
	}
	rel := strings.TrimSpace(q.Get("relation"))
	opts := postgram.ExpandOptions{Depth: depth}
	if rel != "" {
		opts.RelationTypes = []string{rel}
	}
	g, err := c.Expand(r.Context(), id, opts)
	if err != nil {
		st, msg := userError(err)
		http.Error(w, msg, st)
		return nil, nil, 0, "", "", false
	}
	out := &graphJSON{Seed: id.String(), Truncated: g.Truncated, Nodes: []graphNode{}, Edges: []graphEdge{}}
	names := map[string]string{}
	for _, e := range g.Entities {
		n := graphNode{ID: e.ID.String(), Label: postgram.DisplayName(e), Type: string(e.Type), Depth: g.Depths[e.ID]}
		names[n.ID] = n.Label
		out.Nodes = append(out.Nodes, n)
	}
	for _, e := range g.Edges {
		ge := graphEdge{ID: e.ID.String(), Source: e.SourceID.String(), Target: e.TargetID.String(), Relation: e.Relation,
			Confidence: e.Confidence}
		ge.SourceName, ge.TargetName = names[ge.Source], names[ge.Target]
		out.Edges = append(out.Edges, ge)
	}
	return cur, out, depth, rel, names[out.Seed], true
}

func (h *Handler) graph(w http.ResponseWriter, r *http.Request) {
	cur, g, depth, rel, name, ok := h.expand(w, r)
	if !ok {
		return
	}
	v := url.Values{"depth": {strconv.Itoa(depth)}}
	if rel != "" {
		v.Set("relation", rel)
	}
	h.render(w, r, "graph.html", graphPage{page: h.userPage("Graph: "+name, cur), graphJSON: *g, SeedID: g.Seed, Name: name,
		Relation: rel, Depth: depth, Depths: []int{1, 2, 3}, Cytoscape: CytoscapeVersion,
		Src: "/entities/" + g.Seed + "/graph.json?" + v.Encode()})
}

func (h *Handler) graphData(w http.ResponseWriter, r *http.Request) {
	_, g, _, _, _, ok := h.expand(w, r)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err := json.NewEncoder(w).Encode(g); err != nil {
		h.log.WarnContext(r.Context(), "web: write graph", "err", err)
	}
}
