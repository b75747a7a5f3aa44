// Package external runs a Runner in another process: knit starts a runner
// executable for each operation, sends it the component and inputs as one
// JSON request on stdin, streams its stderr to the component's log and
// reads one JSON response from stdout.
//
// It keeps heavy runners out of knit's own binary. The Helm and Kubernetes
// runners link client-go and the Helm SDK, whose package initialisation
// alone costs every knit command about 30 ms and 90 MB of binary; in
// knit-kube they cost only the operations that use them, which talk to a
// cluster anyway.
package external

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// Operations a request names.
const (
	OpFingerprint = "fingerprint"
	OpPlan        = "plan"
	OpApply       = "apply"
	OpDestroy     = "destroy"
	OpOutputs     = "outputs"
	OpWorkloads   = "workloads"
)

// Request is one operation on one component.
type Request struct {
	Op string `json:"op"`
	// Type is the component type; DataDir the data dir the runner keeps
	// its keys and caches under.
	Type    string `json:"type"`
	DataDir string `json:"dataDir"`

	Env       string            `json:"env"`
	Spec      *spec.Environment `json:"spec"`
	File      string            `json:"file"`
	Dir       string            `json:"dir"`
	Root      string            `json:"root,omitempty"`
	Component string            `json:"component"`
	WorkDir   string            `json:"workDir"`
	Sensitive map[string]bool   `json:"sensitive,omitempty"`

	Inputs      runner.Inputs      `json:"inputs,omitempty"`
	PlanOptions runner.PlanOptions `json:"planOptions"`
	Plan        *wirePlan          `json:"plan,omitempty"`
	// Objects narrows a workloads look; Deadline is the operation's, so
	// that the runner ends its requests by then (zero: none).
	Objects  []string  `json:"objects,omitempty"`
	Deadline time.Time `json:"deadline,omitzero"`
}

// Response is an operation's result; Error is set when it failed.
type Response struct {
	Fingerprint string            `json:"fingerprint,omitempty"`
	Plan        *wirePlan         `json:"plan,omitempty"`
	Outputs     runner.Outputs    `json:"outputs,omitempty"`
	Workloads   *runner.Workloads `json:"workloads,omitempty"`
	Error       string            `json:"error,omitempty"`
	Unsupported bool              `json:"unsupported,omitempty"`
}

// wirePlan is a Plan with the values its JSON form leaves out: the planned
// outputs and the kinds it defines travel on the pipe between the two
// processes, never to disk.
type wirePlan struct {
	*runner.Plan
	PlannedOutputs runner.Outputs `json:"plannedOutputs,omitempty"`
	Defines        []runner.Kind  `json:"defines,omitempty"`
}

func toWire(p *runner.Plan) *wirePlan {
	if p == nil {
		return nil
	}
	return &wirePlan{Plan: p, PlannedOutputs: p.PlannedOutputs, Defines: p.Defines}
}

func (w *wirePlan) plan() *runner.Plan {
	if w == nil || w.Plan == nil {
		return nil
	}
	w.Plan.PlannedOutputs, w.Plan.Defines = w.PlannedOutputs, w.Defines
	return w.Plan
}

// Runner runs component operations in Path, one process each. Env is the
// process's whole environment (procexec.ToolEnv: never knit's own
// secrets); a cancelled operation is interrupted, then killed after
// GracePeriod.
type Runner struct {
	Path        string
	Type        string
	DataDir     string
	Env         []string
	GracePeriod time.Duration
}

var _ runner.Runner = (*Runner)(nil)

func (r *Runner) Fingerprint(ctx context.Context, c runner.Component, in runner.Inputs) (string, error) {
	res, err := r.call(ctx, c, Request{Op: OpFingerprint, Inputs: in})
	return res.Fingerprint, err
}

func (r *Runner) Plan(ctx context.Context, c runner.Component, in runner.Inputs, opts runner.PlanOptions) (*runner.Plan, error) {
	res, err := r.call(ctx, c, Request{Op: OpPlan, Inputs: in, PlanOptions: opts})
	if err != nil {
		return nil, err
	}
	return res.plan()
}

func (r *Runner) Apply(ctx context.Context, c runner.Component, p *runner.Plan) (runner.Outputs, error) {
	res, err := r.call(ctx, c, Request{Op: OpApply, Plan: toWire(p)})
	return res.Outputs, err
}

func (r *Runner) Destroy(ctx context.Context, c runner.Component, in runner.Inputs) error {
	_, err := r.call(ctx, c, Request{Op: OpDestroy, Inputs: in})
	return err
}

func (r *Runner) Outputs(ctx context.Context, c runner.Component) (runner.Outputs, error) {
	res, err := r.call(ctx, c, Request{Op: OpOutputs})
	return res.Outputs, err
}

// Workloads asks the runner process for one look at the component's
// workloads; the request carries ctx's deadline.
func (r *Runner) Workloads(ctx context.Context, c runner.Component, in runner.Inputs, objects []string) (runner.Workloads, error) {
	req := Request{Op: OpWorkloads, Inputs: in, Objects: objects}
	if d, ok := ctx.Deadline(); ok {
		req.Deadline = d
	}
	res, err := r.call(ctx, c, req)
	if err != nil {
		return runner.Workloads{}, err
	}
	if res.Workloads == nil {
		return runner.Workloads{}, errors.New("the runner answered without workloads")
	}
	return *res.Workloads, nil
}

func (res Response) plan() (*runner.Plan, error) {
	if p := res.Plan.plan(); p != nil {
		return p, nil
	}
	return nil, errors.New("the runner answered without a plan")
}

// call runs one operation and decodes its response.
func (r *Runner) call(ctx context.Context, c runner.Component, req Request) (Response, error) {
	req.Type, req.DataDir = r.Type, r.DataDir
	req.Env, req.Spec, req.Component, req.WorkDir, req.Sensitive = c.Env, c.Spec, c.Def.Name, c.WorkDir, c.Sensitive
	if c.Spec != nil {
		req.File, req.Dir, req.Root = c.Spec.File, c.Spec.Dir, c.Spec.Root
	}
	body, err := json.Marshal(req)
	if err != nil {
		return Response{}, fmt.Errorf("%s runner: %w", r.Type, err)
	}
	grace := r.GracePeriod
	if grace == 0 {
		grace = procexec.Grace
	}
	cmd := procexec.CommandGrace(ctx, grace, r.Path, "runner")
	cmd.Env = r.Env
	cmd.Stdin = bytes.NewReader(body)
	var out bytes.Buffer
	cause := &runner.CauseWriter{} // why it died, when it answers nothing
	cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(c.Log, cause)
	runErr := procexec.Run(ctx, cmd)
	var res Response
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		if runErr != nil && ctx.Err() == nil {
			runErr = runner.WithCause(runErr, cause.Cause())
		}
		if runErr != nil {
			return Response{}, fmt.Errorf("%s runner %s: %w", r.Type, r.Path, runErr)
		}
		return Response{}, fmt.Errorf("%s runner %s: unreadable answer: %w", r.Type, r.Path, err)
	}
	switch {
	case res.Unsupported:
		return res, runner.ErrUnsupported
	case res.Error != "":
		return res, errors.New(res.Error)
	case runErr != nil:
		return res, fmt.Errorf("%s runner %s: %w", r.Type, r.Path, runErr)
	}
	return res, nil
}

// Locate finds the runner executable name: beside the running knit
// binary (where `make build` puts it), then on PATH.
func Locate(name string) (string, error) {
	return procexec.Locate(name, "helm and manifests components run in it")
}
