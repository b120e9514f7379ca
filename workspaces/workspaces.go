// Package workspaces serves every workspace of a store from one process:
// a Directory opens a workspace's client (its enrichment worker, caches
// and keys), event hub and ingestion service the first time a request or
// the store's directory names it, finds a request's workspace from its
// API key, and creates, lists and deletes workspaces.
//
// A workspace is a hard tenant boundary: each key belongs to one
// workspace, and everything a request does goes through that workspace's
// client, so a key never reads or writes another workspace's rows (on
// PostgreSQL row-level security enforces the same below the library).
//
//	dir, err := workspaces.Open(ctx, workspaces.Config{Client: postgram.Config{Store: st, Embedder: emb}})
//	...
//	c, err := dir.Authenticate(ctx, token) // the key's workspace's view
//	w, err := dir.Get(ctx, c.Workspace())  // its operator view, events, ingestion
//
// The server command serves REST and MCP through a Directory;
// pgm-admin workspace create/list/delete manage the store's directory.
package workspaces

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/feed"
	"github.com/postgram-go/postgram/ingest"
)

// Config configures a Directory. Zero values take the documented
// defaults.
type Config struct {
	// Client configures every workspace's client; its Workspace names the
	// default workspace (opened by Open; default "default"). Its Store must
	// implement driver.WorkspaceStorage (both bundled backends do).
	Client postgram.Config
	// Ingest, when set, builds a workspace's ingestion service (called once
	// per workspace the directory opens; give each its own part of the
	// raw store, raw.Sub). Nil: no ingestion.
	Ingest func(admin *postgram.Admin) (*ingest.Service, error)
	// Events configures every workspace's event hub.
	Events feed.Config
	// Refresh is how often a started directory looks for workspaces
	// created by other processes (pgm-admin, another server) to start
	// their workers. Default 30 seconds.
	Refresh time.Duration
	// KeyCacheSize bounds the remembered key-to-workspace answers (a key
	// never moves between workspaces; the workspace's own key checks run
	// on every request). Default 10,000; negative disables the cache.
	KeyCacheSize int
}

// Workspace is one open workspace: its operator view (Admin.Client is its
// unscoped client), event hub and ingestion service (nil when the
// directory has no Config.Ingest).
type Workspace struct {
	Admin  *postgram.Admin
	Events *feed.Hub
	Ingest *ingest.Service

	started bool               // its worker, hub and ingestion run
	cancel  context.CancelFunc // ends its hub and ingestion
	tasks   sync.WaitGroup
	opened  time.Time
}

// halt ends w's hub and ingestion (ingestion puts its running jobs back
// in the queue) and then stops its worker within ctx's deadline.
func (w *Workspace) halt(ctx context.Context) error {
	w.cancel()
	w.tasks.Wait()
	return w.Admin.Client().Stop(ctx)
}

// Name returns the workspace's name.
func (w *Workspace) Name() string { return w.Admin.Workspace() }

// Info describes a workspace of the store's directory with its
// statistics.
type Info struct {
	Name      string              `json:"name"`
	CreatedAt time.Time           `json:"created_at"`
	Stats     postgram.StoreStats `json:"stats"`
	Open      bool                `json:"open"` // opened by this directory
}

// Directory opens and serves a store's workspaces. It is safe for
// concurrent use.
type Directory struct {
	cfg   Config
	st    driver.WorkspaceStorage
	log   *slog.Logger
	dflt  *Workspace
	mu    sync.Mutex
	open  map[string]*Workspace
	keys  map[[sha256.Size]byte]string // sha256(token) -> workspace
	run   context.Context              // non-nil once started
	stop  context.CancelFunc
	tasks sync.WaitGroup // the refresh loop
}

// Open returns a directory over cfg.Client.Store with its default
// workspace open.
func Open(ctx context.Context, cfg Config) (*Directory, error) {
	st, ok := cfg.Client.Store.(driver.WorkspaceStorage)
	if !ok {
		if cfg.Client.Store == nil {
			return nil, errors.New("workspaces: Config.Client.Store is required")
		}
		return nil, fmt.Errorf("workspaces: the %s store cannot serve many workspaces (it does not implement driver.WorkspaceStorage)", cfg.Client.Store.Name())
	}
	if cfg.Client.Workspace == "" {
		cfg.Client.Workspace = postgram.DefaultWorkspace
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = 30 * time.Second
	}
	if cfg.KeyCacheSize == 0 {
		cfg.KeyCacheSize = 10_000
	}
	log := cfg.Client.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	d := &Directory{cfg: cfg, st: st, log: log, open: map[string]*Workspace{}, keys: map[[sha256.Size]byte]string{}}
	w, err := d.Get(ctx, cfg.Client.Workspace)
	if err != nil {
		return nil, err
	}
	d.dflt = w
	return d, nil
}

// Default returns the default workspace (Config.Client.Workspace).
func (d *Directory) Default() *Workspace { return d.dflt }

