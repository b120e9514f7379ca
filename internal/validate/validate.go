// Package validate holds the field checks the library and its LLM tasks
// share. Every failure is a *driver.FieldError naming the field.
package validate

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/postgram-go/postgram/driver"
)

// Invalid builds a *driver.FieldError.
func Invalid(field, format string, args ...any) error {
	return &driver.FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// Content checks a content-sized text: valid UTF-8, at most
// driver.MaxContentBytes, no NUL bytes, and not blank when required.
func Content(field, s string, required bool) error {
	if !utf8.ValidString(s) {
		return Invalid(field, "must be valid UTF-8")
	}
	if len(s) > driver.MaxContentBytes {
		return Invalid(field, "is %d bytes; the maximum is %d", len(s), driver.MaxContentBytes)
	}
	if strings.ContainsRune(s, 0) {
		return Invalid(field, "must not contain NUL bytes")
	}
	if required && strings.TrimSpace(s) == "" {
		return Invalid(field, "must not be empty")
	}
	return nil
}

// Short checks a short text: valid UTF-8, at most max bytes, no NUL bytes.
func Short(field, s string, max int) error {
	if !utf8.ValidString(s) {
		return Invalid(field, "must be valid UTF-8")
	}
	if len(s) > max {
		return Invalid(field, "is %d bytes; the maximum is %d", len(s), max)
	}
	if strings.ContainsRune(s, 0) {
		return Invalid(field, "must not contain NUL bytes")
	}
	return nil
}

// Tags validates tags and returns them trimmed and de-duplicated,
// in first-seen order.
func Tags(field string, tags []string) ([]string, error) {
	if len(tags) > driver.MaxTags {
		return nil, Invalid(field, "has %d tags; the maximum is %d", len(tags), driver.MaxTags)
	}
	out := make([]string, 0, len(tags))
	seen := make(map[string]bool, len(tags))
	for i, t := range tags {
		t = strings.TrimSpace(t)
		f := field + "[" + strconv.Itoa(i) + "]"
		if t == "" {
			return nil, Invalid(f, "must not be empty")
		}
		if err := Short(f, t, driver.MaxTagLen); err != nil {
			return nil, err
		}
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, nil
}

// Relation trims a relation name and checks it: 1 to
// driver.MaxRelationLen characters, no control characters.
func Relation(field, r string) (string, error) {
	r = strings.TrimSpace(r)
	if r == "" {
		return "", Invalid(field, "must not be empty")
	}
	if n := len([]rune(r)); n > driver.MaxRelationLen {
		return "", Invalid(field, "is %d characters; the maximum is %d", n, driver.MaxRelationLen)
	}
	for _, ch := range r {
		if unicode.IsControl(ch) {
			return "", Invalid(field, "must not contain control characters")
		}
	}
	return r, nil
}

// Truncate shortens s to at most n bytes on a rune boundary, marking the cut with "…".
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// CleanName trims a name and collapses its inner whitespace.
func CleanName(s string) string { return strings.Join(strings.Fields(s), " ") }

// NameKey is the case-insensitive form entity names are matched by.
func NameKey(s string) string { return strings.ToLower(CleanName(s)) }
