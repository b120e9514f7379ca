package chunk

import "strings"

// SectionSeparator joins the headings of a section path for display.
const SectionSeparator = " › "

// SectionAt returns the Markdown heading path in force at byte offset off
// of text: the ATX headings ("# A", "## B") before it, each replacing the
// headings of its level and deeper; headings inside fenced code blocks do
// not count. It returns nil when text has no heading before off.
func SectionAt(text string, off int) []string {
	if off < 0 {
		return nil
	}
	if off > len(text) {
		off = len(text)
	}
	if !strings.HasPrefix(text, "#") && !strings.Contains(text[:off], "\n#") {
		return nil
	}
	var path []string
	var levels []int
	fence := ""
	for pos := 0; pos < off; {
		end := strings.IndexByte(text[pos:], '\n')
		if end < 0 {
			end = len(text) - pos
		}
		line := strings.TrimRight(text[pos:pos+end], "\r")
		pos += end + 1
		trim := strings.TrimLeft(line, " ")
		if len(line)-len(trim) > 3 {
			continue // indented code
		}
		if fence != "" {
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
			continue
		}
		level := 0
		for level < len(trim) && level < 7 && trim[level] == '#' {
			level++
		}
		if level == 0 || level > 6 || (level < len(trim) && trim[level] != ' ' && trim[level] != '\t') {
			continue
		}
		title := strings.TrimSpace(strings.TrimRight(strings.TrimSpace(trim[level:]), "#"))
		if title == "" {
			continue
		}
		for len(levels) > 0 && levels[len(levels)-1] >= level {
			levels, path = levels[:len(levels)-1], path[:len(path)-1]
		}
		levels, path = append(levels, level), append(path, title)
	}
	return path
}
