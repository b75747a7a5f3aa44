// Package gitops is knit serve's GitOps reconciler: it follows a git
// repository of environment files and turns each commit into runs,
// through the run queue.
package gitops

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"knit.dev/knit/internal/controller/clock"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/spec"
)

// GitOps in three steps, each durable before the next:
//
//  1. pollGit turns each new commit into the desired state of every
//     environment the commit's tree declares (plan.go: a gitWant per
//     environment, pending when it changed), written with the commit
//     pointer in one transaction: a commit is never half-processed.
//  2. reconcileWants starts a run for each pending want (reconcile.go). A
//     want stops being pending only once its run started, that is once
//     the environment's revision is recorded; a run refused because the
//     environment is locked is retried with backoff, and a want whose run
//     was still queued at shutdown is still pending after a restart.
//  3. A run a shutdown interrupted is resumed after the restart, as a run
//     a crash interrupted is (runqueue.Queue.Resume).
//
// One server at a time does all this: the holder of the watcher's lease
// (lease.go); another server on the same data dir serves without polling.

// Config is the repository and folder of environment files to follow, and
// how often to fetch.
type Config struct {
	gitwatch.Config
	// Poll is how often to fetch (default 1m); Wake fetches at once.
	Poll time.Duration
	// Lease is how long the watcher's lease lives without renewal (default
	// 30s); it is renewed three times as often.
	Lease time.Duration
	// Spec is what validating a commit's environment files knows beyond
	// the files: the git modules knit has fetched (see spec.Options).
	Spec spec.Options
	// Actor names the server in the audit trail (its lease's owner).
	Actor  string
	Logger *slog.Logger
	Clock  clock.Clock
	// Notify, when set, is told of environment files that do not validate.
	Notify Notifier
	// Owners map repository paths to teams (knit.yaml owners): a file
	// that does not validate, whose declared team is not trusted, is
	// recorded for the team owning its path, which can then see why.
	Owners []Owner
	// PreviewBranches, when set, is a pattern (path.Match: "feature/*")
	// of branches whose new heads are previewed: every environment a head
	// changes is planned against what it applied, never applied
	// (preview.go). PreviewsPerPoll bounds the heads one poll previews
	// (default DefaultPreviewsPerPoll).
	PreviewBranches string
	PreviewsPerPoll int
	// PreviewWorkers bounds the branch heads previewed at once, beside
	// the watcher's loop (default DefaultPreviewWorkers); PreviewTimeout
	// is each head's deadline (default DefaultPreviewTimeout), after which
	// its tools are stopped and its previews recorded as timed out.
	PreviewWorkers int
	PreviewTimeout time.Duration
	// Pipelines are the promotion pipelines' files (kind: Pipeline) in the
	// repository: a branch changing what a stage would apply previews
	// that stage too (previewstage.go).
	Pipelines []string
	// Preview is how previews of unreviewed branches run their code (the
	// sandbox, whether script plan commands run): see knit.PreviewPolicy.
	Preview knit.PreviewPolicy
}

// Notifier is told what people should hear of (notify.Dispatcher).
type Notifier interface{ Notify(notify.Event) }

// Queue is where the reconciler's runs go (runqueue.Queue): onStart
// learns whether a run started.
type Queue interface {
	EnqueueWith(req knit.RunRequest, env string, onStart func(error)) (string, error)
}

// Reconciler is the GitOps controller. Run polls and reconciles until its
// context ends; Wake asks for a poll now.
type Reconciler struct {
	k     *knit.Knit
	q     Queue
	cfg   Config
	log   *slog.Logger
	clock clock.Clock
	// nudge asks the loop to fetch now.
	nudge chan struct{}
	// lastPoll is the unix nanoseconds of the last successful poll.
	lastPoll atomic.Int64
	// mu serialises what the loop and started runs write of the wants;
	// wants tracks their queued runs.
	mu   sync.Mutex
	memo gitMemo
	// parses are the environment files parsed at earlier commits.
	parses parseCache
	wants  wantRuns
	// ctx is Run's (nil before it starts); retries are its retry timers,
	// stopped when Run returns.
	ctxMu   sync.Mutex
	ctx     context.Context
	retries map[clock.Timer]bool
	// soon are the branches a push webhook asked to preview first.
	soonMu sync.Mutex
	soon   map[string]bool
	// previews runs the previews of branches beside the loop.
	previews *previewWorker
	// fleet reads the live environments of environments generators.
	fleet fleetWatch
	// waves steps the sets' rollouts in waves (waves.go).
	waves *rollouts
}

