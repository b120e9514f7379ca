// Package mcp serves Postgram as Model Context Protocol tools
// (github.com/mark3labs/mcp-go): store, recall, search, update, delete,
// queue, tasks, session context, graph links and Markdown folder sync. It is a thin adapter over *postgram.Client: validation, access
// control and ranking stay in the library, so MCP, REST and the CLI give
// the same answer to the same request.
//
// Results are token-lean by default (compact rows and write
// acknowledgements, DESIGN.md §8); full_response: true returns the REST
// shape, and toon: true on search returns TOON text. Every result carries
// its JSON twice: as text content and as structuredContent. Failures are
// tool errors (isError: true) whose text and structuredContent are the
// error envelope {"error":{"code","message","details"}} of
// transport/apierror. Tool arguments given as strings ("5", "true",
// "[\"a\"]", "a,b", "{\"k\":1}") are coerced to their declared types;
// unknown arguments are a VALIDATION error naming them.
//
// Two transports:
//
//   - HTTPHandler serves Streamable HTTP (mounted at /mcp by
//     postgram-server). Every request must carry an API key, as
//     "Authorization: Bearer <key>" or "?apiKey=<key>"; tools then act as
//     that key's principal, with its scopes, types and visibilities. The
//     handler is stateless (no session state on the server), so any number
//     of replicas can sit behind a load balancer without sticky sessions.
//   - ServeStdio serves newline-delimited JSON-RPC on a reader and writer
//     (postgram-mcp uses stdin and stdout) for a local desktop agent host.
//     Stdio has NO authentication: tools act as Config.Client, normally a
//     full-access client, so anyone who can start the process has the whole
//     workspace. Use it only for a host you trust on your own machine.
package mcp

import (
	"context"
	"log/slog"

	"github.com/mark3labs/mcp-go/server"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/ingest"
)

// Config configures NewServer.
type Config struct {
	// Client serves calls that carry no authenticated client: the stdio
	// case. Over HTTP, HTTPHandler authenticates every request and the
	// tools act as the key's client; a call that reaches the server over
	// HTTP without one is refused. May be nil for HTTP-only servers.
	Client *postgram.Client
	// Version is reported to MCP clients in serverInfo. Default "dev".
	Version string
	// Logger receives tool failures (internal ones at Error) and, at
	// Debug, every call. Default: discard.
	Logger *slog.Logger
	// MaxResultBytes bounds a tool result's JSON: a larger one is a
	// VALIDATION tool error telling the caller to ask for less (a smaller
	// limit, max_nodes or page). Default DefaultMaxResultBytes.
	MaxResultBytes int64
	// Ingest, when set, adds the tools ingest and ingest_status.
	Ingest *ingest.Service
	// IngestFor, when set, adds them too and finds the ingestion service
	// of the caller's workspace (a server of many workspaces,
	// workspaces.Directory); it takes precedence over Ingest. A nil
	// service answers that ingestion is off.
	IngestFor func(ctx context.Context, c *postgram.Client) (*ingest.Service, error)
}

// DefaultMaxResultBytes is Config.MaxResultBytes's default.
const DefaultMaxResultBytes int64 = 32 << 20

// ServerName is the MCP server name reported to clients.
const ServerName = "postgram"

// areas lists the tool sets; each lives in the file of its area. Later
// work adds a tool set (tasks, memory, sync, graph) in a new file and one
// line here.
var areas = []func() []toolSpec{
	entityTools, // entities.go: store, recall, update, delete
	searchTools, // search.go: search
	queueTools,  // queue.go: queue
	graphTools,  // graph.go: link, unlink, expand
	taskTools,   // tasks.go: task_create, task_list, task_update, task_complete
	memoryTools, // memory.go: store_session_context, groom_session_context
	syncTools,   // sync.go: sync_push, sync_status
}

// instructions is sent to clients at initialization, for the agent's
// system context.
const instructions = `Postgram is a knowledge and memory store of typed entities (memory, person, project, task, interaction, document).
Workflow: search first (discovery: compact rows with id, type, relative score, a content preview and the matched chunk), then recall only the ids whose complete content you need. Before storing, search to avoid duplicates; to change an entity, update it with the version you read.
Scores are relative ordering values (reciprocal-rank fusion, at most about 0.0328), not probabilities.
Memories are durable_memory by default (facts, decisions, preferences future agents should trust); store working context of the current conversation with metadata {"memory_role":"session_context"}.
Errors come back as {"error":{"code","message","details"}}; CONFLICT carries details.current, the entity as stored now.`

// NewServer builds the MCP server with every tool registered.
func NewServer(cfg Config) *server.MCPServer {
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.MaxResultBytes <= 0 {
		cfg.MaxResultBytes = DefaultMaxResultBytes
	}
	r := &runner{fallback: cfg.Client, log: cfg.Logger, maxResult: cfg.MaxResultBytes}
	srv := server.NewMCPServer(ServerName, cfg.Version,
		server.WithToolCapabilities(false),
		server.WithInstructions(instructions),
		server.WithTitle("Postgram"),
		server.WithToolHandlerMiddleware(r.withClient), // ClientFrom for added tools (extend.go)
	)
	for _, area := range areas {
		for _, t := range area() {
			srv.AddTool(t.tool(), r.handler(t))
		}
	}
	if cfg.IngestFor == nil && cfg.Ingest != nil {
		svc := cfg.Ingest
		cfg.IngestFor = func(context.Context, *postgram.Client) (*ingest.Service, error) { return svc, nil }
	}
	if cfg.IngestFor != nil {
		for _, t := range ingestTools(cfg.IngestFor) { // ingest.go
			srv.AddTool(t.tool(), r.handler(t))
		}
	}
	return srv
}
