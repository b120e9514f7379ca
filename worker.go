package postgram

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/validate"
)

// EnrichStats counts the work one EnrichPending call did.
type EnrichStats struct {
	Entities int `json:"entities"` // entities embedded
	Chunks   int `json:"chunks"`   // chunks embedded
	Failed   int `json:"failed"`   // entities whose attempt failed
	Calls    int `json:"calls"`    // provider calls
}

func (s *EnrichStats) add(o EnrichStats) {
	s.Entities += o.Entities
	s.Chunks += o.Chunks
	s.Failed += o.Failed
	s.Calls += o.Calls
}

var errNoEmbedder = fmt.Errorf("no embedding provider is configured: %w", ErrUnavailable)

// EnrichPending processes the embedding queue synchronously until no due
// work remains (failures waiting for their retry time are left for later)
// and reports what it did. For tests, CLIs and embedded use without Start.
func (a *Admin) EnrichPending(ctx context.Context) (EnrichStats, error) {
	c := a.c
	var total EnrichStats
	if c.embedder == nil {
		return total, errNoEmbedder
	}
	for {
		st, n, err := c.enrichOnce(ctx)
		total.add(st)
		if err != nil {
			return total, err
		}
		if n == 0 {
			return total, nil
		}
	}
}

// claimEmbedding leases a batch of entities from the embedding queue
// and loads their chunks that lack a vector for the active model.
func (c *core) claimEmbedding(ctx context.Context) ([]driver.EmbedJob, error) {
	w := c.cfg.Worker
	leases, err := c.store.ClaimWork(ctx, c.ws, driver.WorkClaim{Queue: driver.QueueEmbedding, Max: w.ClaimBatch,
		MaxAttempts: w.MaxAttempts, Lease: w.Lease})
	if err != nil {
		return nil, fmt.Errorf("claim embedding work: %w", err)
	}
	if len(leases) == 0 {
		return nil, nil
	}
	ids := make([]uuid.UUID, len(leases))
	for i, l := range leases {
		ids[i] = l.EntityID
	}
	chunks, err := c.store.ChunksToEmbed(ctx, c.ws, c.modelID, ids)
	if err != nil {
		return nil, fmt.Errorf("claim embedding work: %w", err)
	}
	jobs := make([]driver.EmbedJob, len(leases))
	for i, l := range leases {
		jobs[i] = driver.EmbedJob{Lease: l, Chunks: chunks[l.EntityID]}
	}
	return jobs, nil
}

