//go:build race

package query

// raceEnabled reports a -race build, which runs code several times slower.
const raceEnabled = true
