package main

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// planSummary condenses EXPLAIN (ANALYZE, BUFFERS) text output.
type planSummary struct {
	ExecMS, PlanMS float64
	SharedHit      int64 // root node's shared buffer hits (whole execution)
	SharedRead     int64 // root node's shared buffer reads
	Rows           int64 // rows the root node returned
	TopNodes       []string
	// Scans lists the distinct scan nodes outside InitPlans, in plan order.
	Scans []string
	// Hottest is the node with the most exclusive time (its total minus its
	// children's), and HottestMS that time.
	Hottest   string
	HottestMS float64
}

var (
	actualRE = regexp.MustCompile(`actual time=([0-9.]+)\.\.([0-9.]+) rows=([0-9]+) loops=([0-9]+)`)
	execRE   = regexp.MustCompile(`^Execution Time: ([0-9.]+) ms`)
	planRE   = regexp.MustCompile(`^Planning Time: ([0-9.]+) ms`)
	hitRE    = regexp.MustCompile(`\bhit=([0-9]+)`)
	readRE   = regexp.MustCompile(`\bread=([0-9]+)`)
)

// planNode is one plan node of the text output.
type planNode struct {
	label    string
	indent   int
	totalMS  float64 // actual total time × loops
	parent   int     // index in nodes, -1 for the root
	children float64 // sum of the children's totalMS
	initPlan bool    // below an InitPlan/SubPlan heading
}

// summarizePlan parses EXPLAIN (ANALYZE, BUFFERS) text output. topN bounds
// TopNodes: the first plan nodes in pre-order, skipping the InitPlans that
// compute each term's tsquery.
func summarizePlan(text string, topN int) planSummary {
	var s planSummary
	var nodes []planNode
	type heading struct{ indent int }
	var subplans []heading // InitPlan/SubPlan headings currently open
	rootBuffers := false   // the root's Buffers line was read
	inPlanning := false
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimRight(raw, " ")
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if trimmed == "" {
			continue
		}
		if m := execRE.FindStringSubmatch(trimmed); m != nil {
			s.ExecMS, _ = strconv.ParseFloat(m[1], 64)
			continue
		}
		if m := planRE.FindStringSubmatch(trimmed); m != nil {
			s.PlanMS, _ = strconv.ParseFloat(m[1], 64)
			continue
		}
		if trimmed == "Planning:" {
			inPlanning = true
			continue
		}
		if inPlanning {
			continue
		}
		isNode := len(nodes) == 0 || strings.HasPrefix(trimmed, "->")
		if !isNode {
			if strings.HasPrefix(trimmed, "InitPlan ") || strings.HasPrefix(trimmed, "SubPlan ") {
				subplans = append(subplans, heading{indent})
			}
			if strings.HasPrefix(trimmed, "Buffers:") && len(nodes) == 1 && !rootBuffers {
				rootBuffers = true
				shared := trimmed
				if i := strings.Index(shared, ", temp"); i >= 0 {
					shared = shared[:i]
				}
				if i := strings.Index(shared, ", local"); i >= 0 {
					shared = shared[:i]
				}
				if m := hitRE.FindStringSubmatch(shared); m != nil {
					s.SharedHit, _ = strconv.ParseInt(m[1], 10, 64)
				}
				if m := readRE.FindStringSubmatch(shared); m != nil {
					s.SharedRead, _ = strconv.ParseInt(m[1], 10, 64)
				}
			}
			continue
		}
		label := strings.TrimSpace(strings.TrimPrefix(trimmed, "->"))
		if i := strings.Index(label, "  ("); i >= 0 {
			label = label[:i]
		}
		for len(subplans) > 0 && subplans[len(subplans)-1].indent >= indent {
			subplans = subplans[:len(subplans)-1]
		}
		n := planNode{label: label, indent: indent, parent: -1, initPlan: len(subplans) > 0}
		if m := actualRE.FindStringSubmatch(trimmed); m != nil {
			total, _ := strconv.ParseFloat(m[2], 64)
			loops, _ := strconv.ParseFloat(m[4], 64)
			n.totalMS = total * loops
			if len(nodes) == 0 {
				s.Rows, _ = strconv.ParseInt(m[3], 10, 64)
			}
		}
		for p := len(nodes) - 1; p >= 0; p-- {
			if nodes[p].indent < indent {
				n.parent = p
				break
			}
		}
		if n.parent >= 0 {
			nodes[n.parent].children += n.totalMS
		}
		nodes = append(nodes, n)
	}
	for i, n := range nodes {
		if !n.initPlan && len(s.TopNodes) < topN {
			s.TopNodes = append(s.TopNodes, n.label)
		}
		if !n.initPlan && strings.Contains(n.label, "Scan") && !strings.HasPrefix(n.label, "Subquery Scan") &&
			!slices.Contains(s.Scans, n.label) {
			s.Scans = append(s.Scans, n.label)
		}
		if self := n.totalMS - n.children; i == 0 || self > s.HottestMS {
			s.Hottest, s.HottestMS = n.label, max(self, 0)
		}
	}
	return s
}

var labelRules = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`^Parallel `), "Par "},
	{regexp.MustCompile(`Index Only Scan (Backward )?using (\S+) on .*$`), "IndexOnly(${2})"},
	{regexp.MustCompile(`Index Scan (Backward )?using (\S+) on .*$`), "Index(${2})"},
	{regexp.MustCompile(`Bitmap Index Scan on (\S+).*$`), "BitmapIdx(${1})"},
	{regexp.MustCompile(`Bitmap Heap Scan on (\S+).*$`), "BitmapHeap(${1})"},
	{regexp.MustCompile(`Seq Scan on (\S+).*$`), "Seq(${1})"},
	{regexp.MustCompile(`^Subquery Scan on (\S+)$`), "Subquery(${1})"},
}

// shortLabel abbreviates a plan node label for a compact table cell
// ("Index Scan using chunks_pkey on chunks c" becomes "Index(chunks_pkey)")
// and cuts it to n bytes.
func shortLabel(l string, n int) string {
	for _, r := range labelRules {
		l = r.re.ReplaceAllString(l, r.repl)
	}
	if len(l) > n {
		return l[:n-1] + "…"
	}
	return l
}
