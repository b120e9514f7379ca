// Package postgram is a knowledge and memory store for people and AI
// agents: typed entities (memory, person, project, task, interaction,
// document) with tags, visibility, status, JSON metadata and optimistic
// versions; hybrid keyword + vector search; asynchronous embedding; a
// knowledge graph with LLM relation extraction and semantic neighbours;
// session context and durable memory with grooming; GTD tasks; Markdown
// folder sync.
//
// # Two handles
//
// New returns a *Client bound to one workspace of a Storage backend
// (storage/sqlite, the embedded default, or storage/postgres) and
// optionally an Embedder (providers/openai, providers/ollama, or the
// offline providers/hashing). Its methods are the agent API: Store,
// Search, Recall, List, Update, Delete, tasks, Link and Expand, session
// context and its grooming, Markdown sync (Client.Sync).
//
// Client.Admin returns the *Admin of an unscoped client: the operator API
// (API keys, the audit log, embedding models and re-embedding,
// re-extraction, graph maintenance, durable grooming, purge, statistics,
// health). Admin.As and Admin.Authenticate hand out clients that act for a
// principal (an API key's scopes, types, visibilities and client id); such
// a client checks every call against its principal and cannot get an
// Admin.
//
// # Rules
//
// The package imports no backend, provider or transport and reads no
// environment: the caller chooses. All policy lives here (validation,
// access control, chunking, ranking and fusion, retries); backends only
// persist and retrieve candidates, and the REST, MCP and CLI adapters
// (transport/rest, transport/mcp, cmd/pgm) only translate. Errors wrap a
// small set of sentinels (ErrNotFound, ErrConflict, ErrInvalidArgument,
// ErrForbidden, ...) and FieldOf names the offending field. Background
// work (embedding, extraction, pruning) runs only between Client.Start and
// Client.Stop.
package postgram
