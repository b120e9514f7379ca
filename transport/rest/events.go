package rest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/feed"
	"github.com/postgram-go/postgram/transport/apierror"
)

func (s *Server) eventRoutes() {
	s.api.HandleFunc("/api/events", s.events).Methods(http.MethodGet)
	s.api.HandleFunc("/api/events/ws", s.eventsWS).Methods(http.MethodGet)
}

// eventParams are the query parameters of GET /api/events and
// /api/events/ws.
var eventParams = []string{"after", "kinds"}

// heartbeat is how often an idle stream sends a keep-alive (an SSE
// comment, a WebSocket ping), so proxies keep it open and a dead peer is
// noticed.
const heartbeat = 15 * time.Second

// subscription parses the position and filter of an event request and
// subscribes: after= or Last-Event-ID resume after that event; neither
// starts from now. kinds= keeps the events whose kind starts with one of
// the comma-separated prefixes ("entity", "job", "entity.created").
func (s *Server) subscription(r *http.Request, c *postgram.Client) (*feed.Subscription, func(feed.Event) bool, error) {
	p := params(r, eventParams...)
	after := int64(-1)
	raw, given := p.one("after")
	field := "after"
	if !given {
		raw, given, field = r.Header.Get("Last-Event-ID"), r.Header.Get("Last-Event-ID") != "", "Last-Event-ID"
	}
	if given {
		n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
		if err != nil || n < 0 {
			p.fail(invalid(field, "must be the seq of an event (a non-negative integer)"))
		}
		after = n
	}
	var kinds []string
	for _, k := range p.list("kinds") {
		if k = strings.TrimSpace(k); k != "" {
			kinds = append(kinds, k)
		}
	}
	if p.err != nil {
		return nil, nil, p.err
	}
	_, hub, _, err := s.workspaceOf(r.Context(), c)
	if err != nil {
		return nil, nil, err
	}
	if after < 0 {
		last, err := hub.Last(r.Context())
		if err != nil {
			return nil, nil, err
		}
		after = last
	}
	keep := func(ev feed.Event) bool {
		if len(kinds) == 0 || ev.Kind == feed.KindGap {
			return true
		}
		for _, k := range kinds {
			if strings.HasPrefix(ev.Kind, k) {
				return true
			}
		}
		return false
	}
	return hub.Subscribe(c, after), keep, nil
}

// streamContext ends when the request does or the server closes its
// streams (CloseStreams, at shutdown).
func (s *Server) streamContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.streams, cancel)
	return ctx, func() { stop(); cancel() }
}

// nextOrBeat waits for the subscription's next event, or for heartbeat
// to pass (beat true: the caller sends its keep-alive).
func nextOrBeat(ctx context.Context, sub *feed.Subscription) (ev feed.Event, beat bool, err error) {
	wait, stop := context.WithTimeout(ctx, heartbeat)
	defer stop()
	ev, err = sub.Next(wait)
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return ev, true, nil
	}
	return ev, false, err
}

// CloseStreams ends every open event stream (SSE and WebSocket): call it
// when the server shuts down (http.Server.RegisterOnShutdown), since
// Shutdown waits for open requests and a stream never ends by itself.
func (s *Server) CloseStreams() { s.closeStreams() }

// events streams the caller's events as Server-Sent Events: "id" is the
// event's seq (send it back as Last-Event-ID to resume), "event" its kind,
// "data" the event as JSON.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	sub, keep, err := s.subscription(r, c)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	// The server's read timeout would end a stream that outlives it (the
	// connection's background read fails and cancels the request).
	_ = rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write([]byte("retry: 2000\n: connected\n\n")); err != nil {
		return
	}
	_ = rc.Flush()
	ctx, cancel := s.streamContext(r)
	defer cancel()
	for {
		ev, beat, err := nextOrBeat(ctx, sub)
		switch {
		case beat:
			if _, err := w.Write([]byte(": ping\n\n")); err != nil {
				return
			}
		case err != nil:
			if ctx.Err() == nil {
				s.log.Warn("event stream ended", "request_id", RequestIDFrom(r.Context()), "err", err)
			}
			return
		case keep(ev):
			data, _ := json.Marshal(ev)
			if _, err := w.Write([]byte("id: " + ev.ID() + "\nevent: " + ev.Kind + "\ndata: " + string(data) + "\n\n")); err != nil {
				return
			}
		default:
			continue
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// eventsWS streams the caller's events over a WebSocket, one JSON event
// per text message (the same events and parameters as GET /api/events;
// resume with after=). Messages from the client are ignored.
func (s *Server) eventsWS(w http.ResponseWriter, r *http.Request) {
	c := s.client(w, r)
	if c == nil {
		return
	}
	sub, keep, err := s.subscription(r, c)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		s.writeError(w, r, envelopeError(apierror.Validation, "this endpoint speaks WebSocket: send an Upgrade: websocket request", map[string]any{"field": "Upgrade"}))
		return
	}
	// A hijacked connection keeps the server's deadlines: clear them (each
	// WebSocket write has its own timeout).
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	defer conn.CloseNow()
	ctx, cancel := s.streamContext(r)
	defer cancel()
	ctx = conn.CloseRead(ctx)
	for {
		ev, beat, err := nextOrBeat(ctx, sub)
		switch {
		case beat:
			pctx, pcancel := context.WithTimeout(ctx, heartbeat)
			err := conn.Ping(pctx)
			pcancel()
			if err != nil {
				return
			}
		case err != nil:
			if s.streams.Err() != nil {
				conn.Close(websocket.StatusGoingAway, "server shutting down")
			}
			return
		case keep(ev):
			data, _ := json.Marshal(ev)
			wctx, wcancel := context.WithTimeout(ctx, heartbeat)
			err := conn.Write(wctx, websocket.MessageText, data)
			wcancel()
			if err != nil {
				return
			}
		}
	}
}
