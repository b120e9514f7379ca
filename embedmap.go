package postgram

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/pca"
)

// EmbeddingMap is a 2-D map of a workspace's embeddings: each entity's
// first chunk projected onto the two principal components of the vectors
// shown, so that entities about similar things lie close together.
type EmbeddingMap struct {
	Points []MapPoint `json:"points"`
	// Explained is the share of the vectors' variance each axis shows.
	Explained [2]float64 `json:"explained"`
	// Model is the embedding model of the vectors.
	Model ModelInfo `json:"model"`
}

// MapPoint is one entity on an EmbeddingMap.
type MapPoint struct {
	ID   uuid.UUID  `json:"id"`
	Type EntityType `json:"type"`
	Name string     `json:"name"`
	X    float64    `json:"x"`
	Y    float64    `json:"y"`
}

// maxMapPoints bounds an embedding map (the projection's cost grows with it).
const maxMapPoints = 2000

// EmbeddingMap maps up to limit of the most recently updated entities that
// p may see (nil: every entity) and that have an embedding (default 500,
// at most 2000).
func (a *Admin) EmbeddingMap(ctx context.Context, p *Principal, limit int) (*EmbeddingMap, error) {
	c := a.c
	if p != nil {
		c = c.as(*p)
	}
	if limit == 0 {
		limit = 500
	}
	if limit < 1 || limit > maxMapPoints {
		return nil, fmt.Errorf("embedding map: %w", invalidLimit(limit))
	}
	if c.embedder == nil || c.modelID == 0 {
		return nil, fmt.Errorf("embedding map: no embedding model is configured: %w", ErrUnavailable)
	}
	f, ok := c.principal.restrict(driver.EntityFilter{})
	m := &EmbeddingMap{Points: []MapPoint{}, Model: c.embedder.Model()}
	if !ok {
		return m, nil
	}
	vs, err := c.store.EntityVectors(ctx, c.ws, c.modelID, f, limit)
	if err != nil {
		return nil, fmt.Errorf("embedding map: %w", err)
	}
	if len(vs) == 0 {
		return m, nil
	}
	ids := make([]uuid.UUID, len(vs))
	vecs := make([][]float32, len(vs))
	for i, v := range vs {
		ids[i], vecs[i] = v.EntityID, v.Vector
	}
	ents, err := c.store.GetEntities(ctx, c.ws, ids)
	if err != nil {
		return nil, fmt.Errorf("embedding map: %w", err)
	}
	byID := make(map[uuid.UUID]*Entity, len(ents))
	for _, e := range ents {
		byID[e.ID] = e
	}
	proj := pca.Project2(vecs, 50)
	m.Explained = proj.Explained
	for i, id := range ids {
		e := byID[id]
		if e == nil || !c.canSee(e) {
			continue
		}
		m.Points = append(m.Points, MapPoint{ID: id, Type: e.Type, Name: DisplayName(e), X: proj.Points[i][0], Y: proj.Points[i][1]})
	}
	return m, nil
}

func invalidLimit(n int) error {
	return &FieldError{Field: "limit", Message: fmt.Sprintf("%d is outside 1 to %d", n, maxMapPoints)}
}
