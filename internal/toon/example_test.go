package toon_test

import (
	"encoding/json"
	"fmt"

	"github.com/postgram-go/postgram/internal/toon"
)

func ExampleMarshal() {
	type result struct {
		ID      string  `json:"id"`
		Type    string  `json:"type"`
		Score   float64 `json:"score"`
		Content string  `json:"content"`
	}
	out, err := toon.Marshal(map[string]any{
		"query": "coffee",
		"results": []result{
			{ID: "m1", Type: "memory", Score: 0.0328, Content: "likes espresso, no sugar"},
			{ID: "m2", Type: "document", Score: 0.0161, Content: "café list"},
		},
		"tags": []string{"food", "preferences"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output:
	// query: coffee
	// results[2]{id,type,score,content}:
	//   m1,memory,0.0328,"likes espresso, no sugar"
	//   m2,document,0.0161,café list
	// tags[2]: food,preferences
}

func ExampleUnmarshal() {
	v, err := toon.Unmarshal([]byte("user:\n  id: 9007199254740993\n  name: Ada\nroles[2]: admin,ops"))
	if err != nil {
		panic(err)
	}
	js, _ := json.Marshal(v)
	fmt.Println(string(js))
	// Output:
	// {"user":{"id":9007199254740993,"name":"Ada"},"roles":["admin","ops"]}
}
