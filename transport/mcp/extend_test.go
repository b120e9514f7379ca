package mcp_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/postgramtest"
	"github.com/postgram-go/postgram/storage/sqlite"
	pmcp "github.com/postgram-go/postgram/transport/mcp"
)

// whoamiTool is a custom tool: it answers the caller's client id (or
// "operator" for an unscoped client) and, with remember set, stores a
// memory as the caller.
func addWhoami(srv *server.MCPServer) {
	tool := mcpgo.NewTool("whoami", mcpgo.WithString("remember"))
	srv.AddTool(tool, func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		c, ok := pmcp.ClientFrom(ctx)
		if !ok {
			return pmcp.ErrorResult(fmt.Errorf("whoami: %w", postgram.ErrUnauthorized)), nil
		}
		if text := req.GetString("remember", ""); text != "" {
			if _, err := c.Store(ctx, postgram.StoreInput{Type: postgram.TypeMemory, Content: text}); err != nil {
				return pmcp.ErrorResult(err), nil
			}
		}
		who := "operator"
		if p := c.Principal(); p != nil {
			who = p.ClientID
		}
		return mcpgo.NewToolResultJSON(map[string]any{"client_id": who})
	})
}

func TestCustomToolOverHTTPActsAsTheKey(t *testing.T) {
	t.Parallel()
	e := newEnvOn(t, "sqlite", nil)
	addWhoami(e.srv)
	reader := e.key(t, postgram.KeySpec{Name: "reader", ClientID: "agent-7"})
	c := connect(t, e.ts.URL, bearer(reader))

	if got := ok(t, c, "whoami", nil)["client_id"]; got != "agent-7" {
		t.Errorf("client_id = %v, want agent-7", got)
	}
	// The key is read-only: the library refuses the write and ErrorResult
	// answers with the built-in tools' envelope.
	fail(t, c, "whoami", map[string]any{"remember": "x"}, "FORBIDDEN")
	// Built-in tools still work beside it.
	ok(t, c, "search", map[string]any{"query": "anything"})
}

func TestCustomToolInProcess(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "postgram.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	if err := store.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	admin, err := postgram.New(ctx, postgram.Config{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	inProcess := func(cfg pmcp.Config) *client.Client {
		srv := pmcp.NewServer(cfg)
		addWhoami(srv)
		c, err := client.NewInProcessClient(srv)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{}); err != nil {
			t.Fatal(err)
		}
		return c
	}

	// Without an authenticated client in ctx, the tool acts as Config.Client.
	c := inProcess(pmcp.Config{Client: admin})
	if got := ok(t, c, "whoami", map[string]any{"remember": "kept by the operator"})["client_id"]; got != "operator" {
		t.Errorf("fallback: client_id = %v, want operator", got)
	}

	// A client put in the caller's ctx with WithClient wins (in-process
	// calls carry the caller's context).
	scoped := postgramtest.Admin(t, admin).As(postgram.Principal{ClientID: "agent-9", Scopes: []postgram.Scope{postgram.ScopeRead}})
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "whoami"
	res, err := c.CallTool(pmcp.WithClient(ctx, scoped), req)
	if err != nil {
		t.Fatal(err)
	}
	if got := mcpgo.GetTextFromContent(res.Content[0]); res.IsError || got != `{"client_id":"agent-9"}` {
		t.Errorf("WithClient: result %q (isError %v), want agent-9", got, res.IsError)
	}

	// A server without Config.Client has nobody to act as.
	none := inProcess(pmcp.Config{})
	fail(t, none, "whoami", nil, "UNAUTHORIZED")
}
