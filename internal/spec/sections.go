package spec

import (
	"bytes"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Section is a run of lines of an environment file (1-based, End
// inclusive): one component's (Component set), or the lines before the
// components (Head) or after them.
type Section struct {
	Component  string
	Head       bool
	Start, End int
}

// Sections splits an environment file as written into the lines of each
// component (from its "- " line to the line before the next one), the
// lines before the components and those after, in the file's order. ok is
// false when the file is not YAML with a spec.components list: a diff then
// cannot say which component a line belongs to. A component without a
// name is named by its position, "#2".
func Sections(data []byte) (out []Section, ok bool) {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return nil, false
	}
	comps, next := mapValue(doc.Content[0], "spec", "components")
	if comps == nil || comps.Kind != yaml.SequenceNode || len(comps.Content) == 0 {
		return nil, false
	}
	total := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		total++
	}
	end := total
	if next != nil {
		end = next.Line - 1
	}
	starts := make([]int, len(comps.Content))
	for i, item := range comps.Content {
		starts[i] = item.Line
	}
	out = append(out, Section{Head: true, Start: 1, End: starts[0] - 1})
	for i, item := range comps.Content {
		last := end
		if i+1 < len(starts) {
			last = starts[i+1] - 1
		}
		out = append(out, Section{Component: componentName(item, i), Start: starts[i], End: last})
	}
	if end < total {
		out = append(out, Section{Start: end + 1, End: total})
	}
	return out, true
}

// mapValue finds the node at path through nested mappings, and the key
// node that follows the last step (nil when it is the last key of its
// mapping and of every mapping around it): where the value's lines end.
func mapValue(n *yaml.Node, path ...string) (value, next *yaml.Node) {
	for _, key := range path {
		if n.Kind != yaml.MappingNode {
			return nil, nil
		}
		found := false
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == key {
				if i+2 < len(n.Content) {
					next = n.Content[i+2]
				}
				n, found = n.Content[i+1], true
				break
			}
		}
		if !found {
			return nil, nil
		}
	}
	return n, next
}

func componentName(item *yaml.Node, i int) string {
	if v, _ := mapValue(item, "name"); v != nil && v.Kind == yaml.ScalarNode && v.Value != "" {
		return v.Value
	}
	return "#" + strconv.Itoa(i+1)
}
