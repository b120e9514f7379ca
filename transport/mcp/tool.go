package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/toon"
	"github.com/postgram-go/postgram/transport/apierror"
)

// toolSpec describes one tool: its schema (built from Params), its
// behaviour hints and its handler. Adding a tool means writing a function
// that returns toolSpecs in the file of its area and listing that function
// in areas (server.go).
type toolSpec struct {
	Name        string
	Title       string
	Description string
	Params      []param
	// TOON adds the toon argument: the text content is then TOON instead
	// of JSON (structuredContent stays JSON). For list-like tools.
	TOON bool
	// Behaviour hints for clients.
	ReadOnly    bool
	Destructive bool
	Idempotent  bool
	// Handler runs the tool for client c with coerced arguments.
	Handler func(ctx context.Context, c *postgram.Client, a args) (reply, error)
}

// reply is a handler's answer in both shapes: Compact is rendered by
// default, Full (the REST shape) with full_response: true. A nil Full
// means the compact shape is already the REST shape.
type reply struct {
	Compact any
	Full    any
}

// Arguments every tool accepts.
const (
	argFullResponse = "full_response"
	argTOON         = "toon"
)

func fullResponseParam() param {
	return param{Name: argFullResponse, Kind: kindBoolean, Description: "Return the full REST-shaped payload (complete entities with " +
		"content, timestamps, metadata, raw scores) instead of the compact default. Costs many more tokens; " +
		"leave it off unless you need a field the compact answer lacks."}
}

func toonParam() param {
	return param{Name: argTOON, Kind: kindBoolean, Description: "Return the text content as TOON (a compact, " +
		"table-like text form of the same JSON) to save tokens. structuredContent still carries the JSON."}
}

// params returns the tool's declared arguments, including the common ones.
func (t toolSpec) params() []param {
	ps := append([]param(nil), t.Params...)
	ps = append(ps, fullResponseParam())
	if t.TOON {
		ps = append(ps, toonParam())
	}
	return ps
}

// tool builds the mcp.Tool (name, description, input schema, hints).
func (t toolSpec) tool() mcp.Tool {
	opts := []mcp.ToolOption{
		mcp.WithDescription(t.Description),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{
			Title:           t.Title,
			ReadOnlyHint:    mcp.ToBoolPtr(t.ReadOnly),
			DestructiveHint: mcp.ToBoolPtr(t.Destructive),
			IdempotentHint:  mcp.ToBoolPtr(t.Idempotent),
			OpenWorldHint:   mcp.ToBoolPtr(false),
		}),
		mcp.WithSchemaAdditionalProperties(false),
	}
	if t.Title != "" {
		opts = append(opts, mcp.WithToolTitle(t.Title))
	}
	ps := t.params()
	order := make([]string, len(ps))
	for i, p := range ps {
		order[i] = p.Name
		opts = append(opts, schemaOption(p))
	}
	tool := mcp.NewTool(t.Name, opts...)
	tool.InputSchema.PropertyOrder = order
	return tool
}

// schemaOption declares p in a tool's input schema.
func schemaOption(p param) mcp.ToolOption {
	po := []mcp.PropertyOption{mcp.Description(p.Description)}
	if p.Required {
		po = append(po, mcp.Required())
	}
	if p.Min != nil {
		po = append(po, mcp.Min(*p.Min))
	}
	if p.Max != nil {
		po = append(po, mcp.Max(*p.Max))
	}
	switch p.Kind {
	case kindInteger:
		return mcp.WithInteger(p.Name, po...)
	case kindNumber:
		return mcp.WithNumber(p.Name, po...)
	case kindBoolean:
		return mcp.WithBoolean(p.Name, po...)
	case kindStrings:
		if len(p.Enum) > 0 {
			po = append(po, mcp.WithStringEnumItems(p.Enum))
		} else {
			po = append(po, mcp.WithStringItems())
		}
		return mcp.WithArray(p.Name, po...)
	case kindObject:
		po = append(po, mcp.AdditionalProperties(true))
		return mcp.WithObject(p.Name, po...)
	case kindObjects:
		items := p.Items
		if items == nil {
			items = map[string]any{"type": "object"}
		}
		po = append(po, mcp.Items(items))
		return mcp.WithArray(p.Name, po...)
	default:
		if len(p.Enum) > 0 {
			po = append(po, mcp.Enum(p.Enum...))
		}
		return mcp.WithString(p.Name, po...)
	}
}

// runner wraps tool handlers with what every tool shares: resolving the
// caller's client, coercing arguments, rendering results and mapping
// errors to the envelope.
type runner struct {
	fallback  *postgram.Client // Config.Client: the stdio (local, unauthenticated) case
	log       *slog.Logger
	maxResult int64
}

