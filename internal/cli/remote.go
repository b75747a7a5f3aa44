package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/client"
	"knit.dev/knit/internal/dag"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// remoteBackend is a knit server, through its API. Environments may be
// named by team/env or by metadata name, as locally.
type remoteBackend struct {
	c *client.Client
	// poll is how often a run's record is read while waiting for its end.
	poll time.Duration
}

func newRemoteBackend(url, token string) (*remoteBackend, error) {
	c, err := client.New(url, token, nil)
	if err != nil {
		return nil, err
	}
	return &remoteBackend{c: c, poll: 200 * time.Millisecond}, nil
}

func (r *remoteBackend) LiveEnvironments(ctx context.Context, team string) ([]view.LiveEnvironment, error) {
	return r.c.LiveEnvironments(ctx, team)
}

func (*remoteBackend) Remote() bool { return true }
func (*remoteBackend) Close() error { return nil }

// resolve turns a metadata name into team/env by looking through the
// environments the token sees.
func (r *remoteBackend) resolve(ctx context.Context, ref string) (string, error) {
	if strings.Contains(ref, "/") {
		return ref, nil
	}
	f := knit.EnvironmentFilter{Limit: 1000}
	for {
		p, err := r.c.Environments(ctx, f)
		if err != nil {
			return "", err
		}
		for _, e := range p.Items {
			if e.Metadata == ref {
				return e.ID, nil
			}
		}
		if p.Next == "" {
			return "", fmt.Errorf("no environment %q on the server: name it as team/env (knit status --server … lists them)", ref)
		}
		f.After = p.Next
	}
}

func (r *remoteBackend) Environments(ctx context.Context, f knit.EnvironmentFilter) (knit.Page[knit.EnvironmentSummary], error) {
	return r.c.Environments(ctx, f)
}

func (r *remoteBackend) Health(ctx context.Context, ref string) (view.Health, error) {
	id, err := r.resolve(ctx, ref)
	if err != nil {
		return view.Health{}, err
	}
	return r.c.Health(ctx, id)
}

func (r *remoteBackend) Environment(ctx context.Context, ref string) (knit.EnvironmentView, error) {
	id, err := r.resolve(ctx, ref)
	if err != nil {
		return knit.EnvironmentView{}, err
	}
	return r.c.Environment(ctx, id)
}

func (r *remoteBackend) ExtendTTL(ctx context.Context, ref string, by time.Duration, _ string) (view.Expiry, error) {
	id, err := r.resolve(ctx, ref)
	if err != nil {
		return view.Expiry{}, err
	}
	return r.c.ExtendTTL(ctx, id, by)
}

func (r *remoteBackend) Previews(ctx context.Context, branch, commit string) ([]view.Preview, error) {
	return r.c.Previews(ctx, branch, commit)
}

func (r *remoteBackend) Outputs(ctx context.Context, ref, component string, reveal bool) (map[string]map[string]knit.OutputView, error) {
	id, err := r.resolve(ctx, ref)
	if err != nil {
		return nil, err
	}
	return r.c.Outputs(ctx, id, component, reveal)
}

func (r *remoteBackend) Approvals(ctx context.Context, ref string, statuses ...string) ([]view.Approval, error) {
	id := ""
	if ref != "" {
		var err error
		if id, err = r.resolve(ctx, ref); err != nil {
			return nil, err
		}
	}
	return r.c.Approvals(ctx, id, len(statuses) == 0)
}

func (r *remoteBackend) History(ctx context.Context, ref, before string, n int) (knit.Page[view.Run], error) {
	id, err := r.resolve(ctx, ref)
	if err != nil {
		return knit.Page[view.Run]{}, err
	}
	return r.c.History(ctx, id, before, n)
}

