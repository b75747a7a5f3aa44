// Package promotion is knit serve's promotion controller: it reads each
// pipeline (kind: Pipeline) from the git repository, turns a commit that
// changes the first stage's release into a new release applied there, and
// moves each release to the next stage once the rules hold (knit.Status:
// applied, verified, soaked, window open, approved). Applying a release
// to a stage is a new revision of the stage's environment, built from its
// own file at the release's commit with the release's promote parameters,
// queued on the fair run queue like any change.
package promotion

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Config is which pipelines to follow and how.
type Config struct {
	// Git is the repository holding the pipeline files (its Path unused).
	Git gitwatch.Config
	// Files are the pipeline files, paths inside the repository.
	Files []string
	// Spec is what loading a stage's environment knows beyond its file.
	Spec spec.Options
	// Tick is how often the rules are judged again (default 1s); Poll how
	// often the repository is fetched (default 1m).
	Tick, Poll time.Duration
	Actor      string
	Logger     *slog.Logger
	Clock      clock.Clock
	// Notify, when set, hears of releases waiting for a person or a
	// window, verified and failed in a stage.
	Notify Notifier
}

// Notifier sends notifications (notify.Dispatcher).
type Notifier interface{ Notify(notify.Event) }

// Queue is where stage applies go (runqueue.Queue).
type Queue interface {
	EnqueueWith(req knit.RunRequest, env string, onStart func(error)) (string, error)
}

// Controller promotes releases through the configured pipelines.
type Controller struct {
	k      *knit.Knit
	q      Queue
	cfg    Config
	log    *slog.Logger
	clock  clock.Clock
	w      *gitwatch.Watcher
	head   string
	polled time.Time
	told   told
	// opened makes w once, for Run and for StageRun's callers (a replica
	// that is not the leader answers StageRun too).
	opened  sync.Once
	openErr error
	fleets  fleetStages
}

