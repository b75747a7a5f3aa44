package cli

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

func newDriftCmd(d *deps) *cobra.Command {
	var f runFlags
	var reconcile bool
	cmd := &cobra.Command{
		Use:   "drift (ENV | -f FILE) [-c COMP]... [--reconcile]",
		Short: "Check every applied component against reality, and optionally bring it back",
		Long: `Plan every applied component against reality (in parallel along the graph)
and report each as in sync, drifted (with the resources and attributes that
differ) or failed. A component that takes an output that drift would change
is reported as affected by upstream drift.

With --reconcile, drifted and affected components are brought back in graph
order: applied at once where autoApprove allows, otherwise stopped awaiting
approval of their exact plan (knit approvals, knit approve).

Exit codes without --reconcile: 0 all in sync, 2 drift found, 1 error.
With --reconcile: 0 reconciled, 3 waiting for approval, 1 error.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(f.output); err != nil {
				return err
			}
			v := runView{output: f.output, json: func(r *engine.Result) any { return newDriftReport(r) }, exit: driftExit(reconcile)}
			return d.run(cmd.Context(), v, func(b backend) (knit.RunRequest, error) {
				if err := localOnly(cmd, b, "parallelism"); err != nil {
					return knit.RunRequest{}, err
				}
				env, ref, err := d.appliedFromArgs(cmd, b, f.file, args)
				req := f.request(engine.KindDrift, env, ref)
				req.Reconcile = reconcile
				return req, err
			})
		},
	}
	f.register(cmd, true)
	cmd.Flags().BoolVar(&reconcile, "reconcile", false, "bring drifted components back (autoApprove ones at once, others after approval)")
	return cmd
}

// appliedFromArgs is the applied revision of the environment that -f FILE
// or ENV names: drift compares reality with what was applied, never with an
// edited file (knit plan -f shows what the file would change).
func (d *deps) appliedFromArgs(cmd *cobra.Command, b backend, file string, args []string) (*spec.Environment, string, error) {
	env, ref, err := d.envFromArgs(cmd, b, file, args)
	if err != nil || file == "" {
		return env, ref, err
	}
	applied, ref, err := b.Target(cmd.Context(), env.ID())
	if err != nil {
		return nil, "", err
	}
	if a, b := mustJSON(applied), mustJSON(env); a != b {
		fmt.Fprintf(d.stderr, "note: %s differs from what %s is applied at; drift compares reality with what was applied (knit plan -f %s shows what the file changes)\n",
			file, env.ID(), file)
	}
	return applied, ref, nil
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// driftComponent is one component of a drift report, stable for golden tests.
type driftComponent struct {
	Name       string                  `json:"name"`
	Status     engine.Status           `json:"status"`
	Drift      engine.Status           `json:"drift,omitempty"`
	Reason     string                  `json:"reason,omitempty"`
	AffectedBy []string                `json:"affectedBy,omitempty"`
	Resources  []runner.ResourceChange `json:"resources,omitempty"`
	Outputs    []string                `json:"outputChanges,omitempty"`
}

type driftReport struct {
	Env        string           `json:"env"`
	RunID      string           `json:"runId"`
	Revision   int              `json:"revision"`
	Status     store.RunStatus  `json:"status"`
	Drift      bool             `json:"drift"`
	Components []driftComponent `json:"components"`
}

func newDriftReport(r *engine.Result) driftReport {
	rep := driftReport{Env: r.Env, RunID: r.RunID, Revision: r.Revision, Status: r.Status, Drift: r.HasDrift(), Components: []driftComponent{}}
	for _, c := range r.Components {
		dc := driftComponent{Name: c.Name, Status: c.Status, Drift: c.Drift, Reason: c.Reason, AffectedBy: c.AffectedBy}
		if c.Plan != nil && c.Drift == engine.Drifted {
			dc.Resources, dc.Outputs = c.Plan.Resources, c.Plan.OutputChanges
		}
		rep.Components = append(rep.Components, dc)
	}
	return rep
}

// driftExit: a plain check exits 2 when it finds drift; a reconcile exits
// like an apply (3 when a plan waits for approval).
func driftExit(reconcile bool) func(*engine.Result) error {
	return func(r *engine.Result) error {
		if reconcile || r.Failed() || !r.HasDrift() {
			return resultExit(r, false)
		}
		return &ExitError{Code: ExitChanges}
	}
}
