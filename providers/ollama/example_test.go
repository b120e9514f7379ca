package ollama_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/ollama"
)

func Example() {
	// A stand-in for a local Ollama so the example runs offline.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":"invalid request"}`, http.StatusBadRequest)
			return
		}
		embeddings := make([][]float32, len(req.Input))
		for i := range embeddings {
			embeddings[i] = make([]float32, 1024)
		}
		json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": embeddings})
	}))
	defer srv.Close()

	// The zero Config means bge-m3 (1024 dimensions) on http://127.0.0.1:11434.
	emb, err := ollama.New(ollama.Config{BaseURL: srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	vecs, err := emb.EmbedBatch(context.Background(), []string{"first chunk", "second chunk", "third chunk"})
	switch {
	case errors.Is(err, postgram.ErrUnavailable):
		fmt.Println("is ollama running?", err)
		return
	case err != nil:
		fmt.Println(err)
		return
	}
	fmt.Printf("%+v\n", emb.Model())
	fmt.Println(len(vecs), "vectors of", len(vecs[0]), "dimensions")
	// Output:
	// {Provider:ollama Name:bge-m3 Dimensions:1024}
	// 3 vectors of 1024 dimensions
}
