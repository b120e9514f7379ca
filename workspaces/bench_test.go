package workspaces_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/storage/sqlite"
	"github.com/postgram-go/postgram/workspaces"
)

// BenchmarkAuthenticate compares a request's authentication in a server of
// one workspace (Admin.Authenticate) with one of many (Directory: the key's
// workspace remembered, then the same check there), on SQLite.
func BenchmarkAuthenticate(b *testing.B) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "postgram.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	if err := st.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	d, err := workspaces.Open(ctx, workspaces.Config{Client: postgram.Config{Store: st}})
	if err != nil {
		b.Fatal(err)
	}
	w, err := d.Create(ctx, "acme")
	if err != nil {
		b.Fatal(err)
	}
	token, _, err := w.Admin.CreateKey(ctx, postgram.KeySpec{Name: "bench", Scopes: postgram.AllScopes})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		auth func(context.Context, string) (*postgram.Client, error)
	}{{"admin", w.Admin.Authenticate}, {"directory", d.Authenticate}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.auth(ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
