package terraform

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// StatePlaceholder is the string a sandboxed plan's state copy holds
// instead of each sensitive string of the real state (scrubState).
const StatePlaceholder = "knit-preview-placeholder"

// echoMin is the shortest sensitive string scrubState also replaces
// where the state holds it unmarked: shorter ones could be a type name
// ("string", "number") or a word that is no secret.
const echoMin = 8

// scrubState is data, an OpenTofu state (v4 JSON), with nothing a
// sandboxed plan may not see:
//   - every value an instance's sensitive_attributes path names, and
//     every output marked sensitive (and a terraform_data's output
//     where its input is sensitive), keeps its shape with placeholder
//     leaves (strings StatePlaceholder, numbers 0, bools false);
//   - every other string of the instances' attributes and the outputs
//     that equals one of those sensitive strings (a provider's unmarked
//     copy of a sensitive input, as terraform_data's output is) becomes
//     StatePlaceholder too, for strings of echoMin bytes or more;
//   - instances' private blobs (provider data knit cannot read) are gone.
//
// What the state does not mark sensitive stays as it is.
func scrubState(data []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var st map[string]any
	if err := dec.Decode(&st); err != nil {
		return nil, fmt.Errorf("read the state to hide its sensitive values: %w", err)
	}
	secrets := map[string]bool{}
	var values []any // where an unmarked copy may be
	for _, inst := range stateInstances(st) {
		delete(inst.m, "private")
		attrs, _ := inst.m["attributes"].(map[string]any)
		if attrs == nil {
			continue
		}
		for _, steps := range inst.sensitivePaths() {
			scrubPath(attrs, steps, secrets)
		}
		values = append(values, attrs)
	}
	outputs, _ := st["outputs"].(map[string]any)
	for _, o := range outputs {
		out, _ := o.(map[string]any)
		if out == nil {
			continue
		}
		if s, _ := out["sensitive"].(bool); s {
			out["value"] = placeholders(out["value"], secrets)
		}
		values = append(values, out)
	}
	for _, v := range values {
		scrubEchoes(v, secrets)
	}
	return json.MarshalIndent(st, "", "  ")
}

// stateInstance is one resource instance of a state, with its
// resource's type.
type stateInstance struct {
	kind string
	m    map[string]any
}

// stateInstances are the state's resource instances.
func stateInstances(st map[string]any) []stateInstance {
	var out []stateInstance
	resources, _ := st["resources"].([]any)
	for _, r := range resources {
		res, _ := r.(map[string]any)
		kind, _ := res["type"].(string)
		insts, _ := res["instances"].([]any)
		for _, i := range insts {
			if inst, ok := i.(map[string]any); ok {
				out = append(out, stateInstance{kind, inst})
			}
		}
	}
	return out
}

// sensitivePaths are the paths inst's sensitive_attributes name; for a
// terraform_data, each sensitive path of its input also under its output,
// which is its input and which OpenTofu does not mark.
func (inst stateInstance) sensitivePaths() [][]any {
	var out [][]any
	paths, _ := inst.m["sensitive_attributes"].([]any)
	for _, p := range paths {
		steps, _ := p.([]any)
		if len(steps) == 0 {
			continue
		}
		out = append(out, steps)
		first, _ := steps[0].(map[string]any)
		if inst.kind == "terraform_data" && first["type"] == "get_attr" && first["value"] == "input" {
			out = append(out, append([]any{map[string]any{"type": "get_attr", "value": "output"}}, steps[1:]...))
		}
	}
	return out
}

// scrubPath replaces the value at steps (get_attr and index steps, as
// OpenTofu writes sensitive_attributes) under v with placeholders,
// adding its strings to secrets. A path that names nothing is left.
func scrubPath(v any, steps []any, secrets map[string]bool) {
	if len(steps) == 0 {
		return
	}
	if w, ok := dynamicValue(v); ok {
		v = w["value"]
	}
	step, _ := steps[0].(map[string]any)
	var key any
	switch step["type"] {
	case "get_attr":
		key = step["value"]
	case "index":
		idx, _ := step["value"].(map[string]any)
		key = idx["value"]
	default:
		return
	}
	set := func(child any) any {
		if len(steps) == 1 {
			return placeholders(child, secrets)
		}
		scrubPath(child, steps[1:], secrets)
		return child
	}
	switch c := v.(type) {
	case map[string]any:
		k, ok := key.(string)
		if _, there := c[k]; ok && there {
			c[k] = set(c[k])
		}
	case []any:
		n, ok := key.(json.Number)
		i, err := n.Int64()
		if ok && err == nil && i >= 0 && i < int64(len(c)) {
			c[i] = set(c[i])
		}
	}
}

// placeholders is v with the same shape and placeholder leaves; its
// strings go into secrets.
func placeholders(v any, secrets map[string]bool) any {
	if w, ok := dynamicValue(v); ok {
		w["value"] = placeholders(w["value"], secrets)
		return w
	}
	switch c := v.(type) {
	case string:
		secrets[c] = true
		return StatePlaceholder
	case json.Number:
		return json.Number("0")
	case bool:
		return false
	case []any:
		for i := range c {
			c[i] = placeholders(c[i], secrets)
		}
	case map[string]any:
		for k := range c {
			c[k] = placeholders(c[k], secrets)
		}
	}
	return v
}

// scrubEchoes replaces, under v, every string value that is one of
// secrets (echoMin bytes or more) with StatePlaceholder.
func scrubEchoes(v any, secrets map[string]bool) {
	echo := func(x any) (any, bool) {
		s, ok := x.(string)
		if ok && len(s) >= echoMin && secrets[s] {
			return StatePlaceholder, true
		}
		return x, false
	}
	switch c := v.(type) {
	case []any:
		for i := range c {
			if r, ok := echo(c[i]); ok {
				c[i] = r
			} else {
				scrubEchoes(c[i], secrets)
			}
		}
	case map[string]any:
		for k := range c {
			if r, ok := echo(c[k]); ok {
				c[k] = r
			} else {
				scrubEchoes(c[k], secrets)
			}
		}
	}
}

// dynamicValue is v as the {"value", "type"} object OpenTofu writes for a
// value of a dynamic type (terraform_data's input and output): a path
// goes through it to its value, and its type is kept. (An object of two
// attributes that happen to be named so is taken for one, and its type
// attribute kept.)
func dynamicValue(v any) (map[string]any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 2 {
		return nil, false
	}
	_, hasValue := m["value"]
	switch m["type"].(type) {
	case string, []any:
		return m, hasValue
	}
	return nil, false
}
