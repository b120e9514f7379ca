package mcp

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
)

// Tools of your own can sit beside Postgram's on the server NewServer
// returns (srv.AddTool with an mcp-go handler). Their handlers find the
// caller's client with ClientFrom and report failures with ErrorResult, so
// they enforce the same access rules and answer errors in the same
// envelope as the built-in tools.

// ClientFrom returns the client a tool call acts as: over HTTPHandler the
// API key's client, else one a caller put in ctx with WithClient, else
// Config.Client (stdio, an in-process MCP client). ok is false when the
// call has none (an HTTP call that reached the server without
// authentication, or a server without Config.Client): refuse the call then,
// for example with ErrorResult(postgram.ErrUnauthorized).
func ClientFrom(ctx context.Context) (c *postgram.Client, ok bool) {
	return clientFrom(ctx)
}

// ErrorResult renders err as a tool error (isError: true) whose text and
// structuredContent are the error envelope {"error":{"code","message",
// "details"}} of transport/apierror, as the built-in tools answer: an error
// wrapping postgram.ErrForbidden becomes FORBIDDEN, a *postgram.FieldError
// VALIDATION naming the field, an unknown error INTERNAL.
func ErrorResult(err error) *mcp.CallToolResult {
	js := apierror.From(err).JSON()
	return &mcp.CallToolResult{
		IsError:           true,
		Content:           []mcp.Content{mcp.NewTextContent(string(js))},
		StructuredContent: json.RawMessage(js),
	}
}

// withClient is a tool middleware that puts the call's client into the
// context of every tool, built-in or added later, so that ClientFrom sees
// the Config.Client fallback too.
func (r *runner) withClient(next server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, ok := clientFrom(ctx); !ok {
			if c, err := r.client(ctx, req); err == nil {
				ctx = WithClient(ctx, c)
			}
		}
		return next(ctx, req)
	}
}
