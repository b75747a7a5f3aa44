package spec

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
)

// ValueFrom is where a value is read from, as written at valueFrom:
//   - "component.output" or "component.output[N]": an output of a component
//     of the same environment (ParseValueFrom);
//   - {environment: TEAM/ENV, output: COMPONENT.OUTPUT}: an output another
//     environment exports to this environment's team (knit.dev/v1 only; see
//     Export). It is held as "TEAM/ENV:COMPONENT.OUTPUT" (EnvOutput reads
//     it), and stored as JSON in its written, object form.
type ValueFrom string

// EnvOutputRef is valueFrom's object form: Output (Component.Output, an
// index allowed) of the environment Team/Env.
type EnvOutputRef struct {
	Team, Env string
	Output    ValueRef
}

// Environment is the producer's ID, TEAM/ENV.
func (r EnvOutputRef) Environment() string { return r.Team + "/" + r.Env }

// String is the reference as a person reads it: TEAM/ENV's C.O.
func (r EnvOutputRef) String() string { return r.Environment() + " " + r.Output.String() }

// String is Component.Output, with its index when it has one.
func (r ValueRef) String() string {
	if r.Index != nil {
		return fmt.Sprintf("%s.%s[%d]", r.Component, r.Output, *r.Index)
	}
	return r.Component + "." + r.Output
}

// EnvValueFrom is the ValueFrom of environment's output (TEAM/ENV and
// COMPONENT.OUTPUT as written in valueFrom's object form).
func EnvValueFrom(environment, output string) ValueFrom {
	return ValueFrom(environment + ":" + output)
}

// EnvOutput parses v's environment form; ok is false for the same
// environment's form, or when v is malformed (validation says how).
func (v ValueFrom) EnvOutput() (EnvOutputRef, bool) {
	env, out, ok := strings.Cut(string(v), ":")
	if !ok {
		return EnvOutputRef{}, false
	}
	team, name, ok := strings.Cut(env, "/")
	if !ok || checkName(team) != "" || checkName(name) != "" {
		return EnvOutputRef{}, false
	}
	ref, ok := ParseValueFrom(ValueFrom(out))
	if !ok {
		return EnvOutputRef{}, false
	}
	return EnvOutputRef{Team: team, Env: name, Output: ref}, true
}

// IsEnv reports whether v names another environment's output (well formed or not).
func (v ValueFrom) IsEnv() bool { return strings.Contains(string(v), ":") }

func (v ValueFrom) parts() (environment, output string) {
	environment, output, _ = strings.Cut(string(v), ":")
	return environment, output
}

type envValueFromJSON struct {
	Environment string `json:"environment"`
	Output      string `json:"output"`
}

// MarshalJSON writes the same environment's form as a string and the
// environment form as {environment, output}, as the file writes them.
func (v ValueFrom) MarshalJSON() ([]byte, error) {
	if !v.IsEnv() {
		return json.Marshal(string(v))
	}
	e, o := v.parts()
	return json.Marshal(envValueFromJSON{Environment: e, Output: o})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *ValueFrom) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*v = ValueFrom(s)
		return nil
	}
	var o envValueFromJSON
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("valueFrom: %w", err)
	}
	*v = EnvValueFrom(o.Environment, o.Output)
	return nil
}

// Export lets the environments of Teams read Output (COMPONENT.OUTPUT, a
// declared output of one of this environment's components) through a
// valueFrom {environment, output}. Nothing else of an environment is
// readable from another, not even by its own team.
type Export struct {
	Output string   `json:"output"`
	Teams  []string `json:"teams"`
}

// ExportsTo answers whether team may read output (COMPONENT.OUTPUT, no
// index) of this environment.
func (s *EnvSpec) ExportsTo(output, team string) bool {
	for _, e := range s.Exports {
		if e.Output == output {
			for _, t := range e.Teams {
				if t == team {
					return true
				}
			}
		}
	}
	return false
}

// Upstreams are the environments (TEAM/ENV) whose outputs this one reads,
// sorted, each once; an environment a set generated from another
// (AnnotationGeneratedFrom) reads its producer.
func (e *Environment) Upstreams() []string {
	seen := map[string]bool{}
	for _, r := range e.EnvOutputRefs() {
		seen[r.Environment()] = true
	}
	if p := e.Metadata.Annotations[AnnotationGeneratedFrom]; p != "" {
		seen[p] = true
	}
	out := make([]string, 0, len(seen))
	for id := range seen {
		out = append(out, id)
	}
	sort.Strings(out)
	return out
}

