package knit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/progress"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// PreviewRequest asks what a branch's commit would do to one environment.
type PreviewRequest struct {
	Branch, Commit string
	// Change is store.PreviewCreate or PreviewUpdate (Env is the file at
	// the commit) or PreviewDestroy (EnvRef names the environment whose
	// file the commit removed; its applied spec is planned torn down).
	Change string
	Env    *spec.Environment
	EnvRef string
	// Root is the commit's folder of the file; Origin says where the file
	// is.
	Root, Origin string
	Actor        string
	// PolicyTree is the tree whose policies/ judge the plan, with the
	// folders PolicyDirs, besides the server's --policies: the watched
	// branch's, never the previewed branch's own (policies/ or
	// spec.policies of its file, which are never read). PolicyError, when
	// set, is why they could not be read: the preview fails with it.
	PolicyTree  string
	PolicyDirs  []string
	PolicyError error
	// Policy is how the preview runs the branch's code.
	Policy PreviewPolicy
}

// PreviewPolicy is how a preview of a branch nobody reviewed runs the
// branch's code (knit serve's git.previewScripts and sandbox settings).
type PreviewPolicy struct {
	// Scripts lets the plan commands of script components run; without
	// it they are not run, and the preview says so.
	Scripts bool
	// Sandbox confines the branch's tools and commands (another user, a
	// minimal environment, bounded CPU time, work dirs outside the data
	// dir) and replaces its sensitive inputs by placeholders. Nil: no
	// preview runs code (each is recorded failed with NoSandbox, or
	// procexec.ErrNoSandbox), unless Unsandboxed says to run it with
	// knit's own powers (an operator's explicit choice: docs/security.md).
	Sandbox     *procexec.Sandbox
	NoSandbox   error
	Unsandboxed bool
}

// refusal is why p runs no code ("" when it may).
func (p PreviewPolicy) refusal() string {
	switch {
	case p.Sandbox != nil || p.Unsandboxed:
		return ""
	case p.NoSandbox != nil:
		return "not previewed: " + p.NoSandbox.Error()
	}
	return "not previewed: " + procexec.ErrNoSandbox.Error()
}

// Preview is the action that plans a branch's commit's environment
// (Request) against what the environment has applied, and records the
// result. It applies nothing and records no revision; the environment's
// lock is held only while the plan runs, so its writes are fenced as any
// run's. It passes the rules of a branch nobody reviewed (STYLE 10d):
// judged by the watched branch's policies only (never the branch's own
// policies/ or spec.policies), its code run sandboxed or not at all
// (Request.Policy), failing closed. It is GitOps' (the server's own, no
// caller to authorize). A lock another run holds is engine.ErrLocked, and
// nothing is recorded: try again later.
type Preview struct {
	k       *Knit
	Request PreviewRequest
}

// NewPreview is the Preview action on k.
func NewPreview(k *Knit, req PreviewRequest) *Preview {
	return &Preview{k: k, Request: req}
}

// Run carries the action out.
func (op *Preview) Run(ctx context.Context) (view.Preview, error) {
	p, err := op.record(ctx)
	v, verr := previewView(p)
	if err != nil {
		return v, err // what was recorded, if anything, with why it failed
	}
	return v, verr
}

// record plans the preview and records it.
func (op *Preview) record(ctx context.Context) (store.Preview, error) {
	k, req := op.k, op.Request
	env, base, err := op.previewEnv(ctx, req)
	if err != nil {
		// Recorded, not returned: it fails the same way at every poll.
		id := req.EnvRef
		if req.Env != nil {
			id = req.Env.ID()
		}
		team, _, _ := strings.Cut(id, "/")
		p := store.Preview{Branch: req.Branch, Commit: req.Commit, Env: id, Team: team, Change: req.Change,
			Status: store.PreviewFailed, Error: err.Error(), CreatedAt: k.now()}
		return p, k.store.PutPreview(ctx, p)
	}
	p := store.Preview{Branch: req.Branch, Commit: req.Commit, Env: env.ID(), Team: env.Spec.TeamName,
		Change: req.Change, BaseRevision: base, CreatedAt: k.now()}
	if req.PolicyError != nil {
		p.Status, p.Error = store.PreviewFailed, req.PolicyError.Error()
		return p, k.store.PutPreview(ctx, p)
	}
	if why := req.Policy.refusal(); why != "" { // fails closed: the branch's code never runs
		p.Status, p.Error = store.PreviewFailed, why
		return p, k.store.PutPreview(ctx, p)
	}
	// Judged by the watched branch's policies only: the branch's file's
	// spec.policies are not its to choose.
	judged := *env
	judged.Spec.Policies = nil
	judge, err := k.judge(ctx, &judged, RunRequest{Tree: req.PolicyTree, PolicyDirs: req.PolicyDirs})
	if err != nil {
		return store.Preview{}, err
	}
	res, err := k.engine.Do(ctx, engine.KindPlan, env, engine.Options{Preview: true, PreviewScripts: req.Policy.Scripts, Sandbox: req.Policy.Sandbox, Judge: judge,
		Parallelism: k.cfg.Parallelism, Actor: req.Actor, Source: store.SourcePreview, Root: req.Root, Origin: req.Origin,
		Reason: fmt.Sprintf("preview of branch %s at commit %s", req.Branch, shortHash(req.Commit))})
	if errors.Is(err, engine.ErrLocked) {
		return store.Preview{}, err
	}
	if ctx.Err() != nil { // stopped (a deadline, a shutdown): nothing of it is shown
		return store.Preview{}, fmt.Errorf("preview of %s: %w", env.ID(), context.Cause(ctx))
	}
	p.Status = store.PreviewPlanned
	if err != nil {
		p.Status, p.Error = store.PreviewFailed, err.Error()
	}
	if res != nil {
		p.RunID, p.Checksum = res.RunID, res.Checksum
		if res.Status != store.StatusSucceeded {
			p.Status, p.Error = store.PreviewFailed, firstNonEmpty(res.Error, p.Error, failedComponent(res), "the plan "+string(res.Status))
		}
		p.Components, _ = json.Marshal(previewComponents(res)) // plain data: cannot fail
		if res.Policy != nil {
			p.Policy, _ = json.Marshal(res.Policy.Decisions)
		}
	}
	if p.Status != store.PreviewPlanned {
		p.Checksum = "" // a failed plan previews nothing an apply could match
	}
	if err := k.store.PutPreview(ctx, p); err != nil {
		return store.Preview{}, err
	}
	return p, nil
}

