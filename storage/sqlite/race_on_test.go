//go:build race

package sqlite

// RaceEnabled reports whether the tests run under the race detector, which
// slows modernc.org/sqlite's transpiled C about tenfold; the exhaustive
// comparison tests then check a sample.
const RaceEnabled = true
