package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWorkspaceTablesCoverTheSchema: DeleteWorkspace empties every table
// that holds a workspace_id; a migration adding one must add it to
// workspaceTables.
func TestWorkspaceTablesCoverTheSchema(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := Open(ctx, Config{Path: filepath.Join(t.TempDir(), "postgram.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := st.r.QueryContext(ctx, `SELECT m.name FROM sqlite_master m JOIN pragma_table_info(m.name) p
		WHERE m.type = 'table' AND p.name = 'workspace_id' ORDER BY m.name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var schema []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		schema = append(schema, name)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	listed := slices.Sorted(slices.Values(workspaceTables))
	if d := cmp.Diff(schema, listed); d != "" {
		t.Errorf("tables with a workspace_id (-schema +workspaceTables):\n%s", d)
	}
}
