// Package feed streams a workspace's change events — entities created,
// updated, archived, enriched, extracted or purged, and job progress — to
// subscribers, each filtered by the subscriber's rights and resumable from
// the last event seen.
//
// The events come from the store's bounded event log (driver.EventStorage),
// which the library appends to after every write and package ingest after
// every job step. A Subscription follows the log by sequence number: it
// wakes at once on appends made in this process (EventsSignal) and, on a
// store with a change feed (PostgreSQL's LISTEN/NOTIFY), on every other
// server's appends too; a poll catches anything else (another process on
// one SQLite file). Transports (REST's Server-Sent Events and WebSocket,
// pgm watch) only encode what Next returns.
package feed

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
)

// Config configures a Hub. Zero values take the documented defaults.
type Config struct {
	// Poll is how often an idle subscription re-reads the log anyway
	// (appends by another process on a store without a change feed,
	// notifications missed while reconnecting). Default 1 second.
	Poll time.Duration
	// Batch is how many events one read of the log takes. Default 256.
	Batch int
}

// Event is one change as a subscriber receives it.
type Event struct {
	// Seq orders a workspace's events; resume after it (Last-Event-ID).
	Seq int64 `json:"seq"`
	// Kind: entity.created, entity.updated, entity.archived,
	// entity.enriched, entity.extracted, entity.purged, job.created,
	// job.updated; or stream.gap when events the subscriber asked for were
	// already pruned from the log (Data says from where it resumed).
	Kind     string          `json:"kind"`
	EntityID string          `json:"entity_id,omitempty"`
	JobID    string          `json:"job_id,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	At       time.Time       `json:"at"`
}

// ID is the event's Seq as text: the SSE id and the Last-Event-ID to
// resume from.
func (e Event) ID() string { return strconv.FormatInt(e.Seq, 10) }

// KindGap is the kind of the event a subscription sends when the events
// after its position were pruned before it read them.
const KindGap = "stream.gap"

// Hub hands out subscriptions to one workspace's events. Run it (it
// carries the store's change feed to the subscriptions); Subscribe works
// without it, at the poll's pace for other processes' events.
type Hub struct {
	st  driver.Storage
	ws  string
	cfg Config

	remote driver.Broadcast // other processes' appends (the change feed)
}

// New returns a hub over admin's workspace and store.
func New(admin *postgram.Admin, cfg Config) *Hub {
	if cfg.Poll <= 0 {
		cfg.Poll = time.Second
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 256
	}
	return &Hub{st: admin.Storage(), ws: admin.Workspace(), cfg: cfg}
}

// Run follows the store's change feed until ctx ends, waking the
// subscriptions when another server appended; on a store without a feed
// it returns at once (subscriptions poll).
func (h *Hub) Run(ctx context.Context) error {
	n, ok := h.st.(driver.Notifier)
	if !ok {
		return nil
	}
	return n.Listen(ctx, h.ws, func(ev driver.Event) {
		switch ev.Kind {
		case driver.EventAppended, driver.EventConnected:
			h.remote.Notify("")
		}
	})
}

// Last returns the newest event's Seq (0 when the log is empty): a
// subscription after it receives only what happens from now on.
func (h *Hub) Last(ctx context.Context) (int64, error) {
	return h.st.LastEventSeq(ctx, h.ws)
}

// Subscribe returns a subscription for c's principal that delivers the
// events after seq after (0: everything the log still holds; see Last).
func (h *Hub) Subscribe(c *postgram.Client, after int64) *Subscription {
	return &Subscription{h: h, p: c.Principal(), cursor: max(after, 0)}
}

// Subscription is one subscriber's position in the log. It is not safe
// for concurrent use.
type Subscription struct {
	h      *Hub
	p      *postgram.Principal
	cursor int64
	queue  []Event
}

// Cursor returns the Seq of the last event Next returned (or skipped as
// not visible): resume after it.
func (s *Subscription) Cursor() int64 { return s.cursor }

// Next returns the next event the subscriber may see, waiting for one
// until ctx ends (then it returns ctx's error).
func (s *Subscription) Next(ctx context.Context) (Event, error) {
	for len(s.queue) == 0 {
		// Take the wake-up channels before reading, so an append between
		// the read and the wait is not missed.
		local := s.h.st.EventsSignal(s.h.ws)
		remote := s.h.remote.Wait("")
		n, err := s.fill(ctx)
		if err != nil {
			return Event{}, err
		}
		if n > 0 {
			continue // read again at once: more may follow
		}
		t := time.NewTimer(s.h.cfg.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return Event{}, ctx.Err()
		case <-local:
		case <-remote:
		case <-t.C:
		}
		t.Stop()
	}
	ev := s.queue[0]
	s.queue = s.queue[1:]
	return ev, nil
}

// fill reads the next batch of the log into the queue, keeping what the
// subscriber may see, and returns how many log entries it read.
func (s *Subscription) fill(ctx context.Context) (int, error) {
	evs, first, err := s.h.st.EventsAfter(ctx, s.h.ws, s.cursor, s.h.cfg.Batch)
	if err != nil {
		return 0, fmt.Errorf("read the event log: %w", err)
	}
	if len(evs) == 0 {
		return 0, nil
	}
	// The log no longer holds the cursor's own event: what followed it
	// may have been pruned too (seqs are not dense, so whether anything
	// was lost cannot be told; the subscriber is told it may have been).
	if s.cursor > 0 && first > s.cursor {
		data, _ := json.Marshal(map[string]int64{"after": s.cursor, "resumed_at": evs[0].Seq})
		s.queue = append(s.queue, Event{Seq: evs[0].Seq - 1, Kind: KindGap, Data: data, At: time.Now().UTC()})
	}
	visible, err := s.visible(ctx, evs)
	if err != nil {
		return 0, err
	}
	for i, e := range evs {
		if !visible[i] {
			continue
		}
		out := Event{Seq: e.Seq, Kind: e.Kind, At: e.CreatedAt}
		if e.EntityID != uuid.Nil {
			out.EntityID = e.EntityID.String()
		}
		if e.JobID != uuid.Nil {
			out.JobID = e.JobID.String()
		}
		if len(e.Data) > 0 && string(e.Data) != "{}" {
			out.Data = json.RawMessage(e.Data)
		}
		s.queue = append(s.queue, out)
	}
	s.cursor = evs[len(evs)-1].Seq
	return len(evs), nil
}

// visible reports, per event, whether the subscriber may see it: an
// entity event when its principal may read the entity as the event
// describes it (or, for events that do not describe it, as it is now); a
// job event when the principal submitted the job; everything for an
// unscoped client. A purged entity cannot be looked up: only unscoped
// clients see its purge.
func (s *Subscription) visible(ctx context.Context, evs []driver.ChangeEvent) ([]bool, error) {
	out := make([]bool, len(evs))
	if s.p == nil {
		for i := range out {
			out[i] = true
		}
		return out, nil
	}
	var lookup []uuid.UUID
	for i, e := range evs {
		switch {
		case e.JobID != uuid.Nil:
			out[i] = e.KeyID != "" && e.KeyID == s.p.KeyID
		case e.EntityID != uuid.Nil && e.Type != "":
			out[i] = s.p.Sees(driver.FilterView{Type: e.Type, Status: driver.StatusActive, Visibility: e.Visibility,
				Owner: e.Owner, MemoryRole: string(e.Role), ClientID: e.ClientID})
		case e.EntityID != uuid.Nil && e.Kind != "entity.purged":
			lookup = append(lookup, e.EntityID)
		}
	}
	if len(lookup) == 0 {
		return out, nil
	}
	ents, err := s.h.st.GetEntities(ctx, s.h.ws, lookup)
	if err != nil {
		return nil, fmt.Errorf("check the events' entities: %w", err)
	}
	seen := make(map[uuid.UUID]bool, len(ents))
	for _, e := range ents {
		seen[e.ID] = s.p.Sees(driver.ViewOf(e))
	}
	for i, e := range evs {
		if e.Type == "" && e.JobID == uuid.Nil && e.EntityID != uuid.Nil && e.Kind != "entity.purged" {
			out[i] = seen[e.EntityID]
		}
	}
	return out, nil
}
