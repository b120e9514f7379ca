//go:build race

package vecscan

// raceEnabled: the exhaustive comparisons check a sample under the race
// detector.
const raceEnabled = true
