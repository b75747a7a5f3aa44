package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
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

// verification is the health follow-up of an apply: it collects the
// check blocks its tools reported failed, runs the health checks once the
// components are applied, and says what the outcome leads to (the
// rollout) and what the revision keeps of it.
type verification struct {
	s  *session
	mu sync.Mutex
	// checkFailures are the tool's own checks (OpenTofu check blocks)
	// that failed in this run's applies, by component: verify reports them.
	checkFailures map[string][]runner.CheckFailure
}

// verify runs, after an apply that left every component applied, the
// health checks of the components it applied and the environment's own:
// the run succeeds only when each is Successful. Runs whose components
// failed or wait for approval, and runs without checks, are not verified.
func (v *verification) verify(ctx context.Context) error {
	if !v.s.applies() || ctx.Err() != nil || v.s.result.Failed() || v.s.result.Awaiting() || v.s.result.WaitingUpstream() {
		return nil
	}
	targets := v.healthTargets()
	if len(targets) == 0 {
		return nil
	}
	v.s.handle.verifying.Store(true)
	defer v.s.handle.verifying.Store(false)
	v.s.publish(Event{Kind: Verifying, RunKind: v.s.kind})
	rep := v.s.e.verifier().Verify(ctx, targets)
	v.s.result.Verification = &rep
	if ctx.Err() == nil {
		v.s.runFailed(v.s.e.RecordHealth(v.s.db, HealthView(rep, v.s.e.now(), v.s.run.ID), v.s.env.ID()))
	}
	for _, r := range rep.Results {
		ev := Event{Kind: HealthChecked, Component: r.Component, Code: string(r.Verdict) + ": " + r.Check, Reason: r.Message}
		if m := r.Last(); m.Message != "" {
			ev.Reason += ": " + m.Message
		}
		if r.Verdict != health.Successful {
			err := &VerificationError{Report: health.Report{Verdict: r.Verdict}}
			ev.Cause = err.Reason().Cause()
		}
		v.s.publish(ev)
	}
	if ctx.Err() != nil {
		return nil // the run is interrupted, not failed
	}
	if rep.Verdict != health.Successful {
		return &VerificationError{Report: rep}
	}
	return nil
}

// healthTargets are the checks to run after this run's apply: each
// component's it applied or found up to date (in graph order), then the
// environment's.
func (v *verification) healthTargets() []health.Target {
	var names []string
	for _, cr := range v.s.result.Components {
		if cr.Status != Destroyed && !cr.Status.IsError() {
			names = append(names, cr.Name)
		}
	}
	states := v.s.snapshot()
	v.mu.Lock()
	failures := v.checkFailures
	v.mu.Unlock()
	targets := v.s.e.healthTargets(v.s.env, names, states, v.s.upstream)
	// A check block that failed in an apply is a failed check of its
	// component, decided by the tool: nothing to measure again.
	for _, name := range names {
		for _, f := range failures[name] {
			targets = append(targets, health.Target{Component: name, Check: health.Check{Name: "check." + f.Check},
				Decided: &health.Result{Check: "check." + f.Check, Verdict: health.Failed, Reason: health.ReasonCheckBlock, Message: f.Message}})
		}
	}
	return targets
}

// checkFailed records, for name, a check block that failed in its apply.
func (v *verification) checkFailed(name string) func(runner.CheckFailure) {
	return func(f runner.CheckFailure) {
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.checkFailures == nil {
			v.checkFailures = map[string][]runner.CheckFailure{}
		}
		v.checkFailures[name] = append(v.checkFailures[name], f)
	}
}

// CheckHealth runs env's health checks now, against what is applied: the
// checks of every component whose stored state is applied (in graph
// order), then the environment's; none for a torn-down environment. It
// takes no lock and changes nothing.
func (e *Engine) CheckHealth(ctx context.Context, env *spec.Environment) (health.Report, error) {
	if env.Spec.Teardown {
		return health.Report{Verdict: health.Successful}, nil // torn down: nothing to check
	}
	states, err := e.Store.ComponentStates(ctx, env.ID())
	if err != nil {
		return health.Report{}, fmt.Errorf("read component states: %w", err)
	}
	levels, err := env.Graph().Levels()
	if err != nil {
		return health.Report{}, err
	}
	var names []string
	for _, level := range levels {
		for _, n := range level {
			if states[n].Status == stateApplied {
				names = append(names, n)
			}
		}
	}
	return e.verifier().Verify(ctx, e.healthTargets(env, names, states, newEnvReader(ctx, e.Store, env))), nil
}

func (e *Engine) verifier() Verifier {
	if e.Verifier == nil {
		return health.Runner{Clock: health.SystemClock{}}
	}
	return e.Verifier
}

