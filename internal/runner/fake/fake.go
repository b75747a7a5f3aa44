// Package fake is an in-memory runner.Runner for engine unit tests: it
// records every call, can block or fail on demand, and treats a component's
// "world" as its last applied inputs.
package fake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"knit.dev/knit/internal/runner"
)

// Call is one recorded runner call.
type Call struct {
	Op        string // fingerprint, prepare, plan, apply, destroy, outputs
	Component string
	Inputs    runner.Inputs
	Start     time.Time
	End       time.Time
}

// Runner is a fake runner. Set fields before use; it is safe for concurrent use.
type Runner struct {
	// OutputsFor computes a component's outputs from its inputs; nil: no outputs.
	OutputsFor func(component string, in runner.Inputs) runner.Outputs
	// Fail makes the named operation ("plan", "apply", "destroy") of a component fail.
	Fail map[string]map[string]error
	// UnknownUntilApply names components whose plans do not know their
	// outputs (like a cloud ID); the others' plans know them from the inputs.
	UnknownUntilApply map[string]bool
	// Unchecked names components whose plans do not look at the world
	// (runner.Plan.Unchecked, a script without plan): once applied, they
	// change only when their inputs do.
	Unchecked map[string]bool
	// LogInputs makes Apply print each input as name=value to the log, as
	// a careless tool would.
	LogInputs bool
	// Hook, when set, runs at the start of every plan/apply/destroy (e.g. to block).
	Hook func(ctx context.Context, op, component string) error
	// Ahead makes PrepareAhead do something: record a "prepare" call, log
	// a line, and run Hook with op "prepare". Otherwise it does nothing.
	Ahead bool
	// RefuseStale makes Apply refuse (runner.ErrStalePlan), as OpenTofu
	// refuses a plan made against older state, a plan made before the
	// component's world last changed (an apply, a destroy, Drift).
	RefuseStale bool

	mu      sync.Mutex
	calls   []Call
	applied map[string]runner.Inputs // the "world": last applied inputs
	outs    map[string]runner.Outputs
	// changes counts, per component, the changes of its world; planned
	// is that count when each plan file was last written.
	changes map[string]int
	planned map[string]int
}

// changed counts a change of component's world; r.mu is held.
func (r *Runner) changed(component string) {
	if r.changes == nil {
		r.changes = map[string]int{}
	}
	r.changes[component]++
}

func (r *Runner) record(c Call) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, c)
}

// Calls returns the recorded calls, optionally only those of op.
func (r *Runner) Calls(op string) []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Call
	for _, c := range r.calls {
		if op == "" || c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// Drift simulates an out-of-band change: the component's resources vanish
// from the world, so the next plan re-creates them (and changes its outputs).
func (r *Runner) Drift(component string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.applied, component)
	r.changed(component)
}

// Applied reports whether the component currently exists in the fake world.
func (r *Runner) Applied(component string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.applied[component]
	return ok
}

func (r *Runner) begin(ctx context.Context, op, comp string) error {
	if r.Hook != nil {
		if err := r.Hook(ctx, op, comp); err != nil {
			return err
		}
	}
	if err := r.Fail[comp][op]; err != nil {
		return err
	}
	return ctx.Err()
}

var _ runner.Preparer = (*Runner)(nil)

// PrepareAhead stands for work done before a component's turn (see Ahead).
func (r *Runner) PrepareAhead(ctx context.Context, c runner.Component) error {
	if !r.Ahead {
		return nil
	}
	call := Call{Op: "prepare", Component: c.Def.Name, Start: time.Now()}
	defer func() { call.End = time.Now(); r.record(call) }()
	fmt.Fprintf(c.Log, "prepared %s ahead\n", c.Def.Name)
	return r.begin(ctx, "prepare", c.Def.Name)
}

// Fingerprint hashes the component name and inputs.
func (r *Runner) Fingerprint(_ context.Context, c runner.Component, in runner.Inputs) (string, error) {
	r.record(Call{Op: "fingerprint", Component: c.Def.Name, Inputs: in})
	b, _ := json.Marshal(in)
	sum := sha256.Sum256(append([]byte(c.Def.Name+"\x00"), b...))
	return hex.EncodeToString(sum[:]), nil
}

