package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/toon"
)

// Column widths of the human tables, in runes.
const (
	contentWidth = 60
	tagsWidth    = 24
	previewWidth = 200 // compact JSON/TOON list rows
)

// emit prints a command's result in the selected output mode: the compact
// rows (--json, --toon), the complete REST response raw (--full-response),
// or the human form written by human to standard output.
func (a *app) emit(compact any, raw []byte, human func(w io.Writer) error) error {
	switch {
	case a.fullResp && a.toonOut:
		return a.writeTOON(json.RawMessage(raw))
	case a.fullResp:
		var buf bytes.Buffer
		if err := json.Compact(&buf, raw); err != nil {
			buf.Reset()
			buf.Write(bytes.TrimSpace(raw))
		}
		buf.WriteByte('\n')
		_, err := a.stdout.Write(buf.Bytes())
		return err
	case a.jsonOut:
		return writeJSON(a.stdout, compact)
	case a.toonOut:
		return a.writeTOON(compact)
	}
	return human(a.stdout)
}

// table writes a human table to w: fill writes tab-separated rows (see
// row) and the columns are aligned when it returns.
func table(w io.Writer, fill func(tw io.Writer)) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fill(tw)
	return tw.Flush()
}

func (a *app) writeTOON(v any) error {
	b, err := toon.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode TOON: %w", err)
	}
	if len(b) > 0 {
		b = append(b, '\n')
	}
	_, err = a.stdout.Write(b)
	return err
}

// writeJSON writes v as one line of JSON without HTML escaping.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// jsonString renders v as compact JSON without HTML escaping.
func jsonString(v any) string {
	var b bytes.Buffer
	if err := writeJSON(&b, v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// --- compact rows -----------------------------------------------------

// writeRow is the compact answer of a write (store, update).
type writeRow struct {
	ID               string `json:"id"`
	Type             string `json:"type"`
	Version          int64  `json:"version"`
	Status           string `json:"status"`
	Visibility       string `json:"visibility"`
	EnrichmentStatus string `json:"enrichment_status"`
}

func toWriteRow(e *postgram.Entity) writeRow {
	return writeRow{ID: e.ID.String(), Type: string(e.Type), Version: e.Version, Status: string(e.Status), Visibility: string(e.Visibility), EnrichmentStatus: string(e.EnrichmentStatus)}
}

// entityRow is the compact form of one complete entity (recall).
type entityRow struct {
	ID               string         `json:"id"`
	Type             string         `json:"type"`
	Status           string         `json:"status"`
	Visibility       string         `json:"visibility"`
	Owner            string         `json:"owner,omitempty"`
	Tags             []string       `json:"tags"`
	Source           string         `json:"source,omitempty"`
	Metadata         map[string]any `json:"metadata,omitempty"`
	Version          int64          `json:"version"`
	EnrichmentStatus string         `json:"enrichment_status"`
	CreatedAt        time.Time      `json:"created_at,omitzero"`
	UpdatedAt        time.Time      `json:"updated_at,omitzero"`
	Content          string         `json:"content"`
}

func toEntityRow(e *postgram.Entity) entityRow {
	return entityRow{ID: e.ID.String(), Type: string(e.Type), Status: string(e.Status), Visibility: string(e.Visibility), Owner: e.Owner,
		Tags: tagsOf(e), Source: e.Source, Metadata: e.Metadata, Version: e.Version,
		EnrichmentStatus: string(e.EnrichmentStatus), CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt, Content: e.Content}
}

// listRow is the compact form of an entity in a list: a preview instead of
// the content (pgm recall returns all of it).
type listRow struct {
	ID         string    `json:"id"`
	Type       string    `json:"type"`
	Status     string    `json:"status"`
	Visibility string    `json:"visibility"`
	Owner      string    `json:"owner,omitempty"`
	Tags       []string  `json:"tags"`
	Version    int64     `json:"version"`
	UpdatedAt  time.Time `json:"updated_at,omitzero"`
	Preview    string    `json:"preview"`
}

func toListRow(e *postgram.Entity) listRow {
	return listRow{ID: e.ID.String(), Type: string(e.Type), Status: string(e.Status), Visibility: string(e.Visibility), Owner: e.Owner,
		Tags: tagsOf(e), Version: e.Version, UpdatedAt: e.UpdatedAt, Preview: truncate(oneLine(e.Content), previewWidth)}
}

func tagsOf(e *postgram.Entity) []string {
	if e == nil || e.Tags == nil {
		return []string{}
	}
	return e.Tags
}

// --- table helpers ----------------------------------------------------

// cell makes s a single table cell: one line, no tabs or control
// characters, at most width runes (0: no limit).
func cell[T ~string](v T, width int) string {
	s := oneLine(string(v))
	if width > 0 {
		s = truncate(s, width)
	}
	if s == "" {
		return "-"
	}
	return s
}

// truncate shortens s to at most n runes, ending with "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRightFunc(string(r[:n-1]), unicode.IsSpace) + "…"
}

// tagCell renders tags for a table.
func tagCell(tags []string) string { return cell(strings.Join(tags, ","), tagsWidth) }

// row writes one tab-separated table row.
func row(w io.Writer, cols ...string) {
	fmt.Fprintln(w, strings.Join(cols, "\t"))
}

// relTime renders t relative to now: "just now", "5m ago", "3h ago",
// "2d ago", and the date for anything older than 30 days.
func relTime(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		s = fmt.Sprintf("%dh", int(d/time.Hour))
	case d < 30*24*time.Hour:
		s = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	default:
		return t.Local().Format("2006-01-02")
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}

// timeCell renders a timestamp with its age: "2025-01-02 15:04 (3h ago)".
func timeCell(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05 MST") + " (" + relTime(now, t) + ")"
}

// seconds renders a duration given in seconds compactly (90 → "1m30s").
func seconds(secs *float64) string {
	if secs == nil {
		return "-"
	}
	d := time.Duration(*secs * float64(time.Second)).Round(time.Second)
	return d.String()
}

// safeText strips control characters other than newline and tab, so
// stored content cannot drive the terminal.
func safeText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' {
			return r
		}
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
}
