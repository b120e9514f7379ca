//go:build !linux

package query

import "time"

// cpuTime returns how long f took; without a per-thread CPU clock it is
// the wall time.
func cpuTime(f func()) time.Duration { return wallTime(f) }
