package postgram

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
)

// Change events. Every write of the library is reported to the store's
// bounded event log (driver.EventStorage), which package feed streams to
// subscribers (REST's /api/events, the WebSocket, pgm watch) filtered by
// each one's rights.
//
// Events are appended right after the change commits, in order, by one
// goroutine per client that batches what arrived meanwhile: a write does
// not wait for its event. A process that dies between the commit and the
// append loses that notification, never the change.

// Event kinds of entities.
const (
	eventCreated   = "entity.created"
	eventUpdated   = "entity.updated"
	eventArchived  = "entity.archived"
	eventEnriched  = "entity.enriched"
	eventExtracted = "entity.extracted"
	eventPurged    = "entity.purged"
)

// eventPendingMax bounds the events waiting to be appended; beyond it the
// oldest are dropped (and counted in the log), so a store that is down
// cannot grow the process's memory.
const eventPendingMax = 100_000

// eventLog appends change events in the background, in order.
type eventLog struct {
	st  driver.EventStorage
	ws  string
	log *slog.Logger

	mu       sync.Mutex
	pending  []driver.ChangeEvent
	flushing bool
	idle     *sync.Cond // signalled when a flush ends
	dropped  int
}

func newEventLog(st driver.EventStorage, ws string, log *slog.Logger) *eventLog {
	l := &eventLog{st: st, ws: ws, log: log}
	l.idle = sync.NewCond(&l.mu)
	return l
}

// add queues events and starts a flush unless one runs.
func (l *eventLog) add(evs ...driver.ChangeEvent) {
	if len(evs) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pending = append(l.pending, evs...)
	if over := len(l.pending) - eventPendingMax; over > 0 {
		l.pending = append(l.pending[:0:0], l.pending[over:]...)
		l.dropped += over
	}
	if !l.flushing {
		l.flushing = true
		go l.flush()
	}
}

// flush appends what is pending until nothing is.
func (l *eventLog) flush() {
	for {
		l.mu.Lock()
		batch := l.pending
		l.pending = nil
		dropped := l.dropped
		l.dropped = 0
		if len(batch) == 0 {
			l.flushing = false
			l.idle.Broadcast()
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		if dropped > 0 {
			l.log.Warn("change events dropped: the event log could not keep up", "dropped", dropped)
		}
		for start := 0; start < len(batch); start += 500 {
			part := batch[start:min(start+500, len(batch))]
			var err error
			for try, wait := 0, 100*time.Millisecond; try < 4; try, wait = try+1, wait*4 {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				err = l.st.AppendEvents(ctx, l.ws, part)
				cancel()
				if err == nil {
					break
				}
				time.Sleep(wait)
			}
			if err != nil {
				l.log.Warn("change events lost: the event log refused them", "events", len(part), "err", err)
			}
		}
	}
}

// drain waits until every queued event was appended (or given up on) or
// ctx ends.
func (l *eventLog) drain(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		l.mu.Lock()
		for l.flushing {
			l.idle.Wait()
		}
		l.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// entityEvent describes a change to e, with what a subscriber's rights
// are checked against.
func entityEvent(kind string, e *Entity) driver.ChangeEvent {
	data := `{"version":` + strconv.FormatInt(e.Version, 10) + `,"status":` + strconv.Quote(string(e.Status)) +
		`,"type":` + strconv.Quote(string(e.Type)) + `}`
	return driver.ChangeEvent{Kind: kind, EntityID: e.ID, Type: e.Type, Visibility: e.Visibility, Owner: e.Owner,
		Role: e.MemoryRole(), ClientID: e.ClientID, Data: []byte(data)}
}

func updateKind(e *Entity) string {
	if e.Status == StatusArchived {
		return eventArchived
	}
	return eventUpdated
}

// eventingStore is the library's view of its store: the writes that
// change entities also queue their change events. Everything else passes
// through.
type eventingStore struct {
	driver.Storage
	ev *eventLog
}

func (s eventingStore) CreateEntity(ctx context.Context, ws string, e *Entity, chunks []driver.ChunkInput, audit *AuditEntry) error {
	err := s.Storage.CreateEntity(ctx, ws, e, chunks, audit)
	if err == nil {
		s.ev.add(entityEvent(eventCreated, e))
	}
	return err
}

func (s eventingStore) UpdateEntity(ctx context.Context, ws string, e *Entity, expected int64, chunks []driver.ChunkInput, audit *AuditEntry) error {
	err := s.Storage.UpdateEntity(ctx, ws, e, expected, chunks, audit)
	if err == nil {
		s.ev.add(entityEvent(updateKind(e), e))
	}
	return err
}

func (s eventingStore) WriteBatch(ctx context.Context, ws string, ops []driver.BatchOp) error {
	err := s.Storage.WriteBatch(ctx, ws, ops)
	if err != nil {
		return err
	}
	var evs []driver.ChangeEvent
	for _, op := range ops {
		switch {
		case op.Create != nil:
			evs = append(evs, entityEvent(eventCreated, op.Create))
		case op.Update != nil:
			evs = append(evs, entityEvent(updateKind(op.Update), op.Update))
		}
	}
	s.ev.add(evs...)
	return nil
}

func (s eventingStore) CompleteEmbedding(ctx context.Context, ws string, modelID int64, done []driver.EmbedResult) error {
	err := s.Storage.CompleteEmbedding(ctx, ws, modelID, done)
	if err == nil {
		evs := make([]driver.ChangeEvent, len(done))
		for i, r := range done {
			// Who may see it is looked up when it is delivered.
			evs[i] = driver.ChangeEvent{Kind: eventEnriched, EntityID: r.EntityID,
				Data: []byte(`{"chunks":` + strconv.Itoa(len(r.ChunkIDs)) + `}`)}
		}
		s.ev.add(evs...)
	}
	return err
}

func (s eventingStore) CompleteExtraction(ctx context.Context, ws string, r driver.ExtractResult) (int, bool, error) {
	n, ok, err := s.Storage.CompleteExtraction(ctx, ws, r)
	if err == nil && ok {
		evs := make([]driver.ChangeEvent, 0, len(r.Creates)+1)
		for _, p := range r.Creates {
			evs = append(evs, entityEvent(eventCreated, p.Entity))
		}
		evs = append(evs, driver.ChangeEvent{Kind: eventExtracted, EntityID: r.EntityID,
			Data: []byte(`{"edges":` + strconv.Itoa(n) + `}`)})
		s.ev.add(evs...)
	}
	return n, ok, err
}

func (s eventingStore) PurgeEntities(ctx context.Context, ws string, ids []uuid.UUID, audit *AuditEntry) (driver.PurgeCounts, error) {
	n, err := s.Storage.PurgeEntities(ctx, ws, ids, audit)
	if err == nil {
		evs := make([]driver.ChangeEvent, len(ids))
		for i, id := range ids {
			evs[i] = driver.ChangeEvent{Kind: eventPurged, EntityID: id}
		}
		s.ev.add(evs...)
	}
	return n, err
}