// healthTargets are the checks of the named components, then env's own;
// valueFrom reads states' outputs, and every sensitive output is kept out
// of evidence.
func (e *Engine) healthTargets(env *spec.Environment, names []string, states map[string]store.ComponentState, ext *envReader) []health.Target {
	out := outputReader(states, ext)
	secrets := ext.secrets(env)
	for _, st := range states {
		secrets = append(secrets, storedSecrets(st.Outputs)...)
	}
	vars := procexec.ToolEnv(nil, nil)
	// Evidence is masked by the engine's one rule: every secret, and every
	// value of the tool environment a command check sees.
	hidden := slices.Clone(secrets)
	for _, kv := range vars {
		if _, v, ok := strings.Cut(kv, "="); ok {
			hidden = append(hidden, v)
		}
	}
	mask := newMasker(hidden).text
	var targets []health.Target
	for _, name := range names {
		c := env.Component(name)
		if c == nil {
			continue
		}
		henv := health.Env{Resolve: out, Dir: e.workDir(env, c), Vars: vars, Secrets: secrets, Mask: mask}
		if c.IsKubernetes() {
			henv.Workloads, henv.NoWorkloads = e.workloads(env, c, states, ext)
		}
		for _, h := range c.Health {
			targets = append(targets, target(c.Name, h, henv))
		}
	}
	if h := env.Spec.Health; h != nil {
		henv := health.Env{Resolve: out, Dir: env.Dir, Vars: vars, Secrets: secrets, Mask: mask}
		for _, c := range h.Checks {
			targets = append(targets, target("", c, henv))
		}
	}
	return targets
}

// workloads is how a kubernetes check of c looks at its workloads: through
// c's runner, with c's inputs (its cluster access) read from states.
func (e *Engine) workloads(env *spec.Environment, c *spec.Component, states map[string]store.ComponentState, ext *envReader) (func(context.Context, []string) (health.Workloads, error), error) {
	r, err := e.runnerFor(c)
	if err != nil {
		return nil, err
	}
	wr, ok := r.(runner.WorkloadReader)
	if !ok {
		return nil, fmt.Errorf("the %s runner cannot look at workloads", c.Type)
	}
	in, _, sensitive, err := resolveInputs(c, func(name string) store.ComponentState { return states[name] }, ext)
	if err != nil {
		return nil, err
	}
	rc := runner.Component{Env: env.ID(), Spec: env, Def: c, WorkDir: e.workDir(env, c), Log: io.Discard, Sensitive: sensitive}
	return func(ctx context.Context, objects []string) (health.Workloads, error) {
		return wr.Workloads(ctx, rc, in, objects)
	}, nil
}

func target(component string, h spec.HealthCheck, env health.Env) health.Target {
	c, err := health.FromSpec(h, env)
	if err != nil {
		c.Name = h.Name
	}
	return health.Target{Component: component, Check: c, Broken: err}
}

// outputReader reads component.output from states, or another
// environment's output through ext, as a string (a check's URL).
func outputReader(states map[string]store.ComponentState, ext *envReader) func(ref string) (string, error) {
	return func(ref string) (string, error) {
		if er, ok := spec.ValueFrom(ref).EnvOutput(); ok {
			v, _, err := ext.value("url", er)
			if s, isStr := v.(string); err == nil && isStr {
				return s, nil
			} else if err == nil {
				err = errors.New("output " + er.String() + " is not a string")
			}
			return "", err
		}
		r, ok := spec.ParseValueFrom(spec.ValueFrom(ref))
		if !ok {
			return "", fmt.Errorf("bad valueFrom %q", ref)
		}
		o, ok := states[r.Component].Outputs[r.Output]
		if !ok {
			return "", fmt.Errorf("%s has no output %q", r.Component, r.Output)
		}
		var v any
		if err := json.Unmarshal(o.Value, &v); err != nil {
			return "", fmt.Errorf("output %s is unreadable: %w", ref, err)
		}
		v, err := element(v, r)
		if err != nil {
			return "", err
		}
		str, ok := v.(string)
		if !ok {
			return "", errors.New("output " + ref + " is not a string")
		}
		return str, nil
	}
}

// HealthSetting is the server setting under which an environment's last
// health check is kept (a key per environment, small JSON): no table of
// its own, since only the newest one is ever shown.
const HealthSetting = "health/"

// HealthView is rep as the environment's view shows it, checked at at
// (runID: the apply it verified, "" otherwise).
func HealthView(rep health.Report, at time.Time, runID string) view.Health {
	h := view.Health{Verdict: string(rep.Verdict), CheckedAt: at.UTC(), RunID: runID, Checks: make([]view.HealthCheck, 0, len(rep.Results))}
	for _, r := range rep.Results {
		h.Checks = append(h.Checks, view.HealthCheck{Component: r.Component, Name: r.Check, Verdict: string(r.Verdict),
			Measured: len(r.Measurements), Evidence: r.Last().Evidence(), Message: r.Message})
	}
	return h
}

// RecordHealth keeps h as envID's last health check.
func (e *Engine) RecordHealth(ctx context.Context, h view.Health, envID string) error {
	raw, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := e.Store.SetSetting(ctx, HealthSetting+envID, string(raw)); err != nil {
		return fmt.Errorf("record the health of %s: %w", envID, err)
	}
	return nil
}
