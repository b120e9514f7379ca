package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
)

// readStdin reads content from standard input, up to the server's content
// limit (a larger input is rejected here rather than uploaded). Trailing
// newlines are dropped.
func (a *app) readStdin() (string, error) {
	if a.stdin == nil {
		return "", usageErr("no standard input to read content from")
	}
	b, err := io.ReadAll(io.LimitReader(a.stdin, postgram.MaxContentBytes+1))
	if err != nil {
		return "", fmt.Errorf("read standard input: %w", err)
	}
	if len(b) > postgram.MaxContentBytes {
		return "", usageErr("content from standard input is larger than the %d-byte limit", postgram.MaxContentBytes)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

// stdinIsTerminal reports whether standard input is an interactive
// terminal (anything that is not an *os.File counts as piped).
func (a *app) stdinIsTerminal() bool {
	f, ok := a.stdin.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// contentArg resolves a content argument: the text itself, "-" for
// standard input, or (no argument) standard input when it is not a
// terminal.
func (a *app) contentArg(args []string) (string, error) {
	var (
		s   string
		err error
	)
	switch {
	case len(args) > 0 && args[0] != "-":
		s = args[0]
	case len(args) > 0 || !a.stdinIsTerminal():
		s, err = a.readStdin()
	default:
		return "", usageErr("no content: pass it as an argument, or pipe it in (use '-' to read standard input)")
	}
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(s) == "" {
		return "", usageErr("content is empty")
	}
	return s, nil
}

// entityID validates an entity id argument.
func entityID(s string) (string, error) {
	s = strings.TrimSpace(s)
	if _, err := uuid.Parse(s); err != nil || len(s) != 36 {
		return "", usageErr("invalid entity ID %q: want a UUID like 123e4567-e89b-12d3-a456-426614174000", truncate(s, 64))
	}
	return strings.ToLower(s), nil
}

// cleanTags trims tags and drops empty ones (so --tags "" clears tags).
func cleanTags(tags []string) []string {
	out := make([]string, 0, len(tags))
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// parseMetadata parses a --metadata value: a JSON object. Numbers keep
// their exact digits.
func parseMetadata(s string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var m map[string]any
	err := dec.Decode(&m)
	if err == nil && m == nil {
		err = fmt.Errorf("got null")
	}
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = fmt.Errorf("unexpected data after the object")
		}
	}
	if err != nil {
		return nil, usageErr("invalid --metadata: want a JSON object like '{\"k\":1}': %v", err)
	}
	return m, nil
}