// handler returns the mcp-go handler of t. Its log lines carry the tool
// and, for an authenticated call, the API key's id (never arguments).
func (r *runner) handler(t toolSpec) server.ToolHandlerFunc {
	params := t.params()
	return func(ctx context.Context, req mcp.CallToolRequest) (res *mcp.CallToolResult, _ error) {
		start := time.Now()
		keyID := ""
		defer func() {
			if p := recover(); p != nil {
				r.log.ErrorContext(ctx, "mcp: tool panicked", "tool", t.Name, "key_id", keyID, "panic", p, "stack", string(debug.Stack()))
				res = r.failure(ctx, t.Name, keyID, fmt.Errorf("tool %s panicked: %v", t.Name, p))
			}
		}()
		c, err := r.client(ctx, req)
		if err != nil {
			return r.failure(ctx, t.Name, keyID, err), nil
		}
		if p := c.Principal(); p != nil {
			keyID = p.KeyID
		}
		raw, err := rawArguments(req)
		if err != nil {
			return r.failure(ctx, t.Name, keyID, err), nil
		}
		a, err := coerce(params, raw)
		if err != nil {
			return r.failure(ctx, t.Name, keyID, err), nil
		}
		rep, err := t.Handler(ctx, c, a)
		if err != nil {
			return r.failure(ctx, t.Name, keyID, err), nil
		}
		v := rep.Compact
		if a.bool(argFullResponse) && rep.Full != nil {
			v = rep.Full
		}
		res, err = render(v, t.TOON && a.bool(argTOON), r.maxResult)
		if err != nil {
			return r.failure(ctx, t.Name, keyID, err), nil
		}
		r.log.DebugContext(ctx, "mcp: tool call", "tool", t.Name, "key_id", keyID, "duration", time.Since(start))
		return res, nil
	}
}

// client returns the client the call acts as: the authenticated one the
// HTTP handler put in the context, else the configured fallback (stdio and
// in-process calls, which carry no HTTP headers). A call that came over
// HTTP (mcp-go passes its headers; an HTTP request always has some)
// without an authenticated client is refused, so mounting the server
// without HTTPHandler fails closed instead of granting Config.Client.
func (r *runner) client(ctx context.Context, req mcp.CallToolRequest) (*postgram.Client, error) {
	if c, ok := clientFrom(ctx); ok {
		return c, nil
	}
	if len(req.Header) > 0 || r.fallback == nil {
		return nil, fmt.Errorf("no authenticated client for this call: %w", postgram.ErrUnauthorized)
	}
	return r.fallback, nil
}

// rawArguments returns the call's arguments as a generic JSON object.
func rawArguments(req mcp.CallToolRequest) (map[string]any, error) {
	if len(req.Params.RawArguments) > 0 {
		return decodeArguments(req.Params.RawArguments)
	}
	switch a := req.Params.Arguments.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return a, nil
	case json.RawMessage:
		return decodeArguments(a)
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return nil, &postgram.FieldError{Field: "arguments", Message: "must be a JSON object of named arguments"}
		}
		return decodeArguments(b)
	}
}

// render builds a successful result: the value as JSON in both the text
// content and structuredContent, or as TOON text when asTOON. A result
// over maxBytes is a VALIDATION error telling the caller to ask for less.
func render(v any, asTOON bool, maxBytes int64) (*mcp.CallToolResult, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("render result: %w", err)
	}
	if int64(len(js)) > maxBytes {
		return nil, &apierror.ResponseError{Status: 400, Body: apierror.Body{Code: apierror.Validation,
			Message: fmt.Sprintf("the result would be %d bytes, more than the %d a response may carry: ask for fewer items (limit, max_nodes) and page",
				len(js), maxBytes), Details: map[string]any{"max_result_bytes": maxBytes}}}
	}
	text := js
	if asTOON {
		if text, err = toon.Marshal(v); err != nil {
			return nil, fmt.Errorf("render TOON: %w", err)
		}
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(text))},
		StructuredContent: json.RawMessage(js),
	}, nil
}

// failure renders err as a tool error carrying the error envelope, in the
// text content and as structuredContent. Internal faults are logged and
// reported without their details.
func (r *runner) failure(ctx context.Context, tool, keyID string, err error) *mcp.CallToolResult {
	env := apierror.From(err)
	switch {
	case env.Error.Code == apierror.Internal:
		r.log.ErrorContext(ctx, "mcp: tool failed", "tool", tool, "key_id", keyID, "err", err)
	case errors.Is(err, postgram.ErrUnavailable), errors.Is(err, postgram.ErrEmbeddingFailed):
		r.log.WarnContext(ctx, "mcp: tool failed", "tool", tool, "key_id", keyID, "code", env.Error.Code, "err", err)
	default:
		r.log.DebugContext(ctx, "mcp: tool refused", "tool", tool, "key_id", keyID, "code", env.Error.Code, "err", err)
	}
	js := env.JSON()
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{mcp.NewTextContent(string(js))},
		StructuredContent: json.RawMessage(js),
	}
}
