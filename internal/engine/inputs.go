package engine

import (
	"encoding/json"
	"fmt"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// ErrMissingOutput means an input's producer has no such output (yet).
type missingOutputError struct {
	Variable, Producer, Output string
}

func (e *missingOutputError) Error() string {
	return fmt.Sprintf("input %s: %s has no output %q (apply %s first, or check that its module declares the output)",
		e.Variable, e.Producer, e.Output, e.Producer)
}

// resolveInputs builds a component's inputs: literal values as written, and
// valueFrom values taken from the producers' stored outputs (index applied),
// as state returns them. It also returns the sensitive values among them,
// for redaction, and the names of the inputs that hold them, so the runner
// never writes them in clear.
func resolveInputs(c *spec.Component, state func(name string) store.ComponentState, ext *envReader) (runner.Inputs, []string, map[string]bool, error) {
	in, secrets, sensitive, missing, err := resolveKnown(c, state, ext)
	if err == nil && len(missing) > 0 {
		err = missing[0]
	}
	return in, secrets, sensitive, err
}

// resolveKnown is resolveInputs that goes on past an output the producer
// does not have (yet): it lists those instead, and leaves their inputs out.
// Another environment's output is read through ext: one it does not hold
// yet is an *UpstreamNotReadyError, one not exported a *NotExportedError.
func resolveKnown(c *spec.Component, state func(name string) store.ComponentState, ext *envReader) (runner.Inputs, []string, map[string]bool, []*missingOutputError, error) {
	in := runner.Inputs{}
	var missing []*missingOutputError
	var secrets []string
	var sensitive map[string]bool
	// InputVariables: the variables, and a kubeconfig's valueFrom parts.
	for _, v := range c.InputVariables() {
		if v.ValueFrom == "" {
			in[v.Name] = v.Value
			continue
		}
		val, out, ok, err := inputValue(v, state, ext)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		if !ok {
			ref, _ := spec.ParseValueFrom(v.ValueFrom)
			missing = append(missing, &missingOutputError{Variable: v.Name, Producer: ref.Component, Output: ref.Output})
			continue
		}
		in[v.Name] = val
		if out.Sensitive {
			secrets = append(secrets, sensitiveStrings(val)...)
			if sensitive == nil {
				sensitive = map[string]bool{}
			}
			sensitive[v.Name] = true
		}
	}
	return in, secrets, sensitive, missing, nil
}

// inputValue is v's value from its producer's output: this environment's
// (ok false when the producer holds no such output yet) or another's.
func inputValue(v spec.Variable, state func(name string) store.ComponentState, ext *envReader) (any, store.OutputValue, bool, error) {
	if er, ok := v.ValueFrom.EnvOutput(); ok {
		val, out, err := ext.value(v.Name, er)
		return val, out, err == nil, err
	}
	ref, ok := spec.ParseValueFrom(v.ValueFrom)
	if !ok {
		return nil, store.OutputValue{}, false, fmt.Errorf("input %s: bad valueFrom %q", v.Name, v.ValueFrom)
	}
	out, ok := state(ref.Component).Outputs[ref.Output]
	if !ok {
		return nil, out, false, nil
	}
	var val any
	if err := json.Unmarshal(out.Value, &val); err != nil {
		return nil, out, false, fmt.Errorf("input %s: stored output %s is unreadable: %w", v.Name, v.ValueFrom, err)
	}
	val, err := element(val, ref)
	if err != nil {
		return nil, out, false, fmt.Errorf("input %s: %w", v.Name, err)
	}
	return val, out, true, nil
}

// element is val, or its element [ref.Index] when ref has an index.
func element(val any, ref spec.ValueRef) (any, error) {
	if ref.Index == nil {
		return val, nil
	}
	list, ok := val.([]any)
	if !ok {
		return nil, fmt.Errorf("%s.%s is not a list, so [%d] cannot index it", ref.Component, ref.Output, *ref.Index)
	}
	if *ref.Index >= len(list) {
		return nil, fmt.Errorf("%s.%s has %d elements; [%d] is out of range", ref.Component, ref.Output, len(list), *ref.Index)
	}
	return list[*ref.Index], nil
}

// storedSecrets lists the string forms of a component's stored sensitive
// outputs, so they are masked in its log as well.
func storedSecrets(outs map[string]store.OutputValue) []string {
	var out []string
	for _, o := range outs {
		if !o.Sensitive {
			continue
		}
		var v any
		if json.Unmarshal(o.Value, &v) == nil {
			out = append(out, sensitiveStrings(v)...)
		}
	}
	return out
}

// sensitiveStrings lists the string forms of a sensitive value that could show up in a log.
func sensitiveStrings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, sensitiveStrings(e)...)
		}
		return out
	case map[string]any:
		var out []string
		for _, e := range x {
			out = append(out, sensitiveStrings(e)...)
		}
		return out
	case nil, bool:
		return nil
	}
	return []string{fmt.Sprint(v)}
}

// encodeOutputs turns runner outputs into stored outputs.
func encodeOutputs(outs runner.Outputs) (map[string]store.OutputValue, error) {
	m := make(map[string]store.OutputValue, len(outs))
	for name, o := range outs {
		b, err := json.Marshal(o.Value)
		if err != nil {
			return nil, fmt.Errorf("output %s: %w", name, err)
		}
		m[name] = store.OutputValue{Value: b, Sensitive: o.Sensitive}
	}
	return m, nil
}

// mayRevealSecrets reports whether c's tool may print a secret knit learns
// only from its outputs, after the tool ran: c declares a sensitive output,
// or has one already (whose new value is unknown until then). Such a
// component's live log is held until its outputs are known (stepLog).
// Outputs a module declares sensitive itself (OpenTofu) are not known
// ahead; OpenTofu prints them masked, and the stored log masks them.
func mayRevealSecrets(c *spec.Component, st store.ComponentState) bool {
	for _, o := range c.Outputs {
		if o.Sensitive {
			return true
		}
	}
	for _, o := range st.Outputs {
		if o.Sensitive {
			return true
		}
	}
	return false
}