func (r *remoteBackend) Audit(ctx context.Context, f knit.AuditFilter) (knit.Page[view.AuditEvent], error) {
	if f.Env != "" {
		var err error
		if f.Env, err = r.resolve(ctx, f.Env); err != nil {
			return knit.Page[view.AuditEvent]{}, err
		}
	}
	if f.Limit == 0 { // the whole trail, as locally: page through it
		f.Limit = 1000
		var all knit.Page[view.AuditEvent]
		for {
			p, err := r.c.Audit(ctx, f)
			if err != nil {
				return all, err
			}
			all.Items = append(all.Items, p.Items...)
			if p.Next == "" {
				if all.Items == nil {
					all.Items = []view.AuditEvent{}
				}
				return all, nil
			}
			f.After = p.Next
		}
	}
	return r.c.Audit(ctx, f)
}

func (r *remoteBackend) Logs(ctx context.Context, ref, component string) (view.ComponentRun, error) {
	id, err := r.resolve(ctx, ref)
	if err != nil {
		return view.ComponentRun{}, err
	}
	return r.c.Logs(ctx, id, component)
}

func (r *remoteBackend) Target(ctx context.Context, ref string) (*spec.Environment, string, error) {
	id, err := r.resolve(ctx, ref)
	return nil, id, err
}

// Decide sends the decision with the checksum of the plan or change set
// it is about; the server carries out an approval through its own queue
// (submit is not used).
func (r *remoteBackend) Decide(ctx context.Context, req knit.DecideRequest, _ knit.Submitter) (knit.Decision, string, error) {
	id, err := r.resolve(ctx, req.EnvRef)
	if err != nil {
		return knit.Decision{}, "", err
	}
	if req.ChangeChecksum != "" {
		d, err := r.c.DecideChange(ctx, id, req.Approve, req.ChangeChecksum, req.Reason)
		return knit.Decision{ChangeSet: &d.ChangeSet}, d.RunID, err
	}
	d, err := r.c.Decide(ctx, id, req.Component, req.Approve, req.PlanChecksum, req.Reason)
	return knit.Decision{Approval: d.Approval}, d.RunID, err
}

// ChangeSets lists change sets of ref ("" = all the token sees).
func (r *remoteBackend) ChangeSets(ctx context.Context, ref string, statuses ...string) ([]view.ChangeSet, error) {
	id := ""
	if ref != "" {
		var err error
		if id, err = r.resolve(ctx, ref); err != nil {
			return nil, err
		}
	}
	sets, err := r.c.ChangeSets(ctx, id, len(statuses) == 0)
	return sets, err
}

// Run asks the server for the run (or follows req.RunID), shows its events
// as they come, and reads its record once it ends. Interrupting ctx cancels
// the run on the server, as an interrupt cancels a local run.
func (r *remoteBackend) Run(ctx context.Context, req knit.RunRequest) (*engine.Result, error) {
	id := req.RunID
	if id == "" {
		env := req.EnvRef
		if env == "" && req.Env != nil {
			env = req.Env.ID()
		}
		var err error
		id, err = r.c.StartRun(ctx, env, client.RunRequest{Kind: req.Kind, Components: req.Components,
			Reason: req.Reason, Reconcile: req.Reconcile, AutoApprove: req.AutoApprove, To: req.To})
		if err != nil {
			return nil, err
		}
	}
	logs := streamedLogs{}
	ferr := r.c.Follow(ctx, id, func(ev engine.Event) {
		logs.add(ev)
		if req.OnEvent != nil {
			req.OnEvent(ev)
		}
	})
	wctx := ctx
	if ctx.Err() != nil {
		// Interrupted: cancel the run on the server and wait for its record.
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if err := r.c.CancelRun(wctx, id); err != nil && !errors.Is(err, client.ErrNotFound) && !errors.Is(err, client.ErrConflict) {
			return nil, fmt.Errorf("cancel run %s on the server: %w", id, err)
		}
	} else if ferr != nil && errors.As(ferr, new(*client.Error)) {
		return nil, ferr
	}
	rv, err := r.waitRun(wctx, id)
	if err != nil {
		return nil, err
	}
	if rv.Status == store.StatusRefused {
		return nil, fmt.Errorf("the server refused run %s: %s", id, rv.Error)
	}
	res := r.result(wctx, rv, logs)
	r.attachChange(wctx, res)
	if rv.Error != "" {
		return res, errors.New(rv.Error)
	}
	return res, nil
}

