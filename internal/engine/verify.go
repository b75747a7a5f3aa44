package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/spec"
)

// Verifier runs an applied environment's health checks (health.Runner
// does, on its clock). An Engine without one verifies on the real clock.
type Verifier interface {
	Verify(ctx context.Context, targets []health.Target) health.Report
}

// VerificationError fails an apply whose health checks did not all
// succeed: Report holds every verdict and its evidence.
type VerificationError struct {
	Report health.Report
}

func (e *VerificationError) Error() string { return e.Report.Summary() }

// Reason is the verification's outcome as data.
func (e *VerificationError) Reason() Reason {
	if e.Report.Verdict == health.Inconclusive {
		return ReasonVerificationInconclusive
	}
	return ReasonVerificationFailed
}

// verify runs, after an apply that left every component applied, the
// health checks of the components it applied and the environment's own:
// the run succeeds only when each is Successful. Runs whose components
// failed or wait for approval, and runs without checks, are not verified.
func (s *session) verify(ctx context.Context) error {
	if s.kind != KindApply || ctx.Err() != nil || s.result.Failed() || s.result.Awaiting() {
		return nil
	}
	targets := s.healthTargets()
	if len(targets) == 0 {
		return nil
	}
	s.publish(Event{Kind: Verifying, RunKind: s.kind})
	verifier := s.e.Verifier
	if verifier == nil {
		verifier = health.Runner{Clock: health.SystemClock{}}
	}
	rep := verifier.Verify(ctx, targets)
	s.result.Verification = &rep
	for _, r := range rep.Results {
		ev := Event{Kind: HealthChecked, Component: r.Component, Code: string(r.Verdict) + ": " + r.Check, Reason: r.Message}
		if m := r.Last(); m.Message != "" {
			ev.Reason += ": " + m.Message
		}
		if r.Verdict != health.Successful {
			err := &VerificationError{Report: health.Report{Verdict: r.Verdict}}
			ev.Cause = err.Reason().Cause()
		}
		s.publish(ev)
	}
	if ctx.Err() != nil {
		return nil // the run is interrupted, not failed
	}
	if rep.Verdict != health.Successful {
		return &VerificationError{Report: rep}
	}
	return nil
}

// healthTargets are the checks to run: each applied component's (in
// graph order), then the environment's.
func (s *session) healthTargets() []health.Target {
	secrets := s.secrets()
	var targets []health.Target
	for _, cr := range s.result.Components {
		c := s.env.Component(cr.Name)
		if c == nil || len(c.Health) == 0 || cr.Status == Destroyed || cr.Status.IsError() {
			continue
		}
		env := health.Env{Resolve: s.output, Dir: s.e.workDir(s.env, c), Vars: procexec.ToolEnv(nil, nil), Secrets: secrets}
		for _, h := range c.Health {
			targets = append(targets, target(c.Name, h, env))
		}
	}
	if h := s.env.Spec.Health; h != nil {
		env := health.Env{Resolve: s.output, Dir: s.env.Dir, Vars: procexec.ToolEnv(nil, nil), Secrets: secrets}
		for _, c := range h.Checks {
			targets = append(targets, target("", c, env))
		}
	}
	return targets
}

func target(component string, h spec.HealthCheck, env health.Env) health.Target {
	c, err := health.FromSpec(h, env)
	if err != nil {
		c.Name = h.Name
	}
	return health.Target{Component: component, Check: c, Broken: err}
}

// output reads component.output from the components' states, as a
// string (a check's URL).
func (s *session) output(ref string) (string, error) {
	r, ok := spec.ParseValueFrom(ref)
	if !ok {
		return "", fmt.Errorf("bad valueFrom %q", ref)
	}
	out, ok := s.state(r.Component).Outputs[r.Output]
	if !ok {
		return "", fmt.Errorf("%s has no output %q", r.Component, r.Output)
	}
	var v any
	if err := json.Unmarshal(out.Value, &v); err != nil {
		return "", fmt.Errorf("output %s is unreadable: %w", ref, err)
	}
	if r.Index != nil {
		list, ok := v.([]any)
		if !ok || *r.Index >= len(list) {
			return "", fmt.Errorf("output %s: no element [%d]", ref, *r.Index)
		}
		v = list[*r.Index]
	}
	str, ok := v.(string)
	if !ok {
		return "", errors.New("output " + ref + " is not a string")
	}
	return str, nil
}

// secrets are every sensitive output's values: a check's evidence never shows them.
func (s *session) secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, st := range s.states {
		out = append(out, storedSecrets(st.Outputs)...)
	}
	return out
}