// enrichOnce claims one batch of entities, embeds their chunks in as few
// provider calls as the batch size allows and records the outcome. It
// returns how many entities it claimed.
func (c *core) enrichOnce(ctx context.Context) (EnrichStats, int, error) {
	var st EnrichStats
	w := c.cfg.Worker
	jobs, err := c.claimEmbedding(ctx)
	if err != nil {
		return st, 0, err
	}
	if len(jobs) == 0 {
		return st, 0, nil
	}
	batch := w.EmbedBatch
	if mb, ok := c.embedder.(MaxBatcher); ok && mb.MaxBatch() > 0 && mb.MaxBatch() < batch {
		batch = mb.MaxBatch()
	}
	type ref struct{ job, chunk int }
	var refs []ref
	var texts []string
	vecs := make([][][]float32, len(jobs))
	for i, j := range jobs {
		vecs[i] = make([][]float32, len(j.Chunks))
		for k, ch := range j.Chunks {
			refs = append(refs, ref{i, k})
			texts = append(texts, ch.Content)
		}
	}
	failed := make([]error, len(jobs))
	dims := c.embedder.Model().Dimensions
	for start := 0; start < len(texts); start += batch {
		end := min(start+batch, len(texts))
		out, err := c.embedder.EmbedBatch(ctx, texts[start:end])
		st.Calls++
		if err == nil && len(out) != end-start {
			err = fmt.Errorf("%w: provider returned %d vectors for %d inputs", ErrEmbeddingFailed, len(out), end-start)
		}
		if err == nil {
			for _, v := range out {
				if len(v) != dims {
					err = fmt.Errorf("%w: provider returned a %d-dimension vector; the model has %d", ErrEmbeddingFailed, len(v), dims)
					break
				}
			}
		}
		c.noteEmbed(err)
		if err != nil && ctx.Err() != nil {
			// Shutting down: leave the lease to expire rather than count an
			// attempt against the entities.
			return st, len(jobs), ctx.Err()
		}
		for k := start; k < end; k++ {
			r := refs[k]
			if err != nil {
				if failed[r.job] == nil {
					failed[r.job] = err
				}
				continue
			}
			vecs[r.job][r.chunk] = out[k-start]
		}
	}
	var done []driver.EmbedResult
	var bad []driver.EmbedJob
	var badErr error
	for i, j := range jobs {
		if failed[i] != nil {
			bad = append(bad, j)
			badErr = failed[i]
			continue
		}
		r := driver.EmbedResult{EntityID: j.EntityID, Generation: j.Generation, Vectors: vecs[i]}
		for _, ch := range j.Chunks {
			r.ChunkIDs = append(r.ChunkIDs, ch.ID)
		}
		done = append(done, r)
		st.Entities++
		st.Chunks += len(j.Chunks)
	}
	if err := c.store.CompleteEmbedding(ctx, c.ws, c.modelID, done); err != nil {
		return st, len(jobs), fmt.Errorf("record embeddings: %w", err)
	}
	if st.Entities > 0 {
		c.log.Info("embedded", "entities", st.Entities, "chunks", st.Chunks, "provider_calls", st.Calls)
		c.wakeExtraction()
	}
	if len(bad) > 0 {
		st.Failed = len(bad)
		msg := validate.Truncate(badErr.Error(), 1000)
		c.log.Warn("embedding failed; will retry", "entities", len(bad), "err", msg,
			"retry_in", w.RetryBackoff.String())
		leases := make([]driver.Lease, len(bad))
		for i, j := range bad {
			leases[i] = j.Lease
		}
		if err := c.store.FailWork(ctx, c.ws, driver.QueueEmbedding, leases, msg, c.now().Add(w.RetryBackoff)); err != nil {
			return st, len(jobs), fmt.Errorf("record embedding failure: %w", err)
		}
	}
	return st, len(jobs), nil
}

// Start runs the client's background work until Stop (or ctx ends): with an
// embedder, Concurrency enrichment loops woken at once by new work in this
// process and, when the store is a Notifier, in others; the store's change
// feed, which also keeps the API-key cache coherent with revocations made
// anywhere; hourly query-cache pruning and periodic key-use flushing.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return errors.New("postgram: already started")
	}
	ctx, cancel := context.WithCancel(ctx)
	c.cancel = cancel
	c.done = make(chan struct{})
	c.running = true
	var wg sync.WaitGroup
	if c.embedder != nil {
		for i := 0; i < c.cfg.Worker.Concurrency; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.loop(ctx, c.wakeCh, "enrichment", c.cfg.Worker.ClaimBatch, c.cfg.Worker.BatchWait, func(ctx context.Context) (int, error) {
					_, n, err := c.enrichOnce(ctx)
					return n, err
				})
			}()
		}
	} else {
		c.log.Info("no embedding provider; enrichment is off and entities stay pending")
	}
	if c.cfg.Extraction.Extractor != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.loop(ctx, c.extractWakeCh, "extraction", c.cfg.Extraction.Concurrency, 0, func(ctx context.Context) (int, error) {
				_, n, err := c.extractOnce(ctx)
				return n, err
			})
		}()
	}
	if n, ok := c.store.(driver.Notifier); ok {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := n.Listen(ctx, c.ws, c.onEvent); err != nil {
				c.log.Error("store change feed stopped", "err", err)
			}
			c.keys.invalidate(false)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.maintenanceLoop(ctx)
	}()
	go func() {
		wg.Wait()
		close(c.done)
	}()
	c.wake()
	c.log.Info("background work started", "enrichment_loops", c.cfg.Worker.Concurrency, "embedder", c.embedder != nil,
		"extraction", c.cfg.Extraction.Extractor != nil)
	return nil
}

