package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"

	"github.com/postgram-go/postgram/wire"
)

// Ingest queues the ingestion of a URL or text (POST /api/ingest, JSON).
func (c *Client) Ingest(ctx context.Context, in wire.IngestRequest) (*wire.JobResponse, []byte, error) {
	var out wire.JobResponse
	raw, err := c.do(ctx, http.MethodPost, "/api/ingest", nil, in, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// IngestFile uploads a file (POST /api/ingest, multipart/form-data) by
// streaming r: the fields of in, then the file. The client's timeout does
// not apply (an upload takes as long as it takes); ctx cancels it.
func (c *Client) IngestFile(ctx context.Context, in wire.IngestRequest, filename string, r io.Reader) (*wire.JobResponse, []byte, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		err := func() error {
			fields := [][2]string{{"type", in.Type}, {"visibility", in.Visibility}, {"owner", in.Owner},
				{"content_type", in.ContentType}, {"tags", strings.Join(in.Tags, ",")}}
			if len(in.Metadata) > 0 {
				b, err := json.Marshal(in.Metadata)
				if err != nil {
					return err
				}
				fields = append(fields, [2]string{"metadata", string(b)})
			}
			for _, f := range fields {
				if f[1] == "" {
					continue
				}
				if err := mw.WriteField(f[0], f[1]); err != nil {
					return err
				}
			}
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="file"; filename=%q`, filename))
			h.Set("Content-Type", "application/octet-stream")
			fw, err := mw.CreatePart(h)
			if err != nil {
				return err
			}
			if _, err := io.Copy(fw, r); err != nil {
				return err
			}
			return mw.Close()
		}()
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+"/api/ingest", pr)
	if err != nil {
		pr.Close()
		return nil, nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Accept", "application/json")
	c.authorize(req)
	resp, err := c.streaming().Do(req)
	pr.Close()
	if err != nil {
		return nil, nil, c.transportError(ctx, c.streaming(), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, nil, c.transportError(ctx, c.streaming(), err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, nil, responseError(resp.StatusCode, raw)
	}
	var out wire.JobResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, nil, &ProtocolError{Status: resp.StatusCode, Err: err}
	}
	return &out, raw, nil
}

func (c *Client) authorize(req *http.Request) {
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	if c.UserAgent != "" {
		req.Header.Set("User-Agent", c.UserAgent)
	}
}

// streaming is the HTTP client without its overall timeout, for uploads
// and event streams.
func (c *Client) streaming() *http.Client {
	hc := http.DefaultClient
	if c.HTTP != nil {
		hc = c.HTTP
	}
	s := *hc
	s.Timeout = 0
	return &s
}

// JobQuery holds GET /api/jobs's parameters.
type JobQuery struct {
	Statuses []string
	Limit    int
	Before   string
}

// Jobs lists jobs (GET /api/jobs).
func (c *Client) Jobs(ctx context.Context, q JobQuery) (*wire.JobList, []byte, error) {
	v := url.Values{}
	if len(q.Statuses) > 0 {
		v.Set("status", strings.Join(q.Statuses, ","))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Before != "" {
		v.Set("before", q.Before)
	}
	var out wire.JobList
	raw, err := c.do(ctx, http.MethodGet, "/api/jobs", v, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// Job reads one job (GET /api/jobs/{id}); action "retry" or "cancel"
// posts that action instead.
func (c *Client) Job(ctx context.Context, id, action string) (*wire.JobResponse, []byte, error) {
	method, path := http.MethodGet, "/api/jobs/"+url.PathEscape(id)
	if action != "" {
		method, path = http.MethodPost, path+"/"+action
	}
	var out wire.JobResponse
	raw, err := c.do(ctx, method, path, nil, nil, &out)
	if err != nil {
		return nil, nil, err
	}
	return &out, raw, nil
}

// EventStream reads GET /api/events.
type EventStream struct {
	body io.ReadCloser
	sc   *bufio.Scanner
}

// Events opens the event stream after seq after (-1: from now), keeping
// kinds (comma-separated prefixes; empty: all).
func (c *Client) Events(ctx context.Context, after int64, kinds string) (*EventStream, error) {
	v := url.Values{}
	if after >= 0 {
		v.Set("after", strconv.FormatInt(after, 10))
	}
	if kinds != "" {
		v.Set("kinds", kinds)
	}
	u := strings.TrimRight(c.BaseURL, "/") + "/api/events"
	if len(v) > 0 {
		u += "?" + v.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream")
	c.authorize(req)
	resp, err := c.streaming().Do(req)
	if err != nil {
		return nil, c.transportError(ctx, c.streaming(), err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, responseError(resp.StatusCode, raw)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	return &EventStream{body: resp.Body, sc: sc}, nil
}

// Next returns the next event; io.EOF when the server ended the stream.
func (s *EventStream) Next() (wire.Event, error) {
	for s.sc.Scan() {
		line := s.sc.Text()
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var ev wire.Event
			if err := json.Unmarshal([]byte(data), &ev); err != nil {
				return wire.Event{}, &ProtocolError{Status: http.StatusOK, Err: err}
			}
			return ev, nil
		}
	}
	if err := s.sc.Err(); err != nil {
		return wire.Event{}, err
	}
	return wire.Event{}, io.EOF
}

// Close ends the stream.
func (s *EventStream) Close() error { return s.body.Close() }
