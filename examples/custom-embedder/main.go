// Custom-embedder shows how to plug your own embedding model into
// Postgram: implement postgram.Embedder (EmbedBatch and Model, optionally
// MaxBatch) and pass it in postgram.Config. The worker then embeds stored
// chunks with it, the store records its model, and search embeds each
// query with it for the vector branch. The embedder here is a tiny
// deterministic one (character-trigram hashing, so texts that share word
// fragments get similar vectors); a real one would call a model server,
// as providers/openai and providers/ollama do.
//
// It runs on the embedded SQLite store in a temporary directory and needs
// no service and no network:
//
//	go run ./examples/custom-embedder
package main

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/storage/sqlite"
)

// TrigramEmbedder hashes the character trigrams of a text into a vector of
// Dims buckets and normalises it to unit length. It is safe for concurrent
// use (it has no mutable state).
type TrigramEmbedder struct {
	Dims int
}

// Model identifies the vectors: stores record it with every embedding, so
// change Name whenever the vectors would change.
func (e TrigramEmbedder) Model() postgram.ModelInfo {
	return postgram.ModelInfo{Provider: "example", Name: "trigram-v1", Dimensions: e.Dims}
}

// EmbedBatch returns one vector per text, in input order.
func (e TrigramEmbedder) EmbedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		// A real provider wraps postgram.ErrUnavailable, ErrRateLimited or
		// ErrEmbeddingFailed so the worker knows whether to retry.
		return nil, fmt.Errorf("trigram embedder: %w: %w", postgram.ErrUnavailable, err)
	}
	out := make([][]float32, len(texts))
	for i, text := range texts {
		out[i] = e.embed(text)
	}
	return out, nil
}

func (e TrigramEmbedder) embed(text string) []float32 {
	v := make([]float32, e.Dims)
	for _, word := range strings.Fields(strings.ToLower(text)) {
		r := []rune(" " + strings.Trim(word, ".,;:!?\"'()") + " ")
		for i := 0; i+3 <= len(r); i++ {
			h := fnv.New32a()
			h.Write([]byte(string(r[i : i+3])))
			v[h.Sum32()%uint32(e.Dims)]++
		}
	}
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		v[0] = 1 // an empty text still needs a unit vector
		return v
	}
	norm := float32(math.Sqrt(sum))
	for i := range v {
		v[i] /= norm
	}
	return v
}

// MaxBatch is optional (postgram.MaxBatcher): the worker never sends more
// texts in one call.
func (e TrigramEmbedder) MaxBatch() int { return 64 }

var (
	_ postgram.Embedder   = TrigramEmbedder{}
	_ postgram.MaxBatcher = TrigramEmbedder{}
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	dir, err := os.MkdirTemp("", "postgram-custom-embedder-")
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
	client, err := postgram.New(ctx, postgram.Config{Store: store, Embedder: TrigramEmbedder{Dims: 512}})
	if err != nil {
		return fmt.Errorf("new client: %w", err)
	}

	for _, text := range []string{
		"Kubernetes upgrade runbook: drain the nodes one by one.",
		"Grandmother's apple strudel recipe with cinnamon.",
		"Invoices are archived in the accounting folder every quarter.",
	} {
		if _, err := client.Store(ctx, postgram.StoreInput{Type: postgram.TypeDocument, Content: text}); err != nil {
			return fmt.Errorf("store: %w", err)
		}
	}

	// Embed every pending chunk with our embedder (a server runs
	// client.Start(ctx) and lets the background worker do it).
	admin, err := client.Admin()
	if err != nil {
		return err
	}
	stats, err := admin.EnrichPending(ctx)
	if err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	fmt.Fprintf(out, "embedded %d entities in %d call(s)\n", stats.Entities, stats.Calls)
	models, err := admin.Models(ctx)
	if err != nil {
		return fmt.Errorf("models: %w", err)
	}
	for _, m := range models {
		fmt.Fprintf(out, "model %s/%s, %d dimensions, active=%t\n", m.Provider, m.Name, m.Dimensions, m.Active)
	}

	// Each query is embedded with the same model; every result shows its
	// place in the vector branch and the cosine similarity of our vectors
	// next to its keyword rank.
	for _, query := range []string{"upgrading the kubernetes nodes", "cinnamon apples"} {
		res, err := client.Search(ctx, postgram.SearchRequest{Query: query, Limit: 2})
		if err != nil {
			return fmt.Errorf("search: %w", err)
		}
		fmt.Fprintf(out, "search %q (query vector from %s):\n", query, res.Stats.QueryEmbedding)
		for _, r := range res.Results {
			cosine := 0.0
			if r.Similarity != nil {
				cosine = *r.Similarity
			}
			fmt.Fprintf(out, "  - %s (vector rank %d, cosine %.2f, keyword rank %d)\n",
				r.Entity.Content, r.VectorRank, cosine, r.KeywordRank)
		}
	}
	return nil
}
