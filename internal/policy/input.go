package policy

import (
	"strings"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// Input is the one document every policy sees as input: the environment,
// the run and every component's plan. Its JSON schema is
// docs/policy-input.schema.json; fields are only ever added, so policies
// written today keep working. It never holds a secret: sensitive values,
// and any value holding the text of a secret knit passed a component, are
// Masked.
type Input struct {
	Environment Environment `json:"environment"`
	Run         Run         `json:"run"`
	Components  []Component `json:"components"`
}

// Masked stands in the input for a sensitive value.
const Masked = runner.MaskedValue

// Environment is input.environment.
type Environment struct {
	Team        string            `json:"team"`
	Env         string            `json:"env"`
	Name        string            `json:"name"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	// Revision is the revision the run converges to (apply, teardown) or
	// the applied one it plans against; 0 for a plan of an edited file.
	Revision int    `json:"revision"`
	Commit   string `json:"commit"`
	Author   string `json:"author"`
	// RequireOtherApprover is spec.approval.requireOtherApprover.
	RequireOtherApprover bool `json:"requireOtherApprover"`
	AutoApprove          bool `json:"autoApprove"`
	Teardown             bool `json:"teardown"`
}

// Run is input.run.
type Run struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Actor  string `json:"actor"`
	Reason string `json:"reason"`
	Source string `json:"source"`
	// Time is when the run started, RFC 3339 in UTC; TimeNs the same in
	// nanoseconds since the epoch (for Rego's time.* built-ins).
	Time   string `json:"time"`
	TimeNs int64  `json:"time_ns"`
}

// Component is one element of input.components.
type Component struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	Source  string `json:"source"`
	Version string `json:"version"`
	// Gated: the component waits for a person before it applies.
	Gated bool `json:"gated"`
	// Destroy: the plan destroys the component (destroy: true, removed
	// from the file, or a teardown); Removed: it is no longer in the file.
	Destroy bool `json:"destroy"`
	Removed bool `json:"removed"`
	// Planned is false when no plan could be made before the run;
	// Unplanned says why (an input known only after an upstream applies).
	Planned       bool       `json:"planned"`
	Unplanned     string     `json:"unplanned,omitempty"`
	Changes       Changes    `json:"changes"`
	Resources     []Resource `json:"resources"`
	OutputChanges []string   `json:"outputChanges"`
	// Target is where the plan applies, when the tool says (Kubernetes:
	// context and API server).
	Target string `json:"target,omitempty"`
}

// Changes are a plan's counts, as OpenTofu's summary line has them.
type Changes struct {
	Add     int `json:"add"`
	Change  int `json:"change"`
	Destroy int `json:"destroy"`
}

// Resource is one resource (or Kubernetes object) a plan touches.
type Resource struct {
	Address string `json:"address"`
	Type    string `json:"type"`
	// Actions are OpenTofu's words: create, update, delete, read, no-op
	// (a replacement is ["delete", "create"]), forget.
	Actions []string `json:"actions"`
	// Before and After are the whole values where the tool gives them
	// (OpenTofu), null otherwise; AfterUnknown marks what is known only
	// after apply.
	Before       any `json:"before"`
	After        any `json:"after"`
	AfterUnknown any `json:"after_unknown"`
	// Diff lists the values that differ, for every tool that says
	// (OpenTofu attributes, Kubernetes object fields of helm and
	// manifests components), as display strings.
	Diff []ValueDiff `json:"diff"`
}

// ValueDiff is one differing value: its path, old and new, rendered.
type ValueDiff struct {
	Path string `json:"path"`
	Old  string `json:"old"`
	New  string `json:"new"`
}

// BuildInput is the input of p. Every string holding the text of a
// secret the component was given (PlannedComponent.Secrets) is Masked.
func BuildInput(p *engine.EnvPlan) *Input {
	env := p.Env
	in := &Input{
		Environment: Environment{
			Team: env.Spec.TeamName, Env: env.Spec.EnvName, Name: env.Metadata.Name,
			Labels: nonNil(env.Metadata.Labels), Annotations: nonNil(env.Metadata.Annotations),
			Revision: p.Run.Revision, Commit: p.Run.Commit, Author: p.Run.Author,
			RequireOtherApprover: env.Spec.Approval != nil && env.Spec.Approval.RequireOtherApprover,
			AutoApprove:          env.Spec.AutoApprove, Teardown: env.Spec.Teardown,
		},
		Run: Run{ID: p.Run.ID, Kind: p.Run.Kind, Actor: p.Run.Actor, Reason: p.Run.Reason, Source: p.Run.Source,
			Time: p.Run.Time.UTC().Format(time.RFC3339), TimeNs: p.Run.Time.UnixNano()},
		Components: make([]Component, 0, len(p.Components)),
	}
	for _, pc := range p.Components {
		in.Components = append(in.Components, component(pc))
	}
	return in
}

func component(pc engine.PlannedComponent) Component {
	c := Component{Name: pc.Name, Gated: pc.Gated, Removed: pc.Removed, Unplanned: pc.Unplanned,
		Resources: []Resource{}, OutputChanges: []string{}}
	if pc.Def != nil {
		c.Type = pc.Def.Type
		c.Source, c.Version = sourceOf(pc.Def)
	}
	p := pc.Plan
	if p == nil {
		return c
	}
	c.Planned, c.Destroy, c.Target = true, p.Destroying || pc.Removed, p.Target
	c.Changes = Changes{Add: p.Add, Change: p.Change, Destroy: p.Destroy}
	c.OutputChanges = append(c.OutputChanges, p.OutputChanges...)
	mask := masker(pc.Secrets)
	for _, rc := range p.Resources {
		r := Resource{Address: rc.Address, Type: resourceType(rc.Address), Actions: actions(rc.Action),
			Before: mask(rc.Before), After: mask(rc.After), AfterUnknown: rc.AfterUnknown, Diff: []ValueDiff{}}
		for _, v := range rc.Changes {
			r.Diff = append(r.Diff, ValueDiff{Path: v.Path, Old: maskText(v.Old, pc.Secrets), New: maskText(v.New, pc.Secrets)})
		}
		c.Resources = append(c.Resources, r)
	}
	return c
}

// sourceOf is where a component's code comes from, and its version.
func sourceOf(c *spec.Component) (source, version string) {
	switch {
	case c.Module != nil:
		return c.Module.Source, c.Module.Version
	case c.Chart != nil:
		ch := c.Chart
		switch {
		case ch.Repo != "":
			return ch.Repo, ch.Version
		case ch.Git != "":
			// As OpenTofu writes a module from git, so that a policy never
			// takes a git URL for a chart repository.
			return "git::" + ch.Git, ch.Ref
		}
		return ch.Path, ch.Version
	case c.Manifests != nil:
		return c.Manifests.Path, ""
	}
	return "", ""
}

// actions says a runner's action in OpenTofu's words.
func actions(a runner.Action) []string {
	switch a {
	case runner.ActionReplace:
		return []string{"delete", "create"}
	case "", runner.ActionKeep:
		return []string{"no-op"}
	}
	return []string{string(a)}
}

// resourceType is the resource type of an OpenTofu address
// (module.m.aws_s3_bucket.b["x"] → aws_s3_bucket, data.http.x → http);
// for another tool's address (a Kubernetes object: apps/v1/Deployment/ns/name)
// the part before the last name.
func resourceType(addr string) string {
	addr, _, _ = strings.Cut(addr, " (") // " (deposed …)"
	var parts []string
	depth := 0
	start := 0
	for i, r := range addr {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case '.':
			if depth == 0 {
				parts = append(parts, addr[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, addr[start:])
	for len(parts) >= 2 && parts[0] == "module" {
		parts = parts[2:]
	}
	if len(parts) >= 1 && parts[0] == "data" {
		parts = parts[1:]
	}
	if len(parts) >= 2 {
		return parts[0]
	}
	if i := strings.LastIndex(addr, "/"); i > 0 {
		return addr[:i]
	}
	return ""
}

// masker returns a function replacing, in a value, every string that
// holds one of secrets with Masked.
func masker(secrets []string) func(any) any {
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return maskText(x, secrets)
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = walk(e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e)
			}
			return out
		}
		return v
	}
	return walk
}

func maskText(s string, secrets []string) string {
	for _, sec := range secrets {
		if sec != "" && strings.Contains(s, sec) {
			return Masked
		}
	}
	return s
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}
