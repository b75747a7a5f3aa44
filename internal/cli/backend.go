package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/view"
)

// backend is where a command reads and runs: the library on this machine
// (localBackend) or a knit server (remoteBackend, with --server). Both
// answer with the library's read models, so one view renders either.
type backend interface {
	Environments(ctx context.Context, f knit.EnvironmentFilter) (knit.Page[knit.EnvironmentSummary], error)
	Environment(ctx context.Context, ref string) (knit.EnvironmentView, error)
	// Health runs ref's health checks now and keeps the outcome as its last.
	Health(ctx context.Context, ref string) (view.Health, error)
	Outputs(ctx context.Context, ref, component string, reveal bool) (map[string]map[string]knit.OutputView, error)
	// Approvals lists approvals of ref ("" = all); no statuses means any.
	Approvals(ctx context.Context, ref string, statuses ...string) ([]view.Approval, error)
	History(ctx context.Context, ref, before string, n int) (knit.Page[view.Run], error)
	Audit(ctx context.Context, f knit.AuditFilter) (knit.Page[view.AuditEvent], error)
	Logs(ctx context.Context, ref, component string) (view.ComponentRun, error)
	DiffEnvironments(ctx context.Context, req knit.EnvDiffRequest) (knit.EnvDiff, error)
	// ExtendTTL moves an ephemeral environment's expiry (audited as actor
	// locally; as the token's name on a server).
	ExtendTTL(ctx context.Context, ref string, by time.Duration, actor string) (view.Expiry, error)
	// Previews lists a branch's previews (of commit, when set).
	Previews(ctx context.Context, branch, commit string) ([]view.Preview, error)
	// PipelineStatus, Releases and Promote are a promotion pipeline's
	// (see knit.Knit's).
	PipelineStatus(ctx context.Context, name string) (view.Pipeline, error)
	Releases(ctx context.Context, name, stage string) ([]view.Release, error)
	Promote(ctx context.Context, name, release, change, stage, actor, reason string, force bool) (view.Stage, error)
	RollbackStage(ctx context.Context, name, stage, actor, reason string) (view.Stage, error)
	// PlanRelease plans a release in each stage (a server's: only it has
	// the pipeline's repository).
	PlanRelease(ctx context.Context, name, release string, stages []string, actor string) (view.ReleasePlan, error)
	// FleetStatus and FleetAct are a set's rollout in waves (fleet.go).
	FleetStatus(ctx context.Context, ref, selector string) (view.Fleet, error)
	FleetAct(ctx context.Context, ref, action, actor, reason string) (view.Fleet, error)

	// Target is the environment a run acts on: the spec ref is applied at
	// (nil where a server resolves it) and its team/env ID.
	Target(ctx context.Context, ref string) (*spec.Environment, string, error)
	// ChangeSets lists change sets of ref ("" = all), newest first; no
	// statuses means any, else pending ones.
	ChangeSets(ctx context.Context, ref string, statuses ...string) ([]view.ChangeSet, error)
	// Decide records a decision on a waiting plan or change set and, for
	// an approval, carries it out: here by handing the apply to submit
	// (nil: record only), on a server by the server's queue (runID).
	Decide(ctx context.Context, req knit.DecideRequest, submit knit.Submitter) (d knit.Decision, runID string, err error)
	// Accept accepts ref's paused rollout as actor (on a server: the
	// token), returning the environment as it now is.
	Accept(ctx context.Context, ref, actor, reason string) (view.Environment, error)
	// Run starts req (or, with req.RunID, follows that run already
	// started on a server), hands every event to req.OnEvent and returns
	// the result once the run ends. A nil result means it never started.
	Run(ctx context.Context, req knit.RunRequest) (*engine.Result, error)
	// LiveEnvironments are the live environments a set of team generates
	// from (knit.Fleet.Live).
	LiveEnvironments(ctx context.Context, team string) ([]view.LiveEnvironment, error)
	// Remote reports whether the backend is a server.
	Remote() bool
	Close() error
}

// localBackend is the library on this machine.
type localBackend struct {
	*knit.Knit
	*knit.Records        // the library's read models
	actor         string // who the audit trail names (deps.actor)
}