// attachChange adds to an apply or plan the change set waiting in its
// environment, as a local run shows it: the one an apply stopped at, the
// one a plan of ENV finds waiting. A failure to read it only leaves it out.
func (r *remoteBackend) attachChange(ctx context.Context, res *engine.Result) {
	if res == nil || (res.Kind != engine.KindApply && res.Kind != engine.KindPlan) || (res.Kind == engine.KindPlan && res.Revision == 0) {
		return
	}
	sets, err := r.c.ChangeSets(ctx, res.Env, false)
	if err != nil || len(sets) == 0 || (res.Kind == engine.KindApply && res.Status != store.StatusAwaiting) {
		return
	}
	res.ChangeSet = engineChangeSet(sets[0])
}

// engineChangeSet is c as an engine result carries it: decoded from the
// JSON the server sent, as it was before the client had read models of its
// own (the JSON of both is the same: knit's TestRecordsMapEveryStoreField).
func engineChangeSet(c view.ChangeSet) *store.ChangeSet {
	b, err := json.Marshal(c)
	var s store.ChangeSet
	if err != nil || json.Unmarshal(b, &s) != nil {
		return nil
	}
	return &s
}

// waitRun reads a run's record until it has ended.
func (r *remoteBackend) waitRun(ctx context.Context, id string) (knit.RunView, error) {
	for {
		rv, err := r.c.Run(ctx, id)
		if err != nil || (rv.Status != store.StatusQueued && rv.Status != store.StatusRunning) {
			return rv, err
		}
		select {
		case <-ctx.Done():
			return rv, ctx.Err()
		case <-time.After(r.poll):
		}
	}
}

// maxStreamedLog bounds the lines kept of one component's streamed log.
const maxStreamedLog = 1 << 20

// streamedLogs are the components' logs as a run's events carry them. A
// component's is nil once lines went missing (the stream dropped events)
// or it grew past maxStreamedLog: its recorded log stands in for it.
type streamedLogs map[string]*strings.Builder

func (l streamedLogs) add(ev engine.Event) {
	switch {
	case ev.Kind == engine.Dropped:
		for c := range l {
			l[c] = nil
		}
		l[""] = nil // and any component not seen yet
	case ev.Kind == engine.LogLine && ev.Component != "":
		b, seen := l[ev.Component]
		if _, lost := l[""]; (seen || lost) && b == nil {
			l[ev.Component] = nil
			return
		}
		if b == nil {
			b = &strings.Builder{}
			l[ev.Component] = b
		}
		if b.Len()+len(ev.Line) > maxStreamedLog {
			l[ev.Component] = nil
			return
		}
		b.WriteString(ev.Line + "\n")
	}
}

// result is a server's run record as a local run's result, components in
// graph order like the engine's; the logs are what the event stream carried
// (or, for a failed component whose lines it missed, or one whose stream
// was cut or too long, the recorded log).
func (r *remoteBackend) result(ctx context.Context, rv knit.RunView, logs streamedLogs) *engine.Result {
	res := &engine.Result{RunID: rv.ID, Env: rv.Env, Kind: rv.Kind, Revision: rv.Revision, Status: rv.Status,
		Error: rv.Error, Components: []*engine.ComponentResult{}}
	if len(rv.Policy) > 0 {
		// What the server's policies decided, shown as a local run's.
		var v engine.Verdict
		if err := json.Unmarshal(rv.Policy, &v); err == nil {
			res.Policy = &v
		}
	}
	byName := map[string]*engine.ComponentResult{}
	for _, cr := range rv.Components {
		c := componentResult(rv.Kind, cr)
		_, lost := logs[""]
		b, seen := logs[cr.Component]
		if b != nil {
			c.Log = b.String()
		} else if c.Status == engine.Failed || (seen || lost) {
			if lr, err := r.c.Logs(ctx, rv.Env, cr.Component); err == nil && lr.RunID == rv.ID {
				c.Log = lr.Log
			}
		}
		if prev := byName[cr.Component]; prev != nil {
			*prev = *c // a later record of the same component: it ended there
			continue
		}
		byName[cr.Component] = c
		res.Components = append(res.Components, c)
	}
	if v, err := r.c.Environment(ctx, rv.Env); err == nil {
		sortByGraph(res, v.Components)
	}
	return res
}

