package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
)

// Render formats the resolved environment, as it will run, as YAML or
// JSON ("yaml" or "json"). With explain, YAML carries a comment naming the
// file:line each value came from; JSON wraps the environment as
// {"environment": ..., "origins": {"field.path": "file:line"}}.
func Render(env *Environment, format string, explain bool) ([]byte, error) {
	plain := *env
	plain.Up = "" // where the loader's root is: not part of the file's shape
	body, err := json.Marshal(&plain)
	if err != nil {
		return nil, fmt.Errorf("encode the environment: %w", err)
	}
	switch format {
	case "json":
		var v any = json.RawMessage(body)
		if explain {
			v = struct {
				Environment json.RawMessage   `json:"environment"`
				Origins     map[string]string `json:"origins"`
			}{body, env.origins()}
		}
		out, err := json.MarshalIndent(v, "", "  ")
		return append(out, '\n'), err
	case "yaml", "":
		var doc yaml.Node
		if err := yaml.Unmarshal(body, &doc); err != nil {
			return nil, fmt.Errorf("encode the environment: %w", err)
		}
		clearStyle(&doc)
		if explain && len(doc.Content) > 0 {
			env.explain(doc.Content[0], "")
		}
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			return nil, fmt.Errorf("encode the environment: %w", err)
		}
		return b.Bytes(), enc.Close()
	}
	return nil, fmt.Errorf("unknown format %q: use yaml or json", format)
}

// clearStyle drops the JSON flow style yaml.v3 keeps from its input, so
// the output reads as block YAML.
func clearStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		n.Style &^= yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		clearStyle(c)
	}
}

// origin is where the value at path was written, as file:line.
func (e *Environment) origin(path string) string {
	return posLine(e.nearestPos(path))
}

func posLine(p diag.Pos) string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d", p.File, p.Line)
}

// explained is origin, with the parameters the line uses and where
// their values come from.
func (e *Environment) explained(path string) string {
	at := e.origin(path)
	if via := e.via[at]; via != "" {
		at += ", " + via
	}
	return at
}

// origins maps every field path that was written to its file:line.
func (e *Environment) origins() map[string]string {
	out := make(map[string]string, len(e.pos))
	keys := make([]string, 0, len(e.pos))
	for k := range e.pos {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != "" && !resolvedAway(k) {
			out[k] = e.explained(k)
		}
	}
	return out
}

// resolvedAway reports whether path is a field loading resolves away.
func resolvedAway(path string) bool {
	for _, p := range []string{"spec.template", "spec.extends", "spec.parameters", "spec.overrides"} {
		if _, ok := below(path, p); ok {
			return true
		}
	}
	return false
}

// explain comments every scalar of the tree at n (the value at path) with
// where it was written.
func (e *Environment) explain(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			e.explain(n.Content[i+1], join(path, n.Content[i].Value))
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			e.explain(c, fmt.Sprintf("%s[%d]", path, i))
		}
	case yaml.ScalarNode:
		n.LineComment = e.explained(path)
	}
}
