// Mcp-tools shows how to serve Postgram's MCP tools together with a tool
// of your own. transport/mcp.NewServer returns an mcp-go server with the
// built-in tools (store, search, recall, tasks, …); srv.AddTool puts a new
// tool beside them. Its handler finds the caller's client with
// mcp.ClientFrom, so it acts with the rights of the API key that called
// it, and reports failures with mcp.ErrorResult in the same error envelope
// as the built-in tools.
//
// The added tool, tag_counts, answers how many entities the caller can see
// carry each of the given tags. The example serves the MCP endpoint on a
// loopback port, connects as two API keys with an MCP client (one that may
// write, one read-only), calls the built-in tools and the added one, and
// prints what they answer. It runs on the embedded SQLite store in a
// temporary directory with the offline hashing embedder, so it needs no
// service and no network:
//
//	go run ./examples/mcp-tools
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/hashing"
	"github.com/postgram-go/postgram/storage/sqlite"
	pmcp "github.com/postgram-go/postgram/transport/mcp"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// addTagCounts registers the tool of our own on srv.
func addTagCounts(srv *server.MCPServer) {
	tool := mcpgo.NewTool("tag_counts",
		mcpgo.WithDescription("Count the entities you can see that carry each tag."),
		mcpgo.WithArray("tags", mcpgo.Required(), mcpgo.WithStringItems(),
			mcpgo.Description("Tags to count, e.g. [\"decision\", \"incident\"].")),
	)
	srv.AddTool(tool, func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		c, ok := pmcp.ClientFrom(ctx)
		if !ok {
			return pmcp.ErrorResult(fmt.Errorf("tag_counts: %w", postgram.ErrUnauthorized)), nil
		}
		tags, err := req.RequireStringSlice("tags")
		if err != nil || len(tags) == 0 {
			return pmcp.ErrorResult(&postgram.FieldError{Field: "tags", Message: "must be a non-empty array of strings"}), nil
		}
		counts := make(map[string]int, len(tags))
		for _, tag := range tags {
			// List goes through the caller's rights: a key that may not
			// see private entities does not count them.
			page, err := c.List(ctx, postgram.ListOptions{Tags: []string{tag}, Limit: 1})
			if err != nil {
				return pmcp.ErrorResult(err), nil
			}
			counts[tag] = page.Total
		}
		return mcpgo.NewToolResultStructuredOnly(map[string]any{"counts": counts}), nil
	})
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "postgram-mcp-tools-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	store, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(dir, "postgram.db")})
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer store.Close()
	if err := store.Migrate(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	client0, err := postgram.New(ctx, postgram.Config{Store: store, Embedder: hashing.New(256)})
	if err != nil {
		return fmt.Errorf("new client: %w", err)
	}
	admin, err := client0.Admin()
	if err != nil {
		return err
	}

	// Two API keys: a writer that sees everything it stores, and a reader
	// limited to shared entities.
	writerKey, _, err := admin.CreateKey(ctx, postgram.KeySpec{Name: "writer", ClientID: "writer",
		Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
	if err != nil {
		return fmt.Errorf("create writer key: %w", err)
	}
	readerKey, _, err := admin.CreateKey(ctx, postgram.KeySpec{Name: "reader", ClientID: "reader",
		Scopes:              []postgram.Scope{postgram.ScopeRead},
		AllowedVisibilities: []postgram.Visibility{postgram.VisibilityShared}})
	if err != nil {
		return fmt.Errorf("create reader key: %w", err)
	}

	// The MCP server: built-in tools plus ours, served over HTTP with API
	// key authentication (the admin handle maps keys to clients).
	srv := pmcp.NewServer(pmcp.Config{Version: "example"})
	addTagCounts(srv)
	mux := http.NewServeMux()
	mux.Handle("/mcp", pmcp.HTTPHandler(srv, admin, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	endpoint := "http://" + ln.Addr().String() + "/mcp"

	writer, err := connect(ctx, endpoint, writerKey)
	if err != nil {
		return err
	}
	defer writer.Close()
	reader, err := connect(ctx, endpoint, readerKey)
	if err != nil {
		return err
	}
	defer reader.Close()

	tools, err := writer.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	names := make([]string, 0, len(tools.Tools))
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	fmt.Fprintf(out, "tools: %d (tag_counts among them: %v)\n", len(names), slices.Contains(names, "tag_counts"))

	for _, e := range []map[string]any{
		{"type": "memory", "content": "Decision: releases are cut every second Tuesday.", "tags": []string{"decision"}, "visibility": "shared"},
		{"type": "memory", "content": "Decision: the billing rewrite waits for Q3.", "tags": []string{"decision"}, "visibility": "personal"},
		{"type": "memory", "content": "Incident: the search index lagged for an hour.", "tags": []string{"incident"}, "visibility": "shared"},
	} {
		if _, err := callTool(ctx, writer, "store", e); err != nil {
			return err
		}
	}

	for _, who := range []struct {
		name string
		c    *client.Client
	}{{"writer", writer}, {"reader", reader}} {
		res, err := callTool(ctx, who.c, "tag_counts", map[string]any{"tags": []string{"decision", "incident"}})
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "tag_counts as %s: %s\n", who.name, res)
	}

	// The tool reports bad input in the built-in tools' envelope, naming
	// the field.
	res, err := callTool(ctx, writer, "tag_counts", map[string]any{"tags": "decision"})
	if err == nil {
		return fmt.Errorf("tag_counts with a string: want an error, got %s", res)
	}
	fmt.Fprintf(out, "tag_counts with a string: %v\n", err)

	// The built-in tools answer the reader within its rights too.
	res, err = callTool(ctx, reader, "store", map[string]any{"type": "memory", "content": "not allowed"})
	fmt.Fprintf(out, "store as reader: %v\n", err)
	if err == nil {
		return fmt.Errorf("store as reader: want an error, got %s", res)
	}
	return nil
}

// connect starts an MCP client over Streamable HTTP with the key as bearer
// token.
func connect(ctx context.Context, endpoint, key string) (*client.Client, error) {
	tr, err := transport.NewStreamableHTTP(endpoint,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + key}))
	if err != nil {
		return nil, err
	}
	c := client.NewClient(tr)
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("start mcp client: %w", err)
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcpgo.LATEST_PROTOCOL_VERSION
	req.Params.ClientInfo = mcpgo.Implementation{Name: "mcp-tools-example", Version: "1"}
	if _, err := c.Initialize(ctx, req); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

// callTool calls a tool and returns its text; a tool error (isError)
// becomes a Go error carrying the envelope.
func callTool(ctx context.Context, c *client.Client, name string, args map[string]any) (string, error) {
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", fmt.Errorf("call %s: %w", name, err)
	}
	var text strings.Builder
	for _, content := range res.Content {
		text.WriteString(mcpgo.GetTextFromContent(content))
	}
	if res.IsError {
		return "", errors.New(text.String())
	}
	return text.String(), nil
}
