package driver

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
)

// JobStatus is where a background job is in its life.
type JobStatus string

// Job statuses. Queued and running jobs are live; the other three are
// final (a failed or cancelled job may be retried, which queues it again).
const (
	JobQueued    JobStatus = "queued"
	JobRunning   JobStatus = "running"
	JobDone      JobStatus = "done"
	JobFailed    JobStatus = "failed"
	JobCancelled JobStatus = "cancelled"
)

// JobStatuses lists every status.
var JobStatuses = []JobStatus{JobQueued, JobRunning, JobDone, JobFailed, JobCancelled}

// Final reports whether s ends a job's run.
func (s JobStatus) Final() bool { return s == JobDone || s == JobFailed || s == JobCancelled }

// Job is one background job (today: an ingestion, package ingest). The
// store keeps it durable so it survives a restart and is shared by every
// server on one database: a claim leases it (LeaseUntil), and a job whose
// lease ran out is claimed again and resumes.
type Job struct {
	ID   uuid.UUID
	Kind string // "ingest"
	// Status and Stage: Stage names the step in progress (fetching,
	// extracting, ...) and its final value mirrors Status.
	Status   JobStatus
	Stage    string
	Progress float64 // 0..1
	// Attempts counts claims; a failed attempt is retried after a backoff
	// (RunAt) until MaxAttempts.
	Attempts    int
	MaxAttempts int
	LastError   string
	RunAt       time.Time
	LeaseUntil  *time.Time
	// CancelRequested asks a running job to stop at its next step.
	CancelRequested bool
	// KeyID is the API key that submitted the job ("" for an unscoped
	// client); the job runs with that key's rights.
	KeyID string
	// SourceURL and SHA256 identify the content (the URL fetched, the
	// digest of the raw bytes once known): ingestion deduplicates on them.
	SourceURL string
	SHA256    string
	EntityID  *uuid.UUID // the entity written, once there is one
	// Input is the job's request and State what it has done so far, both
	// JSON documents the store keeps opaque.
	Input      []byte
	State      []byte
	Version    int64
	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt *time.Time
}

// JobFilter selects jobs; zero fields mean "any".
type JobFilter struct {
	Kind      string
	Statuses  []JobStatus
	KeyID     *string // only this submitter's jobs
	SourceURL string
	SHA256    string
	EntityID  *uuid.UUID
	Limit     int // default 100
	// Before pages: only jobs created before this one (by creation time,
	// then id), newest first.
	Before *uuid.UUID
}

// JobStorage keeps background jobs.
type JobStorage interface {
	// CreateJob inserts j (ID, Kind, Input, RunAt set by the caller) at
	// version 1, status queued unless set.
	CreateJob(ctx context.Context, ws string, j *Job) error
	// GetJob returns a job or an error wrapping ErrNotFound.
	GetJob(ctx context.Context, ws string, id uuid.UUID) (*Job, error)
	// ListJobs returns the jobs f selects, newest first.
	ListJobs(ctx context.Context, ws string, f JobFilter) ([]Job, error)
	// ClaimJobs leases up to max jobs of kind that are queued and due
	// (RunAt <= now), or running with an expired lease, oldest due first:
	// each becomes running with LeaseUntil = now+lease, one more attempt
	// and a new version. Concurrent claimers never get the same job.
	ClaimJobs(ctx context.Context, ws, kind string, now time.Time, lease time.Duration, max int) ([]Job, error)
	// UpdateJob stores j if the stored version is still j.Version and sets
	// j.Version (and UpdatedAt) to the new one; a changed job returns an
	// error wrapping ErrConflict, a missing one ErrNotFound.
	UpdateJob(ctx context.Context, ws string, j *Job) error
	// NextJobDue returns when the earliest queued job of kind is due (or a
	// running job's lease ends); ok is false when there is none.
	NextJobDue(ctx context.Context, ws, kind string) (at time.Time, ok bool, err error)
}

// ChangeEvent is one entry of a workspace's event log: a change to an
// entity (created, updated, archived, enriched, extracted, purged) or to a
// job. The log is bounded; Seq grows with each append in a workspace, so a
// subscriber resumes after the last Seq it saw.
type ChangeEvent struct {
	Seq  int64
	Kind string // "entity.created", "job.updated", ...
	// EntityID and JobID name what changed (uuid.Nil when not an entity's
	// or a job's event).
	EntityID uuid.UUID
	JobID    uuid.UUID
	// Who may see the event: an entity event carries the entity's type,
	// visibility, owner, memory role and session-context client; a job
	// event its submitter's KeyID.
	Type       EntityType
	Visibility Visibility
	Owner      string
	Role       MemoryRole
	ClientID   string
	KeyID      string
	// Data is the event's JSON payload (version, status, stage, progress).
	Data      []byte
	CreatedAt time.Time
}

