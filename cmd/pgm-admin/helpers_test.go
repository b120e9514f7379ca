package main

import (
	"context"
	"log/slog"
	"testing"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/cmd/internal/config"
	"github.com/postgram-go/postgram/driver"
)

// serverClient opens the store vars name and builds the client a server
// with this environment would (emb nil: the environment's embedder). The
// caller closes the store before running pgm-admin against a SQLite file
// when it needs exclusive access; it is closed at the end of the test.
func serverClient(t *testing.T, vars map[string]string, emb postgram.Embedder) (*postgram.Client, driver.Storage) {
	t.Helper()
	ctx := context.Background()
	env, err := config.Parse(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	st, err := env.OpenStore(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if emb == nil {
		if emb, err = env.Embedder(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := postgram.New(ctx, env.ClientConfig(st, emb, nil))
	if err != nil {
		t.Fatal(err)
	}
	return c, st
}
