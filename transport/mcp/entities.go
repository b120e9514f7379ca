package mcp

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

// Wire shapes of entity tools (DESIGN.md §8).

// writeAck is the compact answer to a write: {entity:{id, type, version,
// status, visibility, enrichment_status}}.
type writeAck struct {
	Entity writeAckEntity `json:"entity"`
}

type writeAckEntity struct {
	ID               uuid.UUID            `json:"id"`
	Type             postgram.EntityType  `json:"type"`
	Version          int64                `json:"version"`
	Status           postgram.Status      `json:"status"`
	Visibility       postgram.Visibility  `json:"visibility"`
	EnrichmentStatus postgram.StageStatus `json:"enrichment_status"`
}

func ackOf(e *postgram.Entity) writeAck {
	return writeAck{Entity: writeAckEntity{ID: e.ID, Type: e.Type, Version: e.Version, Status: e.Status,
		Visibility: e.Visibility, EnrichmentStatus: e.EnrichmentStatus}}
}

// entityReply is {entity}. The full shape carries every field of
// postgram.Entity (as REST does); the compact one the entity fields of the
// reference API.
type entityReply[E any] struct {
	Entity E `json:"entity"`
}

// entityView is an entity as the reference API shows it.
type entityView struct {
	ID               uuid.UUID            `json:"id"`
	Type             postgram.EntityType  `json:"type"`
	Content          string               `json:"content"`
	Visibility       postgram.Visibility  `json:"visibility"`
	Owner            string               `json:"owner"`
	Status           postgram.Status      `json:"status"`
	EnrichmentStatus postgram.StageStatus `json:"enrichment_status"`
	Version          int64                `json:"version"`
	Tags             []string             `json:"tags"`
	Source           string               `json:"source"`
	Metadata         map[string]any       `json:"metadata"`
	CreatedAt        time.Time            `json:"created_at"`
	UpdatedAt        time.Time            `json:"updated_at"`
}

