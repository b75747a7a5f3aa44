package external

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"knit.dev/knit/internal/runner"
)

// Serve is the runner process's side: it reads one Request from in, runs
// it with the runner newRunner returns for the request's type and data
// dir, writes the tool's log to log and one Response to out. An operation
// that fails is a Response with Error, not an error of Serve's: Serve
// fails only when it cannot read the request or write the answer.
func Serve(ctx context.Context, in io.Reader, out, log io.Writer, newRunner func(typ, dataDir string) (runner.Runner, error)) error {
	var req Request
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		return fmt.Errorf("read request: %w", err)
	}
	res := serve(ctx, req, log, newRunner)
	return json.NewEncoder(out).Encode(res)
}

func serve(ctx context.Context, req Request, log io.Writer, newRunner func(typ, dataDir string) (runner.Runner, error)) (res Response) {
	fail := func(err error) Response {
		if errors.Is(err, runner.ErrUnsupported) {
			return Response{Unsupported: true}
		}
		return Response{Error: err.Error()}
	}
	defer func() {
		// A panicking runner is an operation that failed: the answer says
		// so rather than leaving knit to guess from a dead process.
		if v := recover(); v != nil {
			res = Response{Error: fmt.Sprintf("%s runner panicked: %v", req.Type, v)}
		}
	}()
	if req.Spec == nil {
		return fail(errors.New("request without an environment"))
	}
	req.Spec.File, req.Spec.Dir, req.Spec.Root = req.File, req.Dir, req.Root
	def := req.Spec.Component(req.Component)
	if def == nil {
		return fail(fmt.Errorf("no component %q in %s", req.Component, req.Env))
	}
	r, err := newRunner(req.Type, req.DataDir)
	if err != nil {
		return fail(err)
	}
	if !req.Deadline.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, req.Deadline)
		defer cancel()
	}
	c := runner.Component{Env: req.Env, Spec: req.Spec, Def: def, WorkDir: req.WorkDir, Log: log, Sensitive: req.Sensitive}
	switch req.Op {
	case OpFingerprint:
		fp, err := r.Fingerprint(ctx, c, req.Inputs)
		if err != nil {
			return fail(err)
		}
		return Response{Fingerprint: fp}
	case OpPlan:
		p, err := r.Plan(ctx, c, req.Inputs, req.PlanOptions)
		if err != nil {
			return fail(err)
		}
		return Response{Plan: toWire(p)}
	case OpApply:
		outs, err := r.Apply(ctx, c, req.Plan.plan())
		if err != nil {
			return fail(err)
		}
		return Response{Outputs: outs}
	case OpDestroy:
		if err := r.Destroy(ctx, c, req.Inputs); err != nil {
			return fail(err)
		}
		return Response{}
	case OpOutputs:
		outs, err := r.Outputs(ctx, c)
		if err != nil {
			return fail(err)
		}
		return Response{Outputs: outs}
	case OpWorkloads:
		wr, ok := r.(runner.WorkloadReader)
		if !ok {
			return fail(runner.ErrUnsupported)
		}
		w, err := wr.Workloads(ctx, c, req.Inputs, req.Objects)
		if err != nil {
			return fail(err)
		}
		return Response{Workloads: &w}
	}
	return fail(fmt.Errorf("unknown operation %q", req.Op))
}
