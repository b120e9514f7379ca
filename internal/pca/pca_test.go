package pca

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRecoversThePlane builds points on a known plane in 50 dimensions
// (large spread along a, smaller along b, tiny noise): the two axes
// explain almost all the variance, in that order, and the projection
// keeps the points' coordinates up to sign.
func TestRecoversThePlane(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	const d = 50
	a, b := make([]float64, d), make([]float64, d)
	a[3], b[7] = 1, 1
	var vs [][]float32
	var coords [][2]float64
	for range 300 {
		s, u := r.NormFloat64()*10, r.NormFloat64()*3
		v := make([]float32, d)
		for j := range d {
			v[j] = float32(s*a[j] + u*b[j] + r.NormFloat64()*0.01 + 5)
		}
		vs = append(vs, v)
		coords = append(coords, [2]float64{s, u})
	}
	res := Project2(vs, 200)
	if res.Explained[0] < 0.85 || res.Explained[1] < 0.05 || res.Explained[0]+res.Explained[1] < 0.999 {
		t.Fatalf("explained variance %v", res.Explained)
	}
	for k := range 2 {
		// correlation between the recovered axis and the true coordinate
		var sxy, sxx, syy float64
		for i, p := range res.Points {
			sxy += p[k] * coords[i][k]
			sxx += p[k] * p[k]
			syy += coords[i][k] * coords[i][k]
		}
		if c := math.Abs(sxy / math.Sqrt(sxx*syy)); c < 0.99 {
			t.Errorf("axis %d correlates %.3f with the true coordinate", k, c)
		}
	}
	again := Project2(vs, 200)
	if again.Points[17] != res.Points[17] {
		t.Error("the projection is not deterministic")
	}
}

func TestDegenerateInputs(t *testing.T) {
	t.Parallel()
	if r := Project2(nil, 0); len(r.Points) != 0 {
		t.Fatal("nil input")
	}
	same := [][]float32{{1, 2}, {1, 2}, {1, 2}}
	for _, p := range Project2(same, 0).Points {
		if p != [2]float64{} {
			t.Fatalf("identical vectors: %v", p)
		}
	}
	if r := Project2([][]float32{{1}}, 0); r.Points[0] != [2]float64{} {
		t.Fatal("one vector")
	}
}

func BenchmarkProject1000x1536(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	vs := make([][]float32, 1000)
	for i := range vs {
		vs[i] = make([]float32, 1536)
		for j := range vs[i] {
			vs[i][j] = float32(r.NormFloat64())
		}
	}
	for b.Loop() {
		Project2(vs, 50)
	}
}