// onEvent handles the store's change feed.
func (c *core) onEvent(ev driver.Event) {
	switch ev.Kind {
	case driver.EventConnected:
		// Anything may have happened while disconnected.
		c.keys.invalidate(true)
		c.wake()
	case driver.EventDisconnected:
		c.keys.invalidate(false)
	case driver.EventKeyRevoked:
		c.keys.invalidate(true)
	case driver.EventWork:
		c.wake()
	}
}

// Stop stops background work and waits for in-flight batches to finish,
// or for ctx to end. A batch cut short keeps its lease and is retried
// later. Buffered key-use times are written.
func (c *Client) Stop(ctx context.Context) error {
	c.mu.Lock()
	if !c.running {
		c.mu.Unlock()
		return nil
	}
	c.cancel()
	done := c.done
	c.running = false
	c.mu.Unlock()
	select {
	case <-done:
		c.flushKeyUse(ctx)
		c.log.Info("background work stopped")
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop background work: %w", ctx.Err())
	}
}

// loop runs one kind of queue work (once claims a batch of at most batch
// entities and returns how many it claimed) whenever wake fires or the poll
// interval passes, until ctx ends. A claim that comes back short found
// everything then claimable, so the loop waits for the next wake instead of
// asking again: a write wakes it after its commit, and the poll covers
// retries coming due and expired leases. (Asking again at once cost an
// empty claim per batch, each a scan of the queue's index.) Claims that
// come back short are at least gather apart (WorkerConfig.BatchWait).
func (c *core) loop(ctx context.Context, wake chan struct{}, kind string, batch int, gather time.Duration, once func(context.Context) (int, error)) {
	poll := time.NewTimer(0)
	defer poll.Stop()
	hold := time.NewTimer(0)
	defer hold.Stop()
	failures := 0
	var last time.Time // the last short claim
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-poll.C:
		}
		if wait := gather - time.Since(last); gather > 0 && wait > 0 {
			hold.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-hold.C:
			}
		}
		for ctx.Err() == nil {
			start := time.Now()
			n, err := once(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				failures++
				wait := min(time.Duration(failures)*time.Second, 30*time.Second)
				c.log.Error(kind+" worker error", "err", err, "retry_in", wait.String())
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
				continue
			}
			failures = 0
			if n < batch {
				last = start
				break
			}
			// More work may remain: let a sibling loop help.
			select {
			case wake <- struct{}{}:
			default:
			}
		}
		poll.Reset(c.cfg.Worker.PollInterval)
	}
}

func (c *core) maintenanceLoop(ctx context.Context) {
	prune := time.NewTicker(c.cfg.Worker.MaintenanceInterval)
	defer prune.Stop()
	flush := time.NewTicker(c.cfg.Worker.KeyUseFlushInterval)
	defer flush.Stop()
	c.maintain(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-prune.C:
			c.maintain(ctx)
		case <-flush.C:
			c.flushKeyUse(ctx)
		}
	}
}

// maintain prunes the persisted query-embedding cache and the event log.
func (c *core) maintain(ctx context.Context) {
	if n, err := c.store.PruneEvents(ctx, c.ws, c.cfg.EventLogSize, c.now().Add(-c.cfg.EventLogMaxAge)); err != nil {
		if ctx.Err() == nil {
			c.log.Warn("pruning the event log failed", "err", err)
		}
	} else if n > 0 {
		c.log.Info("pruned the event log", "events", n)
	}
	if c.cfg.QueryCache.DisablePersist {
		return
	}
	n, err := c.store.PruneQueryEmbeddings(ctx, c.ws, c.now().Add(-c.cfg.QueryCache.Retention), c.cfg.QueryCache.MaxRowsPerClient)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("pruning the query embedding cache failed", "err", err)
		}
		return
	}
	if n > 0 {
		c.log.Info("pruned query embedding cache", "rows", n)
	}
}

// PruneQueryCache applies the query cache's retention now (the worker does
// it hourly).
func (a *Admin) PruneQueryCache(ctx context.Context) (int, error) {
	c := a.c
	return c.store.PruneQueryEmbeddings(ctx, c.ws, c.now().Add(-c.cfg.QueryCache.Retention), c.cfg.QueryCache.MaxRowsPerClient)
}
