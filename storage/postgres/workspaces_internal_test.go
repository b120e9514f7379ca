package postgres

import (
	"context"
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
	st := openSmall(t)
	if err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := st.pool.Query(ctx, `SELECT table_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND column_name = 'workspace_id' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
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
