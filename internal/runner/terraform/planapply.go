package terraform

import (
	"context"
	"os"
	"path/filepath"

	"knit.dev/knit/internal/runner"
)

var _ runner.PlanApplier = (*Runner)(nil)

// PlanApply lays out the work dir, runs init if needed, and applies the
// component's changes in one tool process (apply -json without a saved
// plan): for a component that nobody approves, a separate plan would only
// cost a second process. What changed is read from the same stream as
// Plan reads (planned_change messages: counts and resource actions; the
// plan's outputs message: output changes; no attribute names), the outputs
// from the outputs message after the apply, or,
// when a sensitive one is redacted there, from output -json.
//
// A saved plan left by an earlier Plan is removed: it was made against
// the state this apply replaces, so it could never be applied.
func (r *Runner) PlanApply(ctx context.Context, c runner.Component, in runner.Inputs) (*runner.Plan, runner.Outputs, error) {
	p, err := r.prepare(ctx, c, in)
	if err != nil {
		return nil, nil, wrap("apply", c, err)
	}
	wd, _ := workDir(c)
	if err := os.Remove(filepath.Join(wd, planFile)); err != nil && !os.IsNotExist(err) {
		return nil, nil, wrap("apply", c, err)
	}
	var st *stream
	err = r.withInit(ctx, p, func() (err error) {
		st, err = p.s.writing().stream(ctx, planApplyArgs())
		return err
	})
	if perr := r.pushErrored(ctx, c, p.dir, p.s.readOnly); err == nil {
		err = perr
	}
	if err != nil {
		return nil, nil, wrap("apply", c, err)
	}
	st.reportChecks(c)
	plan := st.plan(false)
	outs, complete, err := st.appliedOutputs()
	if err != nil {
		return nil, nil, wrap("outputs", c, err)
	}
	if !complete {
		if outs, err = r.outputs(ctx, c, p.s); err != nil {
			return nil, nil, err
		}
	}
	return &plan, outs, nil
}