// RecordInvalidPreview records that the file of ref's environment does not
// validate at the branch's commit: nothing of it was planned.
func (s *ServerState) RecordInvalidPreview(ctx context.Context, branch, commit, env, team, errs string) error {
	k := s.k
	return k.store.PutPreview(ctx, store.Preview{Branch: branch, Commit: commit, Env: env, Team: team,
		Change: store.PreviewUpdate, Status: store.PreviewInvalid, Error: errs, CreatedAt: k.now()})
}

// RecordTimedOutPreview records that the preview of env at the branch's
// commit did not end within after: its tools were stopped, and nothing
// of it is shown.
func (s *ServerState) RecordTimedOutPreview(ctx context.Context, branch, commit, env, team, change string, after time.Duration) error {
	k := s.k
	return k.store.PutPreview(ctx, store.Preview{Branch: branch, Commit: commit, Env: env, Team: team,
		Change: change, Status: store.PreviewTimedOut, CreatedAt: k.now(),
		Error: fmt.Sprintf("the preview did not end within %s: its tools were stopped (knit serve --preview-timeout)", after)})
}

// previewEnv is the environment a preview plans, and the revision it is
// planned against (0: never applied).
func (op *Preview) previewEnv(ctx context.Context, req PreviewRequest) (*spec.Environment, int, error) {
	id := req.EnvRef
	if req.Env != nil {
		id = req.Env.ID()
	}
	e, err := op.k.store.Environment(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, 0, err
	}
	if req.Change != store.PreviewDestroy {
		if req.Env == nil {
			return nil, 0, fmt.Errorf("preview of %s: no environment file", id)
		}
		return req.Env, e.AppliedRevision, nil
	}
	if e.AppliedRevision == 0 {
		return nil, 0, fmt.Errorf("preview of %s: nothing applied to destroy", id)
	}
	applied, err := op.k.appliedSpec(ctx, e)
	if err != nil {
		return nil, 0, err
	}
	torn := *applied // the cached spec is shared: plan a copy torn down
	torn.Spec.Teardown = true
	return &torn, e.AppliedRevision, nil
}

// failedComponent says why the first failed component of res failed
// ("app: failed: …"), "" when none did.
func failedComponent(res *engine.Result) string {
	for _, c := range res.Components {
		if c.Status == engine.Failed && c.Code != "" {
			return c.Name + ": " + c.Code
		}
	}
	return ""
}

func previewComponents(res *engine.Result) []view.PreviewComponent {
	out := make([]view.PreviewComponent, 0, len(res.Components))
	for _, c := range res.Components {
		pc := view.PreviewComponent{Name: c.Name, Status: string(c.Status), Digest: c.Digest, Reason: c.Reason, Placeholders: c.Placeholders, PlannedAhead: c.PlannedAhead}
		if c.Plan != nil {
			pc.Add, pc.Change, pc.Destroy, pc.Resources = c.Plan.Add, c.Plan.Change, c.Plan.Destroy, c.Plan.Resources
		}
		out = append(out, pc)
	}
	return out
}

// Previews lists the previews of branch (of commit, when set; else the
// newest commit's of each environment first) of the environments ctx's
// caller may see: a team-limited token sees only its teams'.
func (rs *Records) Previews(ctx context.Context, branch, commit string) ([]view.Preview, error) {
	k := rs.k
	if branch == "" {
		return nil, errors.New("name the branch: ?branch=feature/x")
	}
	f := store.PreviewFilter{Branch: branch, Commit: commit}
	if t, ok := caller(ctx); ok && len(t.Teams) > 0 {
		f.Teams = t.Teams
	}
	ps, err := k.store.ListPreviews(ctx, f)
	if err != nil {
		return nil, err
	}
	out := make([]view.Preview, 0, len(ps))
	for _, p := range ps {
		v, err := previewView(p)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// previewView is p as the API shows it: its components and policy
// decisions decoded.
func previewView(p store.Preview) (view.Preview, error) {
	v := view.Preview{Branch: p.Branch, Commit: p.Commit, Env: p.Env, Team: p.Team, Change: p.Change, Status: p.Status,
		Checksum: p.Checksum, BaseRevision: p.BaseRevision, RunID: p.RunID, Error: p.Error, CreatedAt: p.CreatedAt,
		Components: []view.PreviewComponent{}, Decisions: []progress.Decision{}}
	if len(p.Components) > 0 {
		if err := json.Unmarshal(p.Components, &v.Components); err != nil {
			return view.Preview{}, fmt.Errorf("preview of %s at %s: components: %w", p.Env, p.Commit, err)
		}
	}
	if len(p.Policy) > 0 {
		if err := json.Unmarshal(p.Policy, &v.Decisions); err != nil {
			return view.Preview{}, fmt.Errorf("preview of %s at %s: policy: %w", p.Env, p.Commit, err)
		}
	}
	return v, nil
}
