package mcp

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/mark3labs/mcp-go/server"
)

// ServeStdio serves srv as newline-delimited JSON-RPC, reading requests
// from in and writing responses to out, until in reaches EOF (it returns
// nil) or ctx ends (nil too: a requested shutdown is not an error).
//
// Stdio has no authentication: tools act as Config.Client, so whoever can
// start the process and write to in has that client's access. It is meant
// for a local desktop agent host (postgram-mcp on stdin/stdout).
//
// mcp-go keeps a single stdio session per process, so run at most one
// ServeStdio at a time. Transport errors are logged through slog.Default.
func ServeStdio(ctx context.Context, srv *server.MCPServer, in io.Reader, out io.Writer) error {
	s := server.NewStdioServer(srv)
	s.SetErrorLogger(slog.NewLogLogger(slog.Default().Handler(), slog.LevelError))
	err := s.Listen(ctx, in, out)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}
