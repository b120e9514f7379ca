package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/providers/openai"
)

func Example() {
	// A stand-in for https://api.openai.com/v1 so the example runs offline.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input      []string `json:"input"`
			Dimensions int      `json:"dimensions"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		type datum struct {
			Object    string    `json:"object"`
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]datum, len(req.Input))
		for i := range req.Input {
			data[i] = datum{Object: "embedding", Index: i, Embedding: make([]float32, req.Dimensions)}
		}
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "text-embedding-3-small"})
	}))
	defer srv.Close()

	emb, err := openai.New(openai.Config{
		APIKey:     "sk-example",
		BaseURL:    srv.URL + "/v1", // omit to use the real OpenAI API
		Dimensions: 256,             // text-embedding-3-* models can shorten vectors
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	vecs, err := emb.EmbedBatch(context.Background(), []string{"first chunk", "second chunk"})
	switch {
	case errors.Is(err, postgram.ErrRateLimited), errors.Is(err, postgram.ErrUnavailable):
		fmt.Println("retry later:", err)
		return
	case err != nil:
		fmt.Println("giving up:", err)
		return
	}
	fmt.Printf("%+v\n", emb.Model())
	fmt.Println(len(vecs), "vectors of", len(vecs[0]), "dimensions")
	// Output:
	// {Provider:openai Name:text-embedding-3-small Dimensions:256}
	// 2 vectors of 256 dimensions
}
