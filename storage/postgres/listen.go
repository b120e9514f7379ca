package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
)

// listener is the store's change feed: one connection outside the pool,
// LISTENing on the notify and key channels, shared by every Listen call of
// every workspace (a server of many workspaces runs a worker, an event hub
// and an ingestion loop per workspace: a connection each would exhaust
// max_connections). It runs while anyone listens and reconnects after
// failures.
type listener struct {
	// dispatch orders a new subscriber's first EventConnected with the
	// connection's state changes.
	dispatch sync.Mutex
	mu       sync.Mutex
	subs     map[*subscriber]struct{}
	cur      *feedConn // the running connection loop, nil when nobody listens
}

// subscriber is one Listen call.
type subscriber struct {
	ws string
	h  func(driver.Event)
	mu sync.Mutex // held while h runs; gone is set under it
	// gone: Listen returned, h is never called again.
	gone bool
}

func (sub *subscriber) deliver(ev driver.Event) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if !sub.gone {
		sub.h(ev)
	}
}

// feedConn is one run of the connection loop.
type feedConn struct {
	cancel    context.CancelFunc
	connected bool // guarded by listener.mu
}

// Listen implements driver.Notifier with LISTEN/NOTIFY. Every call shares
// one connection outside the pool, which reconnects after failures,
// reporting EventConnected and EventDisconnected so callers can distrust
// caches while it is down. It blocks until ctx ends; h is not called after
// it returns.
func (s *Store) Listen(ctx context.Context, ws string, h func(driver.Event)) error {
	sub := &subscriber{ws: ws, h: h}
	l := &s.feed
	l.dispatch.Lock()
	l.mu.Lock()
	if l.subs == nil {
		l.subs = map[*subscriber]struct{}{}
	}
	l.subs[sub] = struct{}{}
	if l.cur == nil {
		run, cancel := context.WithCancel(context.WithoutCancel(ctx))
		fc := &feedConn{cancel: cancel}
		l.cur = fc
		go s.feedLoop(run, fc)
	}
	connected := l.cur.connected
	l.mu.Unlock()
	if connected {
		sub.deliver(driver.Event{Kind: driver.EventConnected})
	}
	l.dispatch.Unlock()
	<-ctx.Done()
	l.mu.Lock()
	delete(l.subs, sub)
	if len(l.subs) == 0 && l.cur != nil {
		l.cur.cancel()
		l.cur = nil
	}
	l.mu.Unlock()
	sub.mu.Lock()
	sub.gone = true
	sub.mu.Unlock()
	return nil
}

// subscribers returns the current subscribers.
func (l *listener) subscribers() []*subscriber {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]*subscriber, 0, len(l.subs))
	for sub := range l.subs {
		out = append(out, sub)
	}
	return out
}

// setConnected records fc's state and tells every subscriber.
func (s *Store) setConnected(fc *feedConn, up bool) {
	s.feed.dispatch.Lock()
	defer s.feed.dispatch.Unlock()
	s.feed.mu.Lock()
	fc.connected = up
	current := s.feed.cur == fc
	s.feed.mu.Unlock()
	if !current { // a loop being shut down speaks for nobody
		return
	}
	kind := driver.EventDisconnected
	if up {
		kind = driver.EventConnected
	}
	for _, sub := range s.feed.subscribers() {
		sub.deliver(driver.Event{Kind: kind})
	}
}

// feedLoop keeps the shared connection up until ctx ends.
func (s *Store) feedLoop(ctx context.Context, fc *feedConn) {
	backoff := 100 * time.Millisecond
	for {
		err := s.listenOnce(ctx, fc)
		if ctx.Err() != nil {
			return
		}
		s.setConnected(fc, false)
		s.log.Warn("store change feed lost its connection; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff < 10*time.Second {
			backoff *= 2
		}
	}
}

func (s *Store) listenOnce(ctx context.Context, fc *feedConn) error {
	cc := s.pool.Config().ConnConfig.Copy()
	// Named for operators (pg_stat_activity): the store's one LISTEN
	// connection and its channel.
	cc.RuntimeParams["application_name"] = "postgram listen " + s.cfg.NotifyChannel
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{s.cfg.NotifyChannel}.Sanitize()+"; LISTEN "+KeyChannel); err != nil {
		return err
	}
	// The schema in which this store's api_keys table lives, resolved
	// through the search_path as every query of the store resolves it.
	var schema *string
	err = conn.QueryRow(ctx, `SELECT (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass('api_keys'))`).Scan(&schema)
	if err != nil {
		return fmt.Errorf("find the api_keys table: %w", err)
	}
	if schema == nil {
		return errors.New("no api_keys table on the search_path: migrations have not run")
	}
	s.setConnected(fc, true)
	allKeys := "key:" + *schema + ":*"
	keyPrefix := "key:" + *schema + ":"
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		for _, sub := range s.feed.subscribers() {
			switch {
			case n.Channel == KeyChannel && n.Payload == allKeys:
				sub.deliver(driver.Event{Kind: driver.EventKeyRevoked})
			case n.Channel == KeyChannel:
				if rest, ok := strings.CutPrefix(n.Payload, keyPrefix+sub.ws+":"); ok {
					sub.deliver(driver.Event{Kind: driver.EventKeyRevoked, ID: rest})
				}
			case n.Payload == sub.ws:
				sub.deliver(driver.Event{Kind: driver.EventWork})
			case n.Payload == EventChannelPrefix+sub.ws:
				sub.deliver(driver.Event{Kind: driver.EventAppended})
			}
		}
	}
}
