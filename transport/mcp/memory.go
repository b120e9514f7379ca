package mcp

import (
	"context"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/wire"
)

// groomCompact is the compact answer of groom_session_context.
type groomCompact struct {
	Mode     postgram.GroomMode `json:"mode"`
	Eligible int                `json:"eligible"`
	Archived int                `json:"archived"`
	Failed   int                `json:"failed,omitempty"`
	Items    []groomRow         `json:"items"`
}

type groomRow struct {
	ID      string `json:"id"`
	Topic   string `json:"topic,omitempty"`
	Session string `json:"session_id,omitempty"`
	Action  string `json:"action"`
	Preview string `json:"preview"`
}

func memoryTools() []toolSpec {
	return []toolSpec{
		{
			Name:  "store_session_context",
			Title: "Store session context",
			Description: "Save working context of the current conversation so you (and only you: it is scoped to your client) can " +
				"resume it later: where you were, open questions, next steps. Use store with type memory for facts future " +
				"agents should trust (durable memory). Session context is embedded for recall but never graph-extracted, and " +
				"is groomed away or promoted to durable memory later. Returns {entity:{id, type, version, status, visibility, enrichment_status}}.",
			Params: []param{
				{Name: "content", Kind: kindString, Required: true, Description: "The context, self-contained: what you were doing, decided so far, what is next."},
				{Name: "session_id", Kind: kindString, Description: "Your conversation or session identifier, to group and groom contexts together."},
				{Name: "agent_id", Kind: kindString, Description: "Which agent wrote it."},
				{Name: "topic", Kind: kindString, Description: "Short topic, e.g. the project name."},
				tagsParam, visibilityParam, ownerParam,
				{Name: "promotable", Kind: kindBoolean, Description: "false: grooming may archive it but never promote it to durable memory (default true)."},
				{Name: "groom_after", Kind: kindString, Description: "Keep grooming away until then: an age from now (4h, 7d) or an RFC 3339 time."},
				{Name: "expires_at", Kind: kindString, Description: "When it stops being useful: an age from now or an RFC 3339 time."},
				metadataParam(false),
			},
			Handler: storeSessionContextTool,
		},
		{
			Name:  "groom_session_context",
			Title: "Groom your session context",
			Description: "Review or archive your own stale session context (only your client's; promotion to durable memory is " +
				"an operator's act). mode dry_run (default) lists what is eligible; archive archives it. Selects context not " +
				"updated for older_than (default 7d; 30m, 4h, 7d, 0d) matching topic, session_id and every tag, oldest first. " +
				"Returns {mode, eligible, archived, failed?, items:[{id, topic?, session_id?, action, preview}]}.",
			Params: []param{
				{Name: "mode", Kind: kindString, Enum: []string{string(postgram.GroomDryRun), string(postgram.GroomArchive)},
					Description: "dry_run (default: change nothing) or archive."},
				{Name: "older_than", Kind: kindString, Description: "Only context not updated for this long: 30m, 4h, 7d, 0d (default 7d)."},
				{Name: "topic", Kind: kindString, Description: "Only context with this topic."},
				{Name: "session_id", Kind: kindString, Description: "Only context of this session."},
				{Name: "tags", Kind: kindStrings, Description: "Only context carrying every one of these tags."},
				{Name: "limit", Kind: kindInteger, Min: ptr(1), Description: "At most this many (default: no cap)."},
			},
			Destructive: true,
			Handler:     groomSessionContextTool,
		},
	}
}

func storeSessionContextTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	var in postgram.SessionContextInput
	in.Content, _ = a.str("content")
	in.SessionID, _ = a.str("session_id")
	in.AgentID, _ = a.str("agent_id")
	in.Topic, _ = a.str("topic")
	in.Tags, _ = a.strings("tags")
	if v, ok := a.str("visibility"); ok {
		in.Visibility = postgram.Visibility(v)
	}
	in.Owner, _ = a.str("owner")
	if a.has("promotable") {
		v := a.bool("promotable")
		in.Promotable = &v
	}
	in.GroomAfter, _ = a.str("groom_after")
	in.ExpiresAt, _ = a.str("expires_at")
	in.Metadata, _ = a.object("metadata")
	e, err := c.StoreSessionContext(ctx, in)
	if err != nil {
		return reply{}, err
	}
	return reply{Compact: ackOf(e), Full: wire.EntityResponse{Entity: e}}, nil
}

func groomSessionContextTool(ctx context.Context, c *postgram.Client, a args) (reply, error) {
	var req postgram.GroomRequest
	if v, ok := a.str("mode"); ok {
		req.Mode = postgram.GroomMode(v)
		if req.Mode != postgram.GroomDryRun && req.Mode != postgram.GroomArchive {
			return reply{}, &postgram.FieldError{Field: "mode", Message: "must be dry_run or archive (promotion is an operator's act)"}
		}
	}
	req.OlderThan, _ = a.str("older_than")
	req.Topic, _ = a.str("topic")
	req.SessionID, _ = a.str("session_id")
	req.Tags, _ = a.strings("tags")
	if v, ok := a.int("limit"); ok {
		req.Limit = clampInt(v)
	}
	res, err := c.GroomSessionContext(ctx, req)
	if err != nil {
		return reply{}, err
	}
	out := groomCompact{Mode: res.Mode, Eligible: res.Eligible, Archived: res.Archived, Failed: res.Failed, Items: make([]groomRow, 0, len(res.Items))}
	for _, it := range res.Items {
		out.Items = append(out.Items, groomRow{ID: it.ID.String(), Topic: it.Topic, Session: it.SessionID, Action: it.Action, Preview: preview(it.Preview)})
	}
	return reply{Compact: out, Full: wire.NewGroomResponse(res)}, nil
}
