//go:build !race

package sqlite

// RaceEnabled reports whether the tests run under the race detector.
const RaceEnabled = false
