// Agent-memory shows how an agent keeps two kinds of memory in Postgram:
// durable memory (facts and decisions every agent may trust) and session
// context (working notes of one conversation, visible only to the agent
// that wrote them), how search finds both, and how stale session context
// is groomed: a dry run lists what is eligible, then an archive run
// archives it so it no longer shows up in search.
//
// It runs on the embedded SQLite store in a temporary directory with the
// offline hashing embedder, so it needs no service and no network:
//
//	go run ./examples/agent-memory
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/hashing"
	"github.com/postgram-go/postgram/storage/sqlite"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "postgram-agent-memory-")
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
	client, err := postgram.New(ctx, postgram.Config{Store: store, Embedder: hashing.New(256)})
	if err != nil {
		return fmt.Errorf("new client: %w", err)
	}
	admin, err := client.Admin()
	if err != nil {
		return err
	}

	// Two agents, each acting as its own principal (in a server, each would
	// hold an API key with this client id; admin.Authenticate maps the key).
	scopes := []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}
	planner := admin.As(postgram.Principal{ClientID: "planner", Scopes: scopes})
	reviewer := admin.As(postgram.Principal{ClientID: "reviewer", Scopes: scopes})

	// Durable memory: a plain memory (memory_role durable_memory by default).
	durable, err := planner.Store(ctx, postgram.StoreInput{
		Type:    postgram.TypeMemory,
		Content: "Decision: the release branch is cut every second Tuesday.",
		Tags:    []string{"decision", "release"},
	})
	if err != nil {
		return fmt.Errorf("store durable memory: %w", err)
	}
	fmt.Fprintf(out, "stored durable memory  (%s)\n", durable.MemoryRole())

	// Session context: working notes of the current conversation.
	session, err := planner.StoreSessionContext(ctx, postgram.SessionContextInput{
		Content:   "Working on the release checklist; the user wants the changelog drafted before Tuesday.",
		SessionID: "chat-42",
		Topic:     "release",
	})
	if err != nil {
		return fmt.Errorf("store session context: %w", err)
	}
	fmt.Fprintf(out, "stored session context (%s, session %v)\n", session.MemoryRole(), session.Metadata["session_id"])

	// Embed now (a server runs client.Start(ctx) instead).
	if _, err := admin.EnrichPending(ctx); err != nil {
		return fmt.Errorf("embed: %w", err)
	}

	search := func(who string, c *postgram.Client, query string) error {
		res, err := c.Search(ctx, postgram.SearchRequest{Query: query, Types: []postgram.EntityType{postgram.TypeMemory}})
		if err != nil {
			return fmt.Errorf("search as %s: %w", who, err)
		}
		fmt.Fprintf(out, "search %q as %s: %d result(s)\n", query, who, len(res.Results))
		for _, r := range res.Results {
			fmt.Fprintf(out, "  - [%s] %s\n", r.Entity.MemoryRole(), r.Entity.Content)
		}
		return nil
	}
	fmt.Fprintln(out)
	// The planner sees its session context and the durable memory; the
	// reviewer sees only the durable memory.
	if err := search("planner", planner, "release Tuesday"); err != nil {
		return err
	}
	if err := search("reviewer", reviewer, "release Tuesday"); err != nil {
		return err
	}

	// Grooming: first a dry run (writes nothing), then archive. OlderThan
	// 0d makes the context eligible at once; the default is 7d.
	fmt.Fprintln(out)
	for _, mode := range []postgram.GroomMode{postgram.GroomDryRun, postgram.GroomArchive} {
		res, err := planner.GroomSessionContext(ctx, postgram.GroomRequest{Mode: mode, OlderThan: "0d"})
		if err != nil {
			return fmt.Errorf("groom (%s): %w", mode, err)
		}
		fmt.Fprintf(out, "groom %s: eligible=%d archived=%d\n", mode, res.Eligible, res.Archived)
		for _, it := range res.Items {
			fmt.Fprintf(out, "  - %s: %s\n", it.Action, it.Preview)
		}
	}

	// Archived entities are hidden from search: only durable memory is left.
	fmt.Fprintln(out)
	return search("planner", planner, "release Tuesday")
}
