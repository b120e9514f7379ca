package storagetest

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/postgram-go/postgram"
)

// Access rules of DESIGN.md §2 that issue 14 found broken: what a key
// cannot see does not exist for it on every read and write path, and the
// write scope can neither hide nor archive.

// testWriteCannotHide: a write-scoped key may not change another client's
// memory_role (turning durable memory into its own session context hid it
// from everyone else) nor archive through status (that is deletion, the
// delete scope); the owning client and an administrator may. Untagged
// entities come back from Update with tags [] (not nil).
func testWriteCannotHide(t *testing.T, open Opener) {
	e := newEnv(t, open)
	owner := e.c.As(postgram.Principal{KeyID: "k-owner", ClientID: "owner", Scopes: postgram.AllScopes})
	writer := e.c.As(postgram.Principal{KeyID: "k-writer", ClientID: "writer",
		Scopes: []postgram.Scope{postgram.ScopeRead, postgram.ScopeWrite}})
	mem := mustStore(t, owner, postgram.StoreInput{Content: "durable fact about otters"})
	sc := postgram.Status("archived")
	role := map[string]any{"memory_role": "session_context"}

	if _, err := writer.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: mem.Version, Metadata: role}); !errors.Is(err, postgram.ErrForbidden) ||
		!strings.Contains(err.Error(), "memory_role") {
		t.Fatalf("another client changed memory_role: %v", err)
	}
	if _, err := writer.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: mem.Version, Metadata: map[string]any{"memory_role": nil}}); !errors.Is(err, postgram.ErrForbidden) {
		t.Fatalf("another client removed memory_role: %v", err)
	}
	if _, err := writer.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: mem.Version, Status: &sc}); !errors.Is(err, postgram.ErrForbidden) ||
		!strings.Contains(err.Error(), `"delete"`) {
		t.Fatalf("status archived without the delete scope: %v", err)
	}
	task := mustStore(t, writer, postgram.StoreInput{Type: postgram.TypeTask, Content: "file the otter report"})
	if _, err := writer.UpdateTask(e.ctx, task.ID, postgram.TaskUpdate{Version: task.Version, Status: &sc}); err == nil {
		t.Fatal("a task was archived without the delete scope")
	}
	if got, err := e.c.Recall(e.ctx, mem.ID); err != nil || got.Version != mem.Version || got.MemoryRole() != postgram.RoleDurableMemory {
		t.Fatalf("a refused update changed the entity: %+v, %v", got, err)
	}
	// Other metadata and the status otherwise stay writable.
	done := postgram.StatusDone
	upd, err := writer.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: mem.Version, Status: &done,
		Metadata: map[string]any{"note": "x", "memory_role": "durable_memory"}})
	if err != nil {
		t.Fatalf("an update keeping memory_role: %v", err)
	}
	if upd.Tags == nil {
		t.Fatal("Update returned nil tags for an untagged entity (the wire says null; want [])")
	}
	// The owner may change the role; an administrator too; the delete
	// scope archives.
	upd, err = owner.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: upd.Version, Metadata: role})
	if err != nil || upd.MemoryRole() != postgram.RoleSessionContext {
		t.Fatalf("the owning client changed memory_role: %+v, %v", upd, err)
	}
	upd, err = e.c.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: upd.Version, Metadata: map[string]any{"memory_role": "durable_memory"}})
	if err != nil || upd.MemoryRole() != postgram.RoleDurableMemory {
		t.Fatalf("an administrator changed memory_role: %+v, %v", upd, err)
	}
	if upd, err = owner.Update(e.ctx, mem.ID, postgram.UpdateInput{Version: upd.Version, Status: &sc}); err != nil || upd.Status != postgram.StatusArchived {
		t.Fatalf("archiving with the delete scope: %+v, %v", upd, err)
	}
	// entity.update records which fields changed, never their values.
	audit, err := e.c.Audit(e.ctx, postgram.AuditFilter{Operation: "entity.update"})
	if err != nil || len(audit) != 4 {
		t.Fatalf("entity.update audit: %d entries, %v", len(audit), err)
	}
	fields := func(a postgram.AuditEntry) []string {
		var out []string
		switch v := a.Details["fields"].(type) {
		case []string:
			out = v
		case []any:
			for _, x := range v {
				s, _ := x.(string)
				out = append(out, s)
			}
		}
		return out
	}
	if got := fields(audit[3]); !slices.Equal(got, []string{"status", "metadata"}) {
		t.Fatalf("entity.update fields %v, want [status metadata]", got)
	}
	if got := fields(audit[0]); !slices.Equal(got, []string{"status"}) {
		t.Fatalf("entity.update fields %v, want [status]", got)
	}
	for _, a := range audit {
		for k, v := range a.Details {
			if s, ok := v.(string); ok && (strings.Contains(s, "otter") || s == "x") {
				t.Fatalf("the audit log holds content (%s=%q)", k, s)
			}
		}
	}
}
