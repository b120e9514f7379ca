// Command gen writes the search-quality development set
// (go generate ./internal/quality/synth).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"

	"github.com/postgram-go/postgram/internal/quality/synth"
)

func main() {
	out := flag.String("o", "org.jsonl", "output file")
	seed := flag.Uint64("seed", synth.DefaultSeed, "generator seed")
	flag.Parse()
	var buf bytes.Buffer
	if err := synth.Generate(&buf, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}
