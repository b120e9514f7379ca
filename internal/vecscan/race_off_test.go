//go:build !race

package vecscan

const raceEnabled = false