// New is a controller over k queueing its applies on q.
func New(k *knit.Knit, q Queue, cfg Config) *Controller {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Actor == "" {
		cfg.Actor = "knit-serve"
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.Poll <= 0 {
		cfg.Poll = time.Minute
	}
	c := &Controller{k: k, q: q, cfg: cfg, log: cfg.Logger, clock: clock.Or(cfg.Clock)}
	c.fleets.c = c
	return c
}

// Run follows the repository and judges the rules every tick until ctx
// ends. A repository it cannot watch is an error at once.
func (c *Controller) Run(ctx context.Context) error {
	if err := c.open(); err != nil {
		return err
	}
	t := c.clock.NewTicker(c.cfg.Tick)
	defer t.Stop()
	for {
		c.Step(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// open makes the controller's watcher of the repository, once.
func (c *Controller) open() error {
	c.opened.Do(func() {
		w, err := gitwatch.New(c.cfg.Git)
		if err != nil {
			c.openErr = fmt.Errorf("pipelines: cannot watch the repository: %w", err)
			return
		}
		c.w = w
	})
	return c.openErr
}

// Step does one round: fetch when due, then for every pipeline follow
// the runs applying releases and start the promotions that are ready.
func (c *Controller) Step(ctx context.Context) {
	if now := c.clock.Now(); c.polled.IsZero() || now.Sub(c.polled) >= c.cfg.Poll {
		c.polled = now
		if err := c.poll(ctx); err != nil && ctx.Err() == nil {
			c.log.Error("pipelines: read the repository", "err", err)
		}
	}
	for _, file := range c.cfg.Files {
		name := strings.TrimSuffix(path.Base(file), path.Ext(file))
		if err := c.judge(ctx, name); err != nil && ctx.Err() == nil && !errors.Is(err, store.ErrNotFound) {
			c.log.Error("pipelines: judge", "pipeline", name, "err", err)
		}
	}
}

// poll reads the pipelines at the branch's head when it moved: each
// pipeline's definition, and the release its first stage's environment
// carries at that commit (a new one enters the first stage).
func (c *Controller) poll(ctx context.Context) error {
	head, err := c.w.Head(ctx)
	if err != nil || head == c.head {
		return err
	}
	commit, err := c.w.At(ctx, head)
	if err != nil {
		return err
	}
	dir, err := c.w.Checkout(ctx, head)
	if err != nil {
		return err
	}
	var errs []error
	for _, file := range c.cfg.Files {
		if err := c.readPipeline(ctx, dir, file, commit); err != nil {
			errs = append(errs, fmt.Errorf("%s at %s: %w", file, short(head), err))
		}
	}
	// A commit whose pipeline or first stage does not load is reported
	// once: the next commit fixes it. One the context cut is read again.
	if ctx.Err() == nil {
		c.head = head
	}
	return errors.Join(errs...)
}

func (c *Controller) readPipeline(ctx context.Context, dir, file string, commit gitwatch.Commit) error {
	data, err := readInTree(dir, file)
	if err != nil {
		return err
	}
	p, ds := spec.ParsePipeline(file, data)
	if ds.HasErrors() {
		return errors.New(ds.String())
	}
	if want := strings.TrimSuffix(path.Base(file), path.Ext(file)); p.Metadata.Name != want {
		return fmt.Errorf("metadata.name is %q: name the file %s.yaml", p.Metadata.Name, p.Metadata.Name)
	}
	// The first stage's file names the release; the later stages are
	// read with it, as they will be applied (their own values of the
	// promote parameters may be stale).
	first, err := c.loadStage(dir, file, p, 0, nil)
	if err != nil {
		return err
	}
	content, err := spec.ReleaseOf(first)
	if err != nil {
		return fmt.Errorf("stage %s: %w", p.Spec.Stages[0].Name, err)
	}
	envs := map[string]string{}
	for i, st := range p.Spec.Stages {
		if st.IsFleet() {
			envs[st.Name] = spec.FleetID(p.Spec.TeamName, p.Metadata.Name, st.Name)
			continue
		}
		env := first
		if i > 0 {
			if env, err = c.loadStage(dir, file, p, i, content.Params); err != nil {
				return err
			}
		}
		envs[st.Name] = env.Spec.TeamName + "/" + env.Spec.EnvName
	}
	if err := c.k.PutPipeline(ctx, p, commit.Hash, envs); err != nil {
		return err
	}
	// The stage files first: a new release entering the first stage
	// carries the change of that stage's file its commit made.
	files := c.readStageFiles(ctx, dir, file, p, commit, envs)
	params, err := jsonOf(content.Params)
	if err != nil {
		return errors.Join(files, err)
	}
	author, verified := authorOf(commit)
	r, created, err := c.k.AddRelease(ctx, store.Release{Pipeline: p.Metadata.Name, ID: content.ID(), Template: content.Template,
		Params: params, Commit: commit.Hash, Author: author, AuthorVerified: verified, Message: firstLine(commit.Message)})
	if err != nil || !created {
		return errors.Join(files, err)
	}
	c.log.Info("pipelines: new release", "pipeline", p.Metadata.Name, "release", r.ID, "commit", short(r.Commit))
	return errors.Join(files, c.apply(ctx, p.Metadata.Name, p.Spec.Stages[0], file, r, envs[p.Spec.Stages[0].Name]))
}

// apply queues the apply of release r to stage st: the stage's file at
// r's commit with r's promote parameters. The stage records the run at
// once, so a restart follows it rather than starting another.
func (c *Controller) apply(ctx context.Context, pipeline string, st spec.Stage, file string, r view.ReleaseRecord, envID string) error {
	return c.applyFrom(ctx, pipeline, st, file, r, envID, "")
}

// applyFrom is apply for a release whose state in the stage is from. The
// stage's own file is its copy at r's commit, or the copy the stage got
// last when r's is older (stageData).
func (c *Controller) applyFrom(ctx context.Context, pipeline string, st spec.Stage, file string, r view.ReleaseRecord, envID, from string) error {
	f, err := c.k.Facts(ctx, pipeline)
	if err != nil {
		return err
	}
	req, fileCommit, carried, err := c.stageRun(ctx, f, st, file, r, envID)
	if err != nil {
		failed := view.StageState{Pipeline: pipeline, Release: r.ID, Stage: st.Name, State: store.StageFailed,
			Reason: view.WaitApplyFailed, Message: err.Error(), Actor: c.cfg.Actor}
		if err := c.k.SetStage(ctx, failed, from, envID); err != nil {
			return err
		}
		c.tellEnded(failed, envID)
		return nil
	}
	id, err := c.q.EnqueueWith(req, envID, nil)
	if err != nil {
		return err
	}
	c.log.Info("pipelines: applying", "pipeline", pipeline, "release", r.ID, "stage", st.Name, "run", id)
	if err := c.k.SetStage(ctx, view.StageState{Pipeline: pipeline, Release: r.ID, Stage: st.Name, State: store.StageApplying,
		RunID: id, Actor: c.cfg.Actor}, from, envID); err != nil {
		return err
	}
	return c.gotFile(ctx, f, st.Name, fileCommit, carried, r.ID, id, envID)
}

// stageRun is the run applying release r to stage st of pipeline f (file
// is the pipeline's file, envID the stage's environment), with the commit
// of the stage file it reads and the stage change it carries, if any. An
// error is why r cannot be applied there (its stage file does not load,
// or names another environment than the stage's).
func (c *Controller) stageRun(ctx context.Context, f *knit.PipelineFacts, st spec.Stage, file string, r view.ReleaseRecord, envID string) (knit.RunRequest, string, *view.StageFileRecord, error) {
	dir, err := c.w.Checkout(ctx, r.Commit)
	if err != nil {
		return knit.RunRequest{}, "", nil, err
	}
	params, err := paramsOf(r.Params)
	if err != nil {
		return knit.RunRequest{}, "", nil, err
	}
	rel, err := stageRel(file, st)
	if err != nil {
		return knit.RunRequest{}, "", nil, err
	}
	own, err := readInTree(dir, rel)
	if err != nil {
		return knit.RunRequest{}, "", nil, fmt.Errorf("stage %s: %w", st.Name, err)
	}
	data, fileCommit, carried, err := c.stageData(ctx, f, f.StageIndex(st.Name), rel, r.Commit, own)
	if err != nil {
		return knit.RunRequest{}, "", nil, err
	}
	env, err := c.parse(dir, rel, st, data, params)
	if err != nil {
		return knit.RunRequest{}, "", nil, err
	}
	if env.ID() != envID {
		// The stage's file at r's commit is another environment than the
		// pipeline's stage (another team's, perhaps): never apply it.
		return knit.RunRequest{}, "", nil, fmt.Errorf("stage %s: %s names environment %s at %s, the pipeline's stage is %s", st.Name, st.File, env.ID(), short(fileCommit), envID)
	}
	actor, source := runAuthor(r)
	return knit.RunRequest{Kind: engine.KindApply, Env: env, Root: filepath.Join(dir, filepath.FromSlash(path.Dir(rel))), Tree: dir,
		Actor: actor, Source: source, Reason: fmt.Sprintf("pipeline %s: release %s to %s", f.Record.Name, r.ID, st.Name),
		Commit: r.Commit, Author: r.Author, Message: r.Message, Origin: c.cfg.Git.URL + "@" + fileCommit + ":" + rel}, fileCommit, carried, nil
}

// judge follows the runs applying releases of pipeline name and starts
// the promotions the rules allow.
func (c *Controller) judge(ctx context.Context, name string) error {
	f, err := c.k.Facts(ctx, name)
	if err != nil {
		return err
	}
	for _, s := range f.States {
		switch {
		case s.State == store.StageApplying && f.IsFleet(s.Stage):
			if err := c.fleets.stepFleet(ctx, f, s); err != nil {
				return err
			}
		case s.State == store.StageApplying:
			if err := c.follow(ctx, s, f.Envs[s.Stage]); err != nil {
				return err
			}
		case s.State == store.StageQueued: // a rollback a person asked for
			i := f.StageIndex(s.Stage)
			if r := f.ReleaseByID(s.Release); i >= 0 && r != nil {
				if err := c.applyFrom(ctx, name, f.Def.Spec.Stages[i], c.fileOf(name), *r, f.Envs[s.Stage], s.State); err != nil {
					return err
				}
			}
		}
	}
	if f, err = c.k.Facts(ctx, name); err != nil {
		return err
	}
	if err := c.judgeChanges(ctx, f); err != nil {
		return err
	}
	if f, err = c.k.Facts(ctx, name); err != nil {
		return err
	}
	status := f.Status(c.clock.Now())
	c.tellWaiting(status)
	file := c.fileOf(name)
	for i, st := range status.Stages {
		if i == 0 || st.Waiting == nil || st.Waiting.Reason != view.WaitReady {
			continue
		}
		var r view.ReleaseRecord
		for _, x := range f.Releases {
			if x.ID == st.Waiting.Release {
				r = x
			}
		}
		apply := func() error { return c.apply(ctx, name, f.Def.Spec.Stages[i], file, r, st.Env) }
		if f.Def.Spec.Stages[i].IsFleet() {
			apply = func() error { return c.fleets.startFleet(ctx, f, i, r) }
		}
		if err := apply(); err != nil {
			return err
		}
	}
	return nil
}

// follow records the end of the run applying s: verified (soak starts
// now), or failed; a run whose verification failed is
// VerificationFailed, and the release never moves on from here. A
// rollout that paused (onFailure: pause, or Inconclusive) keeps the
// release in the stage, Paused, until a person decides: accepted, it is
// verified; rolled back, it failed.
func (c *Controller) follow(ctx context.Context, s view.StageState, envID string) error {
	run, err := c.k.RunRecord(ctx, s.RunID)
	if errors.Is(err, store.ErrNotFound) {
		return nil // queued, not started yet
	} else if err != nil {
		return err
	}
	next := s
	next.Actor, next.ChangedAt = c.cfg.Actor, c.clock.Now()
	switch run.Run.Status {
	case store.StatusSucceeded:
		next.State, next.VerifiedAt, next.Reason, next.Message = store.StageSucceeded, next.ChangedAt, "", ""
	case store.StatusAwaiting:
		return c.awaiting(ctx, next, run.Run, envID)
	case store.StatusSuperseded:
		if by, ok, err := c.successor(ctx, run.Run); err != nil || ok {
			if ok {
				next.RunID, next.Reason, next.Message = by, "", ""
				err = c.k.SetStage(ctx, next, store.StageApplying, envID)
			}
			if errors.Is(err, store.ErrConflict) {
				return nil
			}
			return err
		}
		fallthrough
	case store.StatusFailed, store.StatusInterrupted, store.StatusRefused:
		if next, err = c.failed(ctx, next, run.Run); err != nil || next.State == store.StageApplying && next.Message == s.Message {
			return err
		}
	default:
		return nil // running, verifying or waiting for an approval
	}
	err = c.k.SetStage(ctx, next, store.StageApplying, envID)
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	if err == nil {
		c.tellEnded(next, envID)
	}
	return err
}

// failed is next once run, which applied next's release, ended without
// succeeding. Whether its verification failed is the store's record of
// the run's revision (Revision.Verification), not the run's error text;
// a revision that verified before and failed to apply now is ApplyFailed.
func (c *Controller) failed(ctx context.Context, next view.StageState, run view.Run) (view.StageState, error) {
	var rev view.Revision
	if run.Revision > 0 {
		r, err := knit.NewRecords(c.k).Revision(ctx, run.Env, run.Revision)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return next, err
		}
		rev = r
	}
	env, err := knit.NewRecords(c.k).EnvironmentRecord(ctx, run.Env)
	if err != nil {
		return next, err
	}
	ours := rev.Number > 0 && env.AppliedRevision == rev.Number
	switch {
	case ours && env.Status == store.EnvPaused:
		next.Reason = view.WaitPaused
		next.Message = fmt.Sprintf("rollout paused (verification %s in run %s): knit approve %s accepts it, knit rollback %s goes back",
			rev.Verification, run.ID, env.ID, env.ID)
	case ours && env.Status == store.EnvApplied && rev.Verification == store.VerificationAccepted:
		next.State, next.VerifiedAt = store.StageSucceeded, next.ChangedAt
		next.Reason, next.Message = "", "accepted by a person after its rollout paused"
	case rev.Verification == store.VerificationFailed || rev.Verification == store.VerificationInconclusive:
		next.State, next.Reason, next.Message = store.StageFailed, view.WaitVerificationFailed, run.Error
	default:
		next.State, next.Reason, next.Message = store.StageFailed, view.WaitApplyFailed, run.Error
	}
	return next, nil
}

// appliedAs is the state, in the stage of pipeline f whose environment is
// env, of the release that commit brought (nil: none). A stage applies a
// release from its own commit, and a rollback keeps the commit of the
// revision it goes back to.
func appliedAs(f *knit.PipelineFacts, env, skip, commit string) *view.StageState {
	for i := range f.States {
		s := &f.States[i]
		if f.Envs[s.Stage] != env || s.RunID == skip || s.State == store.StageApplying || s.State == store.StageQueued {
			continue
		}
		if r := f.ReleaseByID(s.Release); r != nil && commit != "" && r.Commit == commit {
			return s
		}
	}
	return nil
}

func (c *Controller) fileOf(name string) string {
	for _, f := range c.cfg.Files {
		if strings.TrimSuffix(path.Base(f), path.Ext(f)) == name {
			return f
		}
	}
	return ""
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func short(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	return h
}
