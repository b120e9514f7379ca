package extract

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxYAMLNodes bounds a YAML document's decoded size (aliases can expand a
// small file into a huge tree: the "billion laughs").
const maxYAMLNodes = 100_000

// yamlDoc renders a YAML document like a JSON one: each top-level key of
// a mapping is one section (its value re-encoded as YAML), and title,
// name and author keys fill the document's fields. Several documents in
// one stream ("---") are sections of their own.
func yamlDoc(data []byte) (*Document, error) {
	if _, err := text(data); err != nil {
		return nil, err
	}
	doc := &Document{Metadata: map[string]any{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: YAML: %v", ErrCorrupt, err)
		}
		if n := countNodes(&node, 0); n > maxYAMLNodes {
			return nil, fmt.Errorf("%w: YAML: more than %d nodes once aliases are expanded", ErrCorrupt, maxYAMLNodes)
		}
		var v any
		if err := node.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: YAML: %v", ErrCorrupt, err)
		}
		prefix := []string(nil)
		if i > 0 {
			prefix = []string{fmt.Sprintf("document %d", i+1)}
		}
		obj, ok := v.(map[string]any)
		if !ok {
			if v != nil {
				doc.Sections = append(doc.Sections, Section{Path: prefix, Text: strings.TrimSpace(encodeYAML(v))})
			}
			continue
		}
		for _, k := range sortedKeys(obj) {
			val := obj[k]
			doc.fieldFrom(k, val)
			body := strings.TrimSpace(encodeYAML(map[string]any{k: val}))
			doc.Sections = append(doc.Sections, Section{Path: append(append([]string(nil), prefix...), k), Text: body})
		}
	}
	return doc, nil
}

// countNodes counts n's nodes with aliases expanded, stopping past the
// bound.
func countNodes(n *yaml.Node, depth int) int {
	if n == nil || depth > 200 {
		return maxYAMLNodes + 1
	}
	total := 1
	if n.Kind == yaml.AliasNode {
		return total + countNodes(n.Alias, depth+1)
	}
	for _, c := range n.Content {
		total += countNodes(c, depth+1)
		if total > maxYAMLNodes {
			return total
		}
	}
	return total
}

func encodeYAML(v any) string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	_ = enc.Close()
	return b.String()
}