// Settings the reconciler keeps in the store.
const (
	settingCommit  = "git.commit"       // the last commit whose wants are recorded
	settingFile    = "git.file:"        // + path: the environment the file last validly declared
	settingWant    = knit.SettingGitEnv // + env ID: the environment's gitWant, as JSON
	settingInvalid = "git.invalid:"     // + path: the ID an invalid file is recorded under
	// settingBranches is the repository's branches at the last commit
	// recorded, one a line: a change re-evaluates the environment sets.
	settingBranches = "git.branches"
)

// New is a reconciler of cfg's repository over k, queueing its runs on q.
func New(k *knit.Knit, q Queue, cfg Config) *Reconciler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Actor == "" {
		cfg.Actor = "knit-serve"
	}
	if cfg.Spec.Docs == nil {
		cfg.Spec.Docs = spec.NewDocCache() // a template shared by many files is parsed once
	}
	g := &Reconciler{k: k, q: q, cfg: cfg, log: cfg.Logger, clock: clock.Or(cfg.Clock),
		nudge: make(chan struct{}, 1), retries: map[clock.Timer]bool{},
		previews: newPreviewWorker(cfg.PreviewWorkers, cfg.PreviewTimeout), fleet: fleetWatch{k, knit.NewFleet(k), cfg.Logger}}
	g.waves = &rollouts{g: g, nudge: make(chan struct{}, 1)}
	return g
}

// Run polls the repository on a ticker (and on Wake) while it holds the
// watcher's lease, and reconciles what each commit wants, until ctx ends.
// A repository it cannot watch is an error at once.
func (g *Reconciler) Run(ctx context.Context) error {
	w, err := gitwatch.New(g.cfg.Config)
	if err != nil {
		g.log.Error("git: cannot watch", "err", err)
		return fmt.Errorf("git: cannot watch: %w", err)
	}
	g.ctxMu.Lock()
	g.ctx = ctx
	g.ctxMu.Unlock()
	defer g.previews.wait() // ctx has ended: their tools are being stopped
	defer g.stopRetries()
	// A revision applied long ago runs from its commit's tree, which the
	// watcher may have pruned since.
	g.k.SetDirRestorer(w.Restore)
	g.k.State().SetFleetNudge(g.WakeWaves)
	poll := g.cfg.Poll
	if poll <= 0 {
		poll = time.Minute
	}
	lease := newGitLease(g)
	defer lease.release()
	pollT := g.clock.NewTicker(poll)
	defer pollT.Stop()
	leaseT := g.clock.NewTicker(lease.every())
	defer leaseT.Stop()
	for {
		if lease.current(ctx) {
			g.pollGit(ctx, w)
			g.reconcileWants(ctx, w)
			g.waves.stepWaves(ctx, w)
			g.previewBranches(ctx, w) // starts them beside the loop
		}
		if !g.waitGit(ctx, w, pollT.C(), leaseT.C(), lease) {
			return nil
		}
	}
}

// waitGit waits for the next poll: its tick, a nudge, or a chance to take
// the lease; it renews a held lease meanwhile. It is false once ctx ends.
func (g *Reconciler) waitGit(ctx context.Context, w *gitwatch.Watcher, poll, renew <-chan time.Time, lease *gitLease) bool {
	for {
		select {
		case <-poll:
			return true
		case <-g.nudge:
			return true
		case <-g.waves.nudge:
			if lease.held() {
				g.waves.stepWaves(ctx, w) // a run ended: no fetch needed
			}
		case <-renew:
			if !lease.held() {
				return true // try to take it
			}
			lease.hold(ctx)
		case <-ctx.Done():
			return false
		}
	}
}

// Wake asks the reconciler to poll and reconcile now (a signed webhook).
func (g *Reconciler) Wake() {
	select {
	case g.nudge <- struct{}{}:
	default: // a fetch is already due
	}
}