// EnvOutputRefs are the other environments' outputs this environment
// reads, wherever a valueFrom is written (variables, kubeconfigs, health
// checks), in the file's order.
func (e *Environment) EnvOutputRefs() []EnvOutputRef {
	var out []EnvOutputRef
	for _, r := range e.EnvReads() {
		out = append(out, r.Ref)
	}
	return out
}

// EnvRead is one read of another environment's output: the field that
// writes it (e.g. spec.components[0].variables[1].valueFrom; Pos finds
// its line) and what it reads.
type EnvRead struct {
	Field string
	Ref   EnvOutputRef
}

// EnvReads lists every well-formed read of another environment's output,
// in the file's order; an inherited kubeconfig's is read once, at
// spec.kubeconfig.
func (e *Environment) EnvReads() []EnvRead {
	var out []EnvRead
	add := func(field string, v ValueFrom) {
		if r, ok := v.EnvOutput(); ok {
			out = append(out, EnvRead{Field: field, Ref: r})
		}
	}
	for i, c := range e.Spec.Components {
		p := fmt.Sprintf("spec.components[%d]", i)
		for j, v := range c.Variables {
			add(fmt.Sprintf("%s.variables[%d].valueFrom", p, j), v.ValueFrom)
		}
		if c.Kubeconfig != nil && !c.Kubeconfig.inherited {
			kubeReads(p+".kubeconfig", c.Kubeconfig, add)
		}
		healthReads(p+".health", c.Health, add)
	}
	if k := e.Spec.Kubeconfig; k != nil {
		kubeReads("spec.kubeconfig", k, add)
	}
	if h := e.Spec.Health; h != nil {
		healthReads("spec.health.checks", h.Checks, add)
	}
	return out
}

func kubeReads(p string, k *Kubeconfig, add func(string, ValueFrom)) {
	add(p+".valueFrom", k.ValueFrom)
	for _, part := range []struct {
		name string
		v    *KubeValue
	}{{"server", k.Server}, {"ca", k.CA}, {"token", k.Token}} {
		if part.v != nil {
			add(p+"."+part.name+".valueFrom", part.v.ValueFrom)
		}
	}
}

// healthReads lists the valueFroms of checks' URLs.
func healthReads(p string, checks []HealthCheck, add func(string, ValueFrom)) {
	for i, h := range checks {
		if h.HTTP != nil {
			add(fmt.Sprintf("%s[%d].http.url.valueFrom", p, i), h.HTTP.URL.ValueFrom)
		}
		if h.Prometheus != nil {
			add(fmt.Sprintf("%s[%d].prometheus.url.valueFrom", p, i), h.Prometheus.URL.ValueFrom)
		}
	}
}

// valueFromField decodes a valueFrom: a string (the same environment's
// form) or a mapping {environment, output}.
func (d *decoder) valueFromField(dst *ValueFrom) field {
	return func(v *yaml.Node, path string) {
		n := resolve(v)
		if n == nil || n.Kind != yaml.MappingNode {
			var s string
			d.str(&s)(v, path)
			if strings.Contains(s, ":") {
				d.errorf(v, path, "write valueFrom: {environment: TEAM/ENV, output: COMPONENT.OUTPUT}",
					"%q is not of the form component.output", s)
				return
			}
			*dst = ValueFrom(s)
			return
		}
		var o envValueFromJSON
		d.mapping(n, path, false, map[string]field{"environment": d.str(&o.Environment), "output": d.str(&o.Output)})
		if o.Environment == "" {
			d.errorf(n, path+".environment", "name the producer as TEAM/ENV", "missing required field")
		}
		if o.Output == "" {
			d.errorf(n, path+".output", "name the producer's exported output as COMPONENT.OUTPUT", "missing required field")
		}
		*dst = EnvValueFrom(o.Environment, o.Output)
	}
}

func (d *decoder) exports(dst *[]Export) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var e Export
			d.mapping(item, p, false, map[string]field{"output": d.str(&e.Output), "teams": d.strList(&e.Teams)})
			*dst = append(*dst, e)
		})
	}
}

// EnvReadProblem is what a store found wrong with one read of another
// environment's output (Field, as EnvReads names it): an Error, or a
// warning.
type EnvReadProblem struct {
	Field, Message, Hint string
	Error                bool
}

// EnvReadProblems are a file's, in its order.
type EnvReadProblems []EnvReadProblem

// Diagnostics places each problem in e's file.
func (ps EnvReadProblems) Diagnostics(e *Environment) diag.Diagnostics {
	var out diag.Diagnostics
	for _, p := range ps {
		d := errAt(e, p.Field, "", p.Message, p.Hint)
		if !p.Error {
			d.Severity = diag.Warning
		}
		out = append(out, d)
	}
	return out
}
