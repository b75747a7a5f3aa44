package terraform

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	tfjson "github.com/hashicorp/terraform-json"

	"knit.dev/knit/internal/runner"
)

// Plan lays out the work dir, runs init if needed, and saves a plan to
// <WorkDir>/plan.tfplan (replacing the previous one, which invalidates any
// approval of it). It changes no real resources and no state.
//
// The plan is read from the tool's machine-readable stream (plan -json):
// counts, resource actions and output changes. `show -json` of the saved
// plan runs only when the plan has changes and the caller asked for what
// only it gives: changed attribute names (opts.Attributes, when a resource
// is updated or replaced) or planned output values (opts.KnownOutputs, when
// an output changes). A plan without changes never costs a second run.
func (r *Runner) Plan(ctx context.Context, c runner.Component, in runner.Inputs, opts runner.PlanOptions) (*runner.Plan, error) {
	if opts.Destroy && opts.RefreshOnly {
		return nil, fmt.Errorf("plan %s: a plan cannot be both destroy and refresh-only", compName(c))
	}
	p, err := r.prepare(ctx, c, in)
	if err != nil {
		return nil, wrap("plan", c, err)
	}
	wd, _ := workDir(c)
	file := filepath.Join(wd, planFile)
	plan, err := r.planIn(ctx, c, p, file, opts)
	if err != nil {
		return nil, err
	}
	plan.Module = p.layout.shown
	if opts.Unsaved {
		if !needsShow(plan, opts) {
			plan.Destroying = opts.Destroy
			return plan, nil
		}
		// The detail asked for is only in a saved plan: a component with
		// changes is planned again, saving it (an unsaved plan spares a
		// file and its encryption to the many without changes).
		opts.Unsaved = false
		return r.Plan(ctx, c, in, opts)
	}
	sum, err := hashFile(file)
	if err != nil {
		return nil, wrap("plan", c, err)
	}
	plan.File, plan.Checksum, plan.Destroying = file, sum, opts.Destroy
	return plan, nil
}

// planIn runs the plan in p's folder, saving it to file (unless
// opts.Unsaved), and reads it: from the stream, and from show -json of the
// saved file when the caller asked for what only that gives.
func (r *Runner) planIn(ctx context.Context, c runner.Component, p *prepared, file string, opts runner.PlanOptions) (*runner.Plan, error) {
	var st *stream
	err := r.withInit(ctx, p, func() (err error) {
		st, err = p.s.stream(ctx, p.s.lockArgs(planArgs(file, opts)))
		return err
	})
	if err != nil {
		return nil, wrap("plan", c, err)
	}
	plan := st.plan(opts.RefreshOnly)
	if !opts.Unsaved && needsShow(&plan, opts) {
		var raw tfjson.Plan
		if err := p.s.json(ctx, showPlanArgs(file), &raw); err != nil {
			return nil, wrap("show plan", c, err)
		}
		plan = summarize(&raw, opts.RefreshOnly)
	}
	return &plan, nil
}

// needsShow reports whether the stream's plan lacks something the caller
// asked for and only show -json gives.
func needsShow(p *runner.Plan, opts runner.PlanOptions) bool {
	if !p.HasChanges() {
		return false
	}
	return opts.Values || (opts.Attributes && hasAttributeChanges(p)) || (opts.KnownOutputs && !opts.Destroy && len(p.OutputChanges) > 0)
}

// Apply applies exactly the saved plan p.File, after checking that its
// SHA-256 still equals p.Checksum (else ErrPlanChanged), and returns the
// outputs: those of apply -json's outputs message, or, when a sensitive one
// is redacted there, all of them from output -json. A destroy plan is
// applied the same way. Apply does not re-copy the module: the plan carries
// its own configuration. The tool itself refuses a plan made against state
// that has changed since, or given variables that differ from the plan's:
// that error wraps runner.ErrStalePlan.
func (r *Runner) Apply(ctx context.Context, c runner.Component, p *runner.Plan) (runner.Outputs, error) {
	if p == nil || p.File == "" {
		return nil, fmt.Errorf("apply %s: no saved plan", compName(c))
	}
	sum, err := hashFile(p.File)
	if errors.Is(err, os.ErrNotExist) || (err == nil && sum != p.Checksum) {
		return nil, fmt.Errorf("apply %s: %w", compName(c), ErrPlanChanged)
	}
	if err != nil {
		return nil, wrap("apply", c, err)
	}
	if r.opts.States != nil {
		// The plan may come from another replica: this one's work dir is
		// a cache, rebuilt from the revision when it is missing.
		if err := r.rebuild(ctx, c); err != nil {
			return nil, wrap("apply", c, err)
		}
	}
	dir, err := runDir(c)
	if err != nil {
		return nil, wrap("apply", c, err)
	}
	// A saved plan holds its variables: none is passed again.
	s, err := r.markedSession(c, dir, nil)
	if err != nil {
		return nil, wrap("apply", c, err)
	}
	if err := r.pushErrored(ctx, c, dir, s.readOnly); err != nil {
		return nil, wrap("apply", c, err)
	}
	st, err := s.writing().stream(ctx, applyArgs(p.File))
	if perr := r.pushErrored(ctx, c, dir, s.readOnly); err == nil {
		err = perr
	}
	if err != nil {
		return nil, wrap("apply", c, stalePlan(err))
	}
	st.reportChecks(c)
	outs, complete, err := st.appliedOutputs()
	if err != nil {
		return nil, wrap("outputs", c, err)
	}
	if complete {
		return outs, nil
	}
	// The stream redacts sensitive values: read them all from the state.
	return r.outputs(ctx, c, s)
}