// Get returns the open workspace name, opening it on first use (and
// starting its worker, hub and ingestion when the directory is started).
// It does not create the workspace in the store's directory: a workspace
// with no rows is simply empty. An invalid name returns a validation error
// naming the workspace field.
func (d *Directory) Get(ctx context.Context, name string) (*Workspace, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if w := d.open[name]; w != nil {
		return w, nil
	}
	cfg := d.cfg.Client
	cfg.Workspace = name
	c, err := postgram.New(ctx, cfg)
	if err != nil {
		return nil, err
	}
	admin, err := c.Admin()
	if err != nil {
		return nil, err
	}
	w := &Workspace{Admin: admin, Events: feed.New(admin, d.cfg.Events), opened: time.Now()}
	if d.cfg.Ingest != nil {
		if w.Ingest, err = d.cfg.Ingest(admin); err != nil {
			return nil, fmt.Errorf("workspace %s: ingestion: %w", name, err)
		}
	}
	if d.run != nil {
		if err := d.startLocked(w); err != nil {
			return nil, err
		}
	}
	d.open[name] = w
	return w, nil
}

// Authenticate verifies an API key in its own workspace and returns that
// workspace's view acting for the key's principal (rest.Authenticator,
// mcp's too). Unknown, malformed, revoked and expired keys return errors
// wrapping postgram.ErrUnauthorized, as Admin.Authenticate does.
func (d *Directory) Authenticate(ctx context.Context, token string) (*postgram.Client, error) {
	sum := sha256.Sum256([]byte(token))
	d.mu.Lock()
	name, ok := d.keys[sum]
	d.mu.Unlock()
	if !ok {
		var err error
		if name, err = d.dflt.Admin.KeyWorkspace(ctx, token); err != nil {
			return nil, err
		}
		if d.cfg.KeyCacheSize > 0 {
			d.mu.Lock()
			if len(d.keys) >= d.cfg.KeyCacheSize {
				clear(d.keys)
			}
			d.keys[sum] = name
			d.mu.Unlock()
		}
	}
	w, err := d.Get(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("open the key's workspace: %w", err)
	}
	return w.Admin.Authenticate(ctx, token)
}

// Create enters name in the store's directory and opens it. An invalid
// name is a validation error naming the workspace; an existing one wraps
// postgram.ErrConflict.
func (d *Directory) Create(ctx context.Context, name string) (*Workspace, error) {
	if _, err := postgram.New(ctx, postgram.Config{Store: d.cfg.Client.Store, Workspace: name}); err != nil {
		return nil, err // validates the name without registering a model
	}
	if err := d.st.CreateWorkspace(ctx, name, time.Now().UTC().Truncate(time.Microsecond)); err != nil {
		if errors.Is(err, driver.ErrConflict) {
			return nil, fmt.Errorf("workspace %q exists: %w", name, postgram.ErrConflict)
		}
		return nil, fmt.Errorf("create workspace %s: %w", name, err)
	}
	return d.Get(ctx, name)
}

// List returns the store's workspaces by name, each with its statistics.
func (d *Directory) List(ctx context.Context) ([]Info, error) {
	ws, err := d.st.Workspaces(ctx)
	if err != nil {
		return nil, fmt.Errorf("list workspaces: %w", err)
	}
	out := make([]Info, 0, len(ws))
	for _, w := range ws {
		d.mu.Lock()
		open := d.open[w.Name] != nil
		d.mu.Unlock()
		st, err := d.cfg.Client.Store.Stats(ctx, w.Name)
		if err != nil {
			return nil, fmt.Errorf("workspace %s: statistics: %w", w.Name, err)
		}
		out = append(out, Info{Name: w.Name, CreatedAt: w.CreatedAt, Stats: st, Open: open})
	}
	return out, nil
}

// Delete removes the workspace and everything in it: entities, chunks,
// embeddings, edges, keys (refused at once by every server), the audit
// log, sync state, jobs, events and the original bytes of its ingestions.
// A started directory stops the workspace's worker, hub and ingestion
// first. An unknown workspace wraps postgram.ErrNotFound.
func (d *Directory) Delete(ctx context.Context, name string) (driver.WorkspaceCounts, error) {
	w, err := d.Get(ctx, name)
	if err != nil {
		return driver.WorkspaceCounts{}, err
	}
	d.mu.Lock()
	started := w.started
	w.started = false
	delete(d.open, name)
	for k, v := range d.keys {
		if v == name {
			delete(d.keys, k)
		}
	}
	d.mu.Unlock()
	if started {
		if err := w.halt(ctx); err != nil {
			d.log.Warn("deleting a workspace: its worker did not stop in time", "workspace", name, "err", err)
		}
	}
	var n driver.WorkspaceCounts
	rows := func(ctx context.Context) error {
		var err error
		n, err = d.st.DeleteWorkspace(ctx, name)
		return err
	}
	if w.Ingest != nil {
		_, err = w.Ingest.DeleteWorkspace(ctx, rows)
	} else {
		err = rows(ctx)
	}
	if errors.Is(err, driver.ErrNotFound) {
		return n, fmt.Errorf("workspace %q: %w", name, postgram.ErrNotFound)
	}
	if err != nil {
		return n, fmt.Errorf("delete workspace %s: %w", name, err)
	}
	return n, nil
}