// LastPoll is when the last poll succeeded (zero: never).
func (g *Reconciler) LastPoll() time.Time {
	n := g.lastPoll.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// stopping reports whether Run's context has ended.
func (g *Reconciler) stopping() bool {
	g.ctxMu.Lock()
	defer g.ctxMu.Unlock()
	return g.ctx != nil && g.ctx.Err() != nil
}

// retryLater wakes the loop after d, unless Run returns first.
func (g *Reconciler) retryLater(d time.Duration) {
	g.ctxMu.Lock()
	defer g.ctxMu.Unlock()
	if g.ctx != nil && g.ctx.Err() != nil {
		return
	}
	var t clock.Timer
	t = g.clock.AfterFunc(d, func() {
		g.ctxMu.Lock()
		delete(g.retries, t)
		g.ctxMu.Unlock()
		g.Wake()
	})
	g.retries[t] = true
}

func (g *Reconciler) stopRetries() {
	g.ctxMu.Lock()
	defer g.ctxMu.Unlock()
	for t := range g.retries {
		t.Stop()
		delete(g.retries, t)
	}
}

// notify tells the Notifier, if any.
func (g *Reconciler) notify(ev notify.Event) {
	if g.cfg.Notify != nil {
		g.cfg.Notify.Notify(ev)
	}
}

func (g *Reconciler) pollGit(ctx context.Context, w *gitwatch.Watcher) {
	g.mu.Lock()
	m, err := g.state(ctx)
	var last, known, fleet string
	var policies bool
	var wants map[string]gitWant
	if err == nil {
		last, known, policies, fleet, wants = m.commit, m.branches, m.policies, m.fleet, maps.Clone(m.wants)
	}
	g.mu.Unlock()
	if err != nil {
		g.log.Error("git: read what the last commit recorded", "err", err)
		return
	}
	if err := g.recordPolicies(ctx, w, last, policies); err != nil {
		if ctx.Err() == nil {
			g.log.Error("git: record the repository's policies", "commit", short(last), "err", err)
		}
		g.forgetMemo()
		return
	}
	commits, err := w.Poll(ctx, last)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("git: poll", "err", err)
		}
		return
	}
	// Sets generate environments from the branches: list them at every
	// poll, and re-evaluate the last commit when only they moved.
	branches, err := w.Branches(ctx)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("git: list the branches", "err", err)
		}
		return
	}
	moved := known != strings.Join(branches, "\n")
	// Sets generate environments from the live environments too.
	fleetMoved, err := g.fleet.moved(ctx, fleet, wants)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("git: read the live environments", "err", err)
		}
		return
	}
	if len(commits) == 0 && last != "" && (moved || fleetMoved) {
		c, err := w.At(ctx, last)
		if err != nil {
			if ctx.Err() == nil {
				g.log.Error("git: read the last commit again", "err", err)
			}
			return
		}
		what := "branches"
		if !moved {
			what = "live environments"
		}
		g.log.Info("git: "+what+" changed: re-evaluating environment sets", "commit", short(last))
		commits = append(commits, c)
	}
	moved = moved || fleetMoved
	g.lastPoll.Store(g.clock.Now().UnixNano())
	for _, c := range commits {
		if err := g.recordCommit(ctx, c, branches, moved); err != nil {
			if ctx.Err() == nil {
				g.log.Error("git: record the commit", "commit", c.Hash, "err", err)
			}
			g.forgetMemo()
			return
		}
	}
}

// forgetMemo has the next poll read the reconciler's state from the store
// again: after any failure of the store, what it holds is the truth.
func (g *Reconciler) forgetMemo() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.memo = gitMemo{}
}

func commitReason(c gitwatch.Commit) string {
	subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
	return fmt.Sprintf("commit %s: %s", short(c.Hash), subject)
}

func short(hash string) string {
	if len(hash) > 10 {
		return hash[:10]
	}
	return hash
}

// recordPolicies records the policy set of commit last, processed before
// knit recorded policy sets (an upgrade): the runs of the environments it
// applied are judged by it from the first poll on.
func (g *Reconciler) recordPolicies(ctx context.Context, w *gitwatch.Watcher, last string, recorded bool) error {
	if last == "" || recorded {
		return nil
	}
	c, err := w.At(ctx, last)
	if err != nil {
		return err
	}
	kv, err := knit.RepoPolicySettings(c.Hash, c.Dir)
	if err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.memo.write(ctx, g.k, kv)
}
