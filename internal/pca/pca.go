// Package pca projects vectors onto their first two principal components,
// for a 2-D map of a workspace's embeddings. It uses power iteration on the
// implicit covariance (never a d×d matrix), stopping when an axis has
// converged, and is deterministic: the same vectors give the same map.
package pca

import "math"

// Result is a projection: one point per input vector, and the share of the
// total variance each axis explains.
type Result struct {
	Points    [][2]float64
	Explained [2]float64
}

// Project2 projects vs (all of one length) onto their two principal
// components. Fewer than two vectors, or vectors of length zero, give
// points at the origin.
func Project2(vs [][]float32, iterations int) Result {
	n := len(vs)
	res := Result{Points: make([][2]float64, n)}
	if n < 2 || len(vs[0]) == 0 {
		return res
	}
	d := len(vs[0])
	if iterations <= 0 {
		iterations = 100
	}
	// Centre the data (float64 copies).
	mean := make([]float64, d)
	for _, v := range vs {
		for j := range d {
			mean[j] += float64(v[j])
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	x := make([][]float64, n)
	total := 0.0
	for i, v := range vs {
		row := make([]float64, d)
		for j := range d {
			row[j] = float64(v[j]) - mean[j]
			total += row[j] * row[j]
		}
		x[i] = row
	}
	if total == 0 {
		return res
	}
	var comps [2][]float64
	for k := range 2 {
		// Start from the row with the largest remaining norm: deterministic
		// and never orthogonal to the leading component.
		start, best := 0, -1.0
		for i, row := range x {
			r := row
			if k == 1 {
				r = deflate(row, comps[0])
			}
			if s := dot(r, r); s > best {
				start, best = i, s
			}
		}
		v := append([]float64(nil), x[start]...)
		if k == 1 {
			v = deflate(v, comps[0])
		}
		normalize(v)
		scores := make([]float64, n)
		for range iterations {
			for i, row := range x { // scores = X v
				scores[i] = dot(row, v)
			}
			next := make([]float64, d) // next = Xᵀ scores
			for i, row := range x {
				for j, xv := range row {
					next[j] += xv * scores[i]
				}
			}
			if k == 1 {
				next = deflate(next, comps[0])
			}
			if normalize(next) == 0 {
				break
			}
			moved := 0.0
			for j := range next {
				moved += (next[j] - v[j]) * (next[j] - v[j])
			}
			v = next
			if moved < 1e-12 { // converged
				break
			}
		}
		comps[k] = v
		var variance float64
		for i, row := range x {
			s := dot(row, v)
			res.Points[i][k] = s
			variance += s * s
		}
		res.Explained[k] = variance / total
	}
	return res
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// deflate returns v without its component along unit vector u.
func deflate(v, u []float64) []float64 {
	p := dot(v, u)
	out := make([]float64, len(v))
	for i := range v {
		out[i] = v[i] - p*u[i]
	}
	return out
}

// normalize scales v to unit length and returns its former norm.
func normalize(v []float64) float64 {
	n := math.Sqrt(dot(v, v))
	if n == 0 {
		return 0
	}
	for i := range v {
		v[i] /= n
	}
	return n
}