// Start starts the worker, event hub and ingestion of every workspace in
// the store's directory, of each one opened later, and of those other
// processes create (looked for every Config.Refresh), until Stop.
func (d *Directory) Start(ctx context.Context) error {
	d.mu.Lock()
	if d.run != nil {
		d.mu.Unlock()
		return errors.New("workspaces: the directory is started already")
	}
	d.run, d.stop = context.WithCancel(ctx)
	for _, w := range d.open {
		if err := d.startLocked(w); err != nil {
			d.mu.Unlock()
			return err
		}
	}
	d.mu.Unlock()
	if err := d.openAll(ctx); err != nil {
		return err
	}
	d.mu.Lock()
	run := d.run
	d.mu.Unlock()
	d.tasks.Add(1)
	go func() {
		defer d.tasks.Done()
		t := time.NewTicker(d.cfg.Refresh)
		defer t.Stop()
		for {
			select {
			case <-run.Done():
				return
			case <-t.C:
				if err := d.openAll(run); err != nil && run.Err() == nil {
					d.log.Warn("looking for new workspaces failed", "err", err)
				}
			}
		}
	}()
	return nil
}

// openAll opens every workspace of the store's directory, and closes the
// open ones that left it (deleted by another process: pgm-admin, another
// server), but never the default one, nor one opened since the directory
// was read.
func (d *Directory) openAll(ctx context.Context) error {
	listed := time.Now()
	ws, err := d.st.Workspaces(ctx)
	if err != nil {
		return fmt.Errorf("list workspaces: %w", err)
	}
	in := make(map[string]bool, len(ws))
	for _, w := range ws {
		in[w.Name] = true
		if _, err := d.Get(ctx, w.Name); err != nil {
			return fmt.Errorf("open workspace %s: %w", w.Name, err)
		}
	}
	var gone []*Workspace
	d.mu.Lock()
	for name, w := range d.open {
		if !in[name] && w != d.dflt && w.opened.Before(listed) {
			gone = append(gone, w)
			delete(d.open, name)
			for k, v := range d.keys {
				if v == name {
					delete(d.keys, k)
				}
			}
		}
	}
	running := make([]bool, len(gone))
	for i, w := range gone {
		running[i], w.started = w.started, false
	}
	d.mu.Unlock()
	// Halting waits for the workspace's loops: not under d.mu.
	for i, w := range gone {
		if running[i] {
			if err := w.halt(ctx); err != nil {
				d.log.Warn("closing a deleted workspace: its worker did not stop in time", "workspace", w.Name(), "err", err)
			}
		}
		d.log.Info("closed a workspace that was deleted", "workspace", w.Name())
	}
	return nil
}

// startLocked starts w's worker, hub and ingestion; d.mu is held.
func (d *Directory) startLocked(w *Workspace) error {
	if w.started {
		return nil
	}
	run, cancel := context.WithCancel(d.run)
	if err := w.Admin.Client().Start(run); err != nil {
		cancel()
		return fmt.Errorf("workspace %s: start the worker: %w", w.Name(), err)
	}
	w.started, w.cancel = true, cancel
	w.tasks.Add(1)
	go func() {
		defer w.tasks.Done()
		if err := w.Events.Run(run); err != nil {
			d.log.Error("the event feed stopped", "workspace", w.Name(), "err", err)
		}
	}()
	if w.Ingest != nil {
		w.tasks.Add(1)
		go func() {
			defer w.tasks.Done()
			if err := w.Ingest.Run(run); err != nil {
				d.log.Error("ingestion stopped", "workspace", w.Name(), "err", err)
			}
		}()
	}
	return nil
}

// Stop ends what Start started: ingestion puts its running jobs back in
// the queue, the hubs end, and each worker finishes its batch (within
// ctx's deadline). Every workspace is stopped; the first error is
// returned.
func (d *Directory) Stop(ctx context.Context) error {
	d.mu.Lock()
	if d.run == nil {
		d.mu.Unlock()
		return nil
	}
	d.stop()
	d.run, d.stop = nil, nil
	ws := make([]*Workspace, 0, len(d.open))
	for _, w := range d.open {
		if w.started {
			ws = append(ws, w)
			w.started = false
		}
	}
	d.mu.Unlock()
	d.tasks.Wait()
	for _, w := range ws {
		w.cancel()
	}
	var first error
	for _, w := range ws {
		if err := w.halt(ctx); err != nil && first == nil {
			first = fmt.Errorf("workspace %s: %w", w.Name(), err)
		}
	}
	return first
}

// Names returns the names of the open workspaces, sorted.
func (d *Directory) Names() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.open))
	for n := range d.open {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
