package query

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// cpuTime returns how long f ran on the CPU: the calling thread's user and
// system time, so a machine busy with other work does not inflate it.
func cpuTime(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after unix.Rusage
	if unix.Getrusage(unix.RUSAGE_THREAD, &before) != nil {
		return wallTime(f)
	}
	f()
	if unix.Getrusage(unix.RUSAGE_THREAD, &after) != nil {
		return wallTime(f)
	}
	used := func(r *unix.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return used(&after) - used(&before)
}