// Outputs is the library's, revealed through the Reveal action, which audits
// the reveal as l.actor.
func (l localBackend) Outputs(ctx context.Context, ref, component string, reveal bool) (map[string]map[string]knit.OutputView, error) {
	if reveal {
		return knit.NewReveal(l.Knit, ref, component, l.actor).Run(ctx)
	}
	return knit.NewRecords(l.Knit).Outputs(ctx, ref, component)
}

func (l localBackend) Target(ctx context.Context, ref string) (*spec.Environment, string, error) {
	env, _, err := l.AppliedSpec(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	return env, env.ID(), nil
}

func (l localBackend) Decide(ctx context.Context, req knit.DecideRequest, submit knit.Submitter) (knit.Decision, string, error) {
	d, err := knit.NewDecide(l.Knit, req, submit).Run(ctx)
	return d, d.RunID, err
}

// Run is the library's one door (knit.Run): it starts req here.
func (l localBackend) Run(ctx context.Context, req knit.RunRequest) (*engine.Result, error) {
	return knit.NewRun(l.Knit, req).Run(ctx)
}

func (l localBackend) ChangeSets(ctx context.Context, ref string, statuses ...string) ([]view.ChangeSet, error) {
	return knit.NewRecords(l.Knit).ChangeSets(ctx, ref, 0, statuses...)
}

func (l localBackend) ExtendTTL(ctx context.Context, ref string, by time.Duration, actor string) (view.Expiry, error) {
	x, err := knit.NewExtendTTL(l.Knit, ref, by, actor).Run(ctx)
	return view.Expiry{Env: x.Env, ExpiresAt: x.At}, err
}

func (l localBackend) Promote(ctx context.Context, name, release, change, stage, actor, reason string, force bool) (view.Stage, error) {
	return knit.NewPromote(l.Knit, knit.PromoteOptions{Pipeline: name, Release: release, Change: change, Stage: stage, Actor: actor, Reason: reason, Force: force}).Run(ctx)
}

// PlanRelease answers, here, that only the server following the
// pipeline can plan its releases (knit.ReleasePlan without StageRuns).
func (l localBackend) PlanRelease(ctx context.Context, name, release string, stages []string, actor string) (view.ReleasePlan, error) {
	return knit.NewReleasePlan(l.Knit, knit.ReleasePlanOptions{Pipeline: name, Release: release, Stages: stages, Actor: actor}).Run(ctx)
}

func (l localBackend) RollbackStage(ctx context.Context, name, stage, actor, reason string) (view.Stage, error) {
	return knit.NewRollbackStage(l.Knit, knit.StageOptions{Pipeline: name, Stage: stage, Actor: actor, Reason: reason}).Run(ctx)
}

func (l localBackend) Accept(ctx context.Context, ref, actor, reason string) (view.Environment, error) {
	return knit.NewAccept(l.Knit, ref, actor, reason).Run(ctx)
}

func (l localBackend) LiveEnvironments(ctx context.Context, team string) ([]view.LiveEnvironment, error) {
	return knit.NewFleet(l.Knit).Live(ctx, team)
}

func (localBackend) Remote() bool { return false }

// serverURL is --server, else KNIT_SERVER; empty means local.
func (d *deps) serverURL() string {
	if d.global.server != "" {
		return d.global.server
	}
	return d.getenv("KNIT_SERVER")
}

// token is the contents of --token-file, else KNIT_TOKEN.
func (d *deps) token() (string, error) {
	if f := d.global.tokenFile; f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return strings.TrimSpace(d.getenv("KNIT_TOKEN")), nil
}

// backend opens the library, or a client of the server when one is named.
func (d *deps) backend(ctx context.Context) (backend, error) {
	if u := d.serverURL(); u != "" {
		tok, err := d.token()
		if err != nil {
			return nil, err
		}
		return newRemoteBackend(u, tok)
	}
	k, err := d.open(ctx)
	if err != nil {
		return nil, err
	}
	return localBackend{Knit: k, Records: knit.NewRecords(k), actor: d.actor()}, nil
}

// withBackend checks the -o value, opens the backend for fn and closes it after.
func (d *deps) withBackend(ctx context.Context, output string, fn func(backend) error) error {
	if err := checkOutput(output); err != nil {
		return err
	}
	b, err := d.backend(ctx)
	if err != nil {
		return err
	}
	defer b.Close()
	return fn(b)
}