// componentResult is one component run as the engine reports it.
func componentResult(kind store.RunKind, cr view.ComponentRun) *engine.ComponentResult {
	c := &engine.ComponentResult{Name: cr.Component, Status: engine.Status(cr.Status), Code: cr.Code, Reason: cr.Reason,
		Cause: cr.Cause, StartedAt: cr.StartedAt}
	if !cr.FinishedAt.IsZero() {
		c.Elapsed = cr.FinishedAt.Sub(cr.StartedAt)
	}
	if len(cr.PlanSummary) > 0 {
		p := &runner.Plan{}
		if json.Unmarshal(cr.PlanSummary, p) == nil {
			p.File = ""
			c.Plan = p
		}
	}
	if kind == engine.KindDrift {
		c.Drift, c.AffectedBy = driftFound(c)
	}
	return c
}

// driftFound is what a drift check found, as far as a component run's
// record tells: its status, or, once reconciliation moved it on, whether
// its plan had changes; the upstream outputs come from its cause.
func driftFound(c *engine.ComponentResult) (engine.Status, []string) {
	switch c.Status {
	case engine.InSync, engine.Drifted, engine.Unknown:
		return c.Status, nil
	case engine.Affected:
		if c.ReasonCode != string(engine.ReasonUpstreamDrifted) {
			return c.Status, nil // recorded before causes were
		}
		return c.Status, c.Upstream
	}
	if c.Plan.HasChanges() {
		return engine.Drifted, nil
	}
	return "", nil
}

// sortByGraph orders components by their level in the dependency graph,
// then by name, as the engine orders a local run's result.
func sortByGraph(res *engine.Result, comps []knit.ComponentView) {
	g := dag.New()
	for _, c := range comps {
		g.Add(c.Name)
	}
	for _, c := range comps {
		for _, dep := range c.DependsOn {
			if g.Has(dep) && dep != c.Name {
				g.Connect(dep, c.Name)
			}
		}
	}
	res.SortByGraph(g)
}

// Accept accepts the paused rollout on the server, as the token.
func (r *remoteBackend) Accept(ctx context.Context, ref, _, reason string) (view.Environment, error) {
	id, err := r.resolve(ctx, ref)
	if err != nil {
		return view.Environment{}, err
	}
	return r.c.AcceptRollout(ctx, id, reason)
}

func (r *remoteBackend) PipelineStatus(ctx context.Context, name string) (view.Pipeline, error) {
	return r.c.PipelineStatus(ctx, name)
}

func (r *remoteBackend) Releases(ctx context.Context, name, stage string) ([]view.Release, error) {
	return r.c.Releases(ctx, name, stage)
}

// Promote is recorded as the token's name on the server.
func (r *remoteBackend) Promote(ctx context.Context, name, release, change, stage, _, reason string, force bool) (view.Stage, error) {
	return r.c.Promote(ctx, name, release, change, stage, reason, force)
}

// RollbackStage is recorded as the token's name on the server.
func (r *remoteBackend) RollbackStage(ctx context.Context, name, stage, _, reason string) (view.Stage, error) {
	return r.c.RollbackStage(ctx, name, stage, reason)
}

// PlanRelease is run as the token's name on the server.
func (r *remoteBackend) PlanRelease(ctx context.Context, name, release string, stages []string, _ string) (view.ReleasePlan, error) {
	return r.c.PlanRelease(ctx, name, release, stages)
}
