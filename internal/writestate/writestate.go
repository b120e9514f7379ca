// Package writestate remembers whether a store's writes are failing for
// lack of space or because the database is read-only, so that health
// checks can report the store as read_only instead of ok. Backends call
// Failed when a write fails with such an error and Succeeded when a write
// commits.
package writestate

import (
	"sync"
	"time"
)

// DefaultHold is how long a failure is reported without a newer one.
const DefaultHold = time.Minute

// Tracker is safe for concurrent use. The zero value is ready, with
// DefaultHold and the wall clock.
type Tracker struct {
	// Hold bounds how long a failure is reported when no write has been
	// attempted since: after it the state is unknown, so it is reported as
	// writable again, and the next failing write marks it once more.
	Hold time.Duration
	// Now is the clock (tests set it). Default time.Now.
	Now func() time.Time

	mu       sync.Mutex
	failedAt time.Time
	reason   string
}

func (t *Tracker) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

// Failed records a write that failed for reason (a short phrase for
// operators, such as "disk full", never a driver's message).
func (t *Tracker) Failed(reason string) {
	t.mu.Lock()
	t.failedAt, t.reason = t.now(), reason
	t.mu.Unlock()
}

// Succeeded records a committed write: writes work again.
func (t *Tracker) Succeeded() {
	t.mu.Lock()
	if !t.failedAt.IsZero() {
		t.failedAt, t.reason = time.Time{}, ""
	}
	t.mu.Unlock()
}

// ReadOnly reports whether the last write failed (within Hold) and why.
func (t *Tracker) ReadOnly() (bool, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	hold := t.Hold
	if hold <= 0 {
		hold = DefaultHold
	}
	if t.failedAt.IsZero() || t.now().Sub(t.failedAt) >= hold {
		return false, ""
	}
	return true, t.reason
}
