package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// table is an aligned text table: a title, a header row and data rows.
type table struct {
	title  string
	header []string
	rows   [][]string
}

func newTable(title string, header ...string) *table {
	return &table{title: title, header: header}
}

// add appends a row; missing cells print empty.
func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the title, the header, a rule under it and the rows, with
// columns aligned by text/tabwriter (two spaces between columns).
func (t *table) write(w io.Writer) error {
	if t.title != "" {
		if _, err := fmt.Fprintf(w, "\n== %s ==\n", t.title); err != nil {
			return err
		}
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	line := func(cells []string) {
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	line(t.header)
	rule := make([]string, len(t.header))
	for i, h := range t.header {
		rule[i] = strings.Repeat("-", len(h))
	}
	line(rule)
	for _, r := range t.rows {
		cells := make([]string, len(t.header))
		copy(cells, r)
		line(cells)
	}
	return tw.Flush()
}

// ms formats d in milliseconds with two decimals.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond))
}

// msf formats a millisecond value with two decimals.
func msf(v float64) string { return fmt.Sprintf("%.2f", v) }

// perSec formats a rate with one decimal.
func perSec(v float64) string { return fmt.Sprintf("%.1f", v) }

// mib formats a byte count in MiB with one decimal.
func mib(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
