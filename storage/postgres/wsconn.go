package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Row-level security (migration 013) admits a row of a workspace-scoped
// table only when its workspace_id equals the connection's
// postgram.workspace setting, for every role but the tables' owner. The
// store therefore tells each connection, as the pool hands it out, the
// workspace of the operation it serves: every method taking a workspace
// puts it in its context (withWS), and PrepareConn sets the connection's
// setting when it differs from the one it holds (so a server of one
// workspace pays one statement per connection, not per query). An
// operation without a workspace sets it empty, which matches no row:
// fail-closed. The setting is the session's (set_config(…, false)), so a
// transaction-pooling proxy (PgBouncer in transaction mode) between the
// store and PostgreSQL would mix workspaces' settings: connect directly, or
// in session mode, when the server's role is subject to the policies.

type wsKey struct{}

// withWS marks ctx as an operation on workspace ws.
func withWS(ctx context.Context, ws string) context.Context {
	if cur, _ := ctx.Value(wsKey{}).(string); cur == ws {
		return ctx
	}
	return context.WithValue(ctx, wsKey{}, ws)
}

// anyWorkspace marks an operation that touches no workspace-scoped table
// (web-app users, OAuth records): the connection keeps whatever setting
// it has.
const anyWorkspace = "\x00any"

// storeWide marks ctx as an operation outside every workspace's tables.
func storeWide(ctx context.Context) context.Context { return withWS(ctx, anyWorkspace) }

// wsSetting is where a connection remembers the workspace it was set to.
const wsSetting = "postgram.workspace"

// PrepareConn is the pool hook (pgxpool.Config.PrepareConn) that sets a
// connection's postgram.workspace to the workspace of the operation
// acquiring it. Open installs it; a caller who passes its own pool to New
// and connects as a role subject to row-level security must install it
// too, or every workspace-scoped read sees nothing.
func PrepareConn(ctx context.Context, conn *pgx.Conn) (bool, error) {
	want, _ := ctx.Value(wsKey{}).(string)
	if want == anyWorkspace {
		return true, nil
	}
	data := conn.PgConn().CustomData()
	if have, ok := data[wsSetting].(string); ok && have == want {
		return true, nil
	}
	if _, err := conn.Exec(ctx, "SELECT set_config('postgram.workspace', $1, false)", want); err != nil {
		// The connection's setting is unknown now: drop it.
		return false, fmt.Errorf("postgres: set the connection's workspace: %w", err)
	}
	data[wsSetting] = want
	return true, nil
}