// Plan has changes when the component does not exist or its inputs differ.
func (r *Runner) Plan(ctx context.Context, c runner.Component, in runner.Inputs, opts runner.PlanOptions) (*runner.Plan, error) {
	call := Call{Op: "plan", Component: c.Def.Name, Inputs: in, Start: time.Now()}
	defer func() { call.End = time.Now(); r.record(call) }()
	if err := r.begin(ctx, "plan", c.Def.Name); err != nil {
		return nil, err
	}
	fmt.Fprintf(c.Log, "planning %s\n", c.Def.Name)
	r.mu.Lock()
	prev, exists := r.applied[c.Def.Name]
	version := r.changes[c.Def.Name]
	r.mu.Unlock()
	p := &runner.Plan{Destroying: opts.Destroy, Unchecked: r.Unchecked[c.Def.Name]}
	pb, _ := json.Marshal(prev)
	ib, _ := json.Marshal(in)
	switch {
	case opts.Destroy && exists:
		p.Destroy = 1
	case opts.Destroy:
	case !exists:
		p.Add = 1
	case string(pb) != string(ib):
		p.Change = 1
	}
	p.Resources = nil
	if !exists && !opts.Destroy && r.OutputsFor != nil {
		// Re-creating a resource gives new output values.
		for name := range r.OutputsFor(c.Def.Name, in) {
			p.OutputChanges = append(p.OutputChanges, name)
		}
		sort.Strings(p.OutputChanges)
	}
	if !opts.Destroy && r.OutputsFor != nil && !r.UnknownUntilApply[c.Def.Name] {
		p.PlannedOutputs = r.OutputsFor(c.Def.Name, in)
	}
	if p.HasChanges() {
		action := runner.ActionCreate
		switch {
		case opts.Destroy:
			action = runner.ActionDelete
		case exists:
			action = runner.ActionUpdate
		}
		p.Resources = []runner.ResourceChange{{Address: "fake." + c.Def.Name, Action: action}}
	}
	// Like a real tool, the plan is saved to a file that Apply applies exactly.
	p.File = filepath.Join(c.WorkDir, "fake.plan")
	if err := os.WriteFile(p.File, ib, 0o600); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(ib)
	p.Checksum = hex.EncodeToString(sum[:])
	r.mu.Lock()
	if r.planned == nil {
		r.planned = map[string]int{}
	}
	r.planned[p.File] = version
	r.mu.Unlock()
	return p, nil
}

// Apply makes the planned inputs the component's world and returns outputs.
func (r *Runner) Apply(ctx context.Context, c runner.Component, p *runner.Plan) (runner.Outputs, error) {
	call := Call{Op: "apply", Component: c.Def.Name, Start: time.Now()}
	defer func() { call.End = time.Now(); r.record(call) }()
	if err := r.begin(ctx, "apply", c.Def.Name); err != nil {
		return nil, err
	}
	body, err := os.ReadFile(p.File)
	if err != nil {
		return nil, err
	}
	if sum := sha256.Sum256(body); hex.EncodeToString(sum[:]) != p.Checksum {
		return nil, fmt.Errorf("plan file %s changed since it was made", p.File)
	}
	var in runner.Inputs
	_ = json.Unmarshal(body, &in)
	call.Inputs = in
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.RefuseStale && r.planned[p.File] != r.changes[c.Def.Name] {
		return nil, fmt.Errorf("Saved plan is stale: %s changed since %s was made: %w", c.Def.Name, p.File, runner.ErrStalePlan)
	}
	r.changed(c.Def.Name)
	if r.applied == nil {
		r.applied, r.outs = map[string]runner.Inputs{}, map[string]runner.Outputs{}
	}
	if p.Destroying {
		delete(r.applied, c.Def.Name)
		delete(r.outs, c.Def.Name)
		return runner.Outputs{}, nil
	}
	r.applied[c.Def.Name] = in
	outs := runner.Outputs{}
	if r.OutputsFor != nil {
		outs = r.OutputsFor(c.Def.Name, in)
	}
	r.outs[c.Def.Name] = outs
	if r.LogInputs {
		names := make([]string, 0, len(in))
		for k := range in {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			fmt.Fprintf(c.Log, "%s=%v\n", k, in[k])
		}
	}
	fmt.Fprintf(c.Log, "applied %s\n", c.Def.Name)
	return outs, nil
}

// Destroy removes the component from the fake world.
func (r *Runner) Destroy(ctx context.Context, c runner.Component, in runner.Inputs) error {
	call := Call{Op: "destroy", Component: c.Def.Name, Inputs: in, Start: time.Now()}
	defer func() { call.End = time.Now(); r.record(call) }()
	if err := r.begin(ctx, "destroy", c.Def.Name); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.applied, c.Def.Name)
	delete(r.outs, c.Def.Name)
	r.changed(c.Def.Name)
	return nil
}

// Outputs returns the component's outputs as of its last apply.
func (r *Runner) Outputs(_ context.Context, c runner.Component) (runner.Outputs, error) {
	r.record(Call{Op: "outputs", Component: c.Def.Name})
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outs[c.Def.Name], nil
}