// EventStorage keeps the bounded event log.
//
// The writes that change entities append their change events in their own
// transaction, so an event exists exactly when its change committed:
// CreateEntity and WriteBatch creates (EventEntityCreated), UpdateEntity
// and WriteBatch updates (ChangeKindOf), CompleteEmbedding for each entity
// it marks completed (EventEntityEnriched), CompleteExtraction
// (EventEntityExtracted, and EventEntityCreated for its placeholders) and
// PurgeEntities (EventEntityPurged). Build them with EntityChange. A
// reader following Seq never skips an event that commits late: a store
// assigns Seq in commit order (SQLite's single writer does by itself;
// PostgreSQL sequences committed events under a lock before a read).
type EventStorage interface {
	// AppendEvents appends events (job progress) in their own
	// transaction, setting each one's CreatedAt (and Seq where the store
	// assigns it at once). It wakes every listener (EventAppended) on
	// stores with a change feed.
	AppendEvents(ctx context.Context, ws string, events []ChangeEvent) error
	// EventsAfter returns up to limit events with Seq > after, in Seq
	// order, and the smallest Seq the log still holds (0 when empty), so a
	// reader can tell that it missed pruned events. An event committed just
	// before the call may not be numbered yet (PostgreSQL numbers them in
	// the background under load); EventsSignal fires when it is.
	EventsAfter(ctx context.Context, ws string, after int64, limit int) ([]ChangeEvent, int64, error)
	// LastEventSeq returns the newest Seq (0 when the log is empty), once
	// every event committed before the call is numbered.
	LastEventSeq(ctx context.Context, ws string) (int64, error)
	// EventsSignal returns a channel closed at the next append to ws made
	// through this store value (in this process), so readers in the
	// process wake at once. Other processes' appends reach readers through
	// the Notifier (EventAppended) where the store has one, or by polling.
	EventsSignal(ws string) <-chan struct{}
	// PruneEvents deletes every event created before olderThan or not
	// among the newest keep, returning how many.
	PruneEvents(ctx context.Context, ws string, keep int, olderThan time.Time) (int, error)
}

// Kinds of entity change events.
const (
	EventEntityCreated   = "entity.created"
	EventEntityUpdated   = "entity.updated"
	EventEntityArchived  = "entity.archived"
	EventEntityEnriched  = "entity.enriched"
	EventEntityExtracted = "entity.extracted"
	EventEntityPurged    = "entity.purged"
)

// ChangeKindOf is the kind of an update that leaves e as it is: archived
// when its status is archived, else updated.
func ChangeKindOf(e *Entity) string {
	if e.Status == StatusArchived {
		return EventEntityArchived
	}
	return EventEntityUpdated
}

// EntityChange describes a change to e, with what a subscriber's rights
// are checked against and {version, status, type} as its data.
func EntityChange(kind string, e *Entity) ChangeEvent {
	data := `{"version":` + strconv.FormatInt(e.Version, 10) + `,"status":` + strconv.Quote(string(e.Status)) +
		`,"type":` + strconv.Quote(string(e.Type)) + `}`
	return ChangeEvent{Kind: kind, EntityID: e.ID, Type: e.Type, Visibility: e.Visibility, Owner: e.Owner,
		Role: e.MemoryRole(), ClientID: e.ClientID, Data: []byte(data)}
}

// EntityRef is an event about entity id that does not describe it (who may
// see it is decided from the entity as it is when it is delivered).
func EntityRef(kind string, id uuid.UUID, data string) ChangeEvent {
	return ChangeEvent{Kind: kind, EntityID: id, Data: []byte(data)}
}

// Broadcast hands out channels that the next Notify of their key closes:
// a wake-up for any number of waiters (EventsSignal). The zero value is
// ready to use.
type Broadcast struct {
	mu sync.Mutex
	m  map[string]chan struct{}
}

// Wait returns the channel the next Notify(key) closes.
func (b *Broadcast) Wait(key string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]chan struct{}{}
	}
	ch, ok := b.m[key]
	if !ok {
		ch = make(chan struct{})
		b.m[key] = ch
	}
	return ch
}

// Notify wakes every waiter of key.
func (b *Broadcast) Notify(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ch, ok := b.m[key]; ok {
		close(ch)
		delete(b.m, key)
	}
}