func viewOf(e *postgram.Entity) entityView {
	v := entityView{ID: e.ID, Type: e.Type, Content: e.Content, Visibility: e.Visibility, Owner: e.Owner,
		Status: e.Status, EnrichmentStatus: e.EnrichmentStatus, Version: e.Version, Tags: e.Tags,
		Source: e.Source, Metadata: e.Metadata, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	if v.Metadata == nil {
		v.Metadata = map[string]any{}
	}
	return v
}

func strs[T ~string](in []T) []string {
	out := make([]string, len(in))
	for i, v := range in {
		out[i] = string(v)
	}
	return out
}

// Argument declarations shared by the entity tools.
var (
	idParam = param{Name: "id", Kind: kindString, Required: true,
		Description: "The entity's id (a UUID), as returned by search, store or a previous recall."}
	visibilityParam = param{Name: "visibility", Kind: kindString, Enum: strs(postgram.Visibilities),
		Description: "Who may see it: personal, work or shared (default shared). Keys may be limited to some visibilities."}
	ownerParam = param{Name: "owner", Kind: kindString,
		Description: "Free-text owner, e.g. a person's name or handle."}
	statusParam = param{Name: "status", Kind: kindString, Enum: strs(postgram.Statuses),
		Description: "Lifecycle status: active (default), done or archived; tasks use the GTD statuses inbox (task default), next, waiting, scheduled, someday, done."}
	tagsParam = param{Name: "tags", Kind: kindStrings,
		Description: "Short labels for filtering, e.g. [\"postgram\",\"decision\"]. A comma-separated string is accepted too."}
	sourceParam = param{Name: "source", Kind: kindString,
		Description: "Where the content came from: a URL, file path, conversation or tool name."}
)

func metadataParam(update bool) param {
	d := "Arbitrary JSON object. For memories, metadata.memory_role decides the role: \"durable_memory\" " +
		"(the default for type memory) for facts, decisions, preferences, constraints, root causes and " +
		"completed-work summaries future agents should trust; \"session_context\" for working context of the " +
		"current conversation (where were we?), visible only to your client and groomed away or promoted later."
	if update {
		d += " Shallow-merged into the existing metadata: keys you name are replaced, a key set to null is removed, others are kept."
	}
	return param{Name: "metadata", Kind: kindObject, Description: d}
}

func entityTools() []toolSpec {
	return []toolSpec{
		{
			Name:  "store",
			Title: "Store an entity",
			Description: "Save a new entity: a memory, document or note, task, person, project or interaction. " +
				"Search first to avoid storing a duplicate; to change something that exists, use update. " +
				"Memories are durable_memory unless metadata.memory_role says session_context (see metadata). " +
				"Returns {entity:{id, type, version, status, visibility, enrichment_status}}. The entity is " +
				"findable by keyword search at once; enrichment_status pending means its embedding is still being " +
				"computed, so semantic (meaning-based) search finds it a moment later (see queue).",
			Params: []param{
				{Name: "type", Kind: kindString, Required: true, Enum: strs(postgram.EntityTypes),
					Description: "Entity type: memory (agent or user memory), person, project, task, interaction (a meeting, call or conversation) or document (notes, articles, files)."},
				{Name: "content", Kind: kindString, Required: true,
					Description: "The text to keep (up to 1 MiB). Make it self-contained: name the subject, so it is understandable and findable out of context."},
				visibilityParam, ownerParam, statusParam, tagsParam, sourceParam, metadataParam(false),
			},
			Handler: storeTool,
		},
		{
			Name:  "recall",
			Title: "Recall an entity",
			Description: "Fetch one entity's complete content and fields by id. Use it after search, only for the " +
				"results whose full content you actually need: search rows already carry the matched passage, " +
				"which often answers the question. Returns {entity:{id, type, content, visibility, owner, status, " +
				"enrichment_status, version, tags, source, metadata, created_at, updated_at}}; pass its version to update.",
			Params:     []param{idParam},
			ReadOnly:   true,
			Idempotent: true,
			Handler:    recallTool,
		},
		{
			Name:  "update",
			Title: "Update an entity",
			Description: "Change fields of an existing entity. Pass the version you last read (from store, recall or a " +
				"previous update). If the entity changed since, the call fails with code CONFLICT and " +
				"details.current holds the entity as stored now: merge your change into it and retry with its version. " +
				"Omitted fields stay unchanged; tags replaces the whole list; metadata is shallow-merged. " +
				"Changing content re-indexes the entity. Returns {entity:{id, type, version, status, visibility, enrichment_status}}.",
			Params: []param{
				idParam,
				{Name: "version", Kind: kindInteger, Required: true, Min: ptr(1),
					Description: "The entity's version as you read it (optimistic concurrency)."},
				{Name: "content", Kind: kindString, Description: "New content, replacing the old."},
				visibilityParam, ownerParam, statusParam, tagsParam, sourceParam, metadataParam(true),
			},
			Handler: updateTool,
		},
		{
			Name:  "delete",
			Title: "Delete (archive) an entity",
			Description: "Archive an entity: it no longer appears in search or lists (unless include_archived) and can " +
				"be restored by updating its status. It is a soft delete; purging is an administrator's act. Deleting " +
				"an archived entity succeeds again. Returns {id, deleted: true}.",
			Params:      []param{idParam},
			Destructive: true,
			Idempotent:  true,
			Handler:     deleteTool,
		},
	}
}

func ptr(f float64) *float64 { return &f }

func storeTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	in := postgram.StoreInput{}
	t, _ := a.str("type")
	in.Type = postgram.EntityType(t)
	in.Content, _ = a.str("content")
	if v, ok := a.str("visibility"); ok {
		in.Visibility = postgram.Visibility(v)
	}
	in.Owner, _ = a.str("owner")
	if v, ok := a.str("status"); ok {
		in.Status = postgram.Status(v)
	}
	in.Tags, _ = a.strings("tags")
	in.Source, _ = a.str("source")
	in.Metadata, _ = a.object("metadata")
	e, err := c.Store(ctx, in)
	if err != nil {
		return reply{}, err
	}
	return reply{Compact: ackOf(e), Full: wire.EntityResponse{Entity: e}}, nil
}

func recallTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	s, _ := a.str("id")
	id, err := postgram.ParseID("id", s)
	if err != nil {
		return reply{}, err
	}
	e, err := c.Recall(ctx, id)
	if err != nil {
		return reply{}, err
	}
	return reply{Compact: entityReply[entityView]{viewOf(e)}, Full: wire.EntityResponse{Entity: e}}, nil
}

func updateTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	s, _ := a.str("id")
	id, err := postgram.ParseID("id", s)
	if err != nil {
		return reply{}, err
	}
	var in postgram.UpdateInput
	in.Version, _ = a.int("version")
	if v, ok := a.str("content"); ok {
		in.Content = &v
	}
	if v, ok := a.str("visibility"); ok {
		vis := postgram.Visibility(v)
		in.Visibility = &vis
	}
	if v, ok := a.str("owner"); ok {
		in.Owner = &v
	}
	if v, ok := a.str("status"); ok {
		st := postgram.Status(v)
		in.Status = &st
	}
	if v, ok := a.strings("tags"); ok {
		in.Tags = &v
	}
	if v, ok := a.str("source"); ok {
		in.Source = &v
	}
	in.Metadata, _ = a.object("metadata")
	e, err := c.Update(ctx, id, in)
	if err != nil {
		return reply{}, err
	}
	return reply{Compact: ackOf(e), Full: wire.EntityResponse{Entity: e}}, nil
}

func deleteTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	s, _ := a.str("id")
	id, err := postgram.ParseID("id", s)
	if err != nil {
		return reply{}, err
	}
	if _, err := c.Delete(ctx, id); err != nil {
		return reply{}, err
	}
	return reply{Compact: wire.DeleteResponse{ID: id, Deleted: true}}, nil
}
