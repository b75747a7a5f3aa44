package gitops

import (
	"context"
	"errors"
	"maps"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"knit.dev/knit/internal/diag"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Backoff of a want whose run an environment's lock refused.
const (
	firstRetry = time.Second
	maxRetry   = 30 * time.Second
)

// wantRuns is what the reconciler remembers between passes: the
// environments whose want has a run queued, and when a refused one may try
// again.
type wantRuns struct {
	mu      sync.Mutex
	queued  map[string]bool
	retryAt map[string]time.Time
	backoff map[string]time.Duration
}

// reconcileWants queues a run for every pending want that has none queued
// and is not waiting to retry.
func (g *Reconciler) reconcileWants(ctx context.Context, w *gitwatch.Watcher) {
	g.mu.Lock()
	var wants map[string]pendingWant
	var all map[string]gitWant
	m, err := g.state(ctx)
	if err == nil {
		wants, all = m.pending(), maps.Clone(m.wants)
	}
	g.mu.Unlock()
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("git: read what commits want", "err", err)
		}
		return
	}
	now := g.clock.Now()
	for id, pw := range wants {
		want := pw.gitWant
		if want.Wave != "" {
			continue // its set's rollout starts it in its wave (waves.go)
		}
		if want.Teardown && g.fleet.teardownWaits(ctx, id, all) {
			continue
		}
		if !g.wants.claim(id, now) {
			continue
		}
		if started, err := g.startedBefore(ctx, id, pw); err != nil || started {
			// Its run started, and the server that queued it died before it
			// heard so (a leader killed): it is done, not queued again.
			g.wants.release(id)
			if err != nil {
				g.log.Error("git: read whether a run of the commit started", "env", id, "commit", short(want.Commit), "err", err)
			} else {
				g.wantDone(id, want)
			}
			continue
		}
		if err := g.startWant(ctx, w, id, want); err != nil {
			g.wants.release(id)
			if ctx.Err() == nil {
				g.log.Error("git: queue a run", "env", id, "commit", short(want.Commit), "err", err)
			}
		}
	}
}

// startedBefore reports whether a run of the apply want already started:
// the environment's newest revision is the one it records, from the
// want's commit and file (its origin).
func (g *Reconciler) startedBefore(ctx context.Context, id string, pw pendingWant) (bool, error) {
	want := pw.gitWant
	if want.Teardown || pw.fresh {
		return false, nil // this server wrote it, and queues its runs
	}
	revs, err := knit.NewRecords(g.k).Revisions(ctx, id, "", 1)
	if errors.Is(err, store.ErrNotFound) || err == nil && len(revs.Items) == 0 {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return revs.Items[0].Commit == want.Commit && revs.Items[0].Source == origin(g.cfg.URL, want), nil
}

// origin is where an apply want's environment comes from: the revision's source.
func origin(url string, want gitWant) string {
	o := url + "@" + want.Commit + ":" + want.Path
	if want.Element != nil {
		o += "#" + want.Element.Name
	}
	return o
}

// claim marks env's want as queued, unless it is or must wait.
func (r *wantRuns) claim(env string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.queued == nil {
		r.queued, r.retryAt, r.backoff = map[string]bool{}, map[string]time.Time{}, map[string]time.Duration{}
	}
	if r.queued[env] || now.Before(r.retryAt[env]) {
		return false
	}
	r.queued[env] = true
	return true
}

func (r *wantRuns) release(env string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.queued, env)
}

// refused releases env and returns how long to wait before its next try,
// doubling each time up to maxRetry.
func (r *wantRuns) refused(env string, now time.Time) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.queued, env)
	d := r.backoff[env] * 2
	if d == 0 {
		d = firstRetry
	}
	d = min(d, maxRetry)
	r.backoff[env] = d
	r.retryAt[env] = now.Add(d)
	return d
}

// started releases env after its run started: the next refusal starts
// its backoff from the beginning.
func (r *wantRuns) started(env string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.queued, env)
	delete(r.backoff, env)
	delete(r.retryAt, env)
}

// startWant queues the run want asks of environment id: an apply of its
// file, read again from its commit's tree, or a teardown.
func (g *Reconciler) startWant(ctx context.Context, w *gitwatch.Watcher, id string, want gitWant) error {
	req, err := wantRequest(ctx, g, w, id, want)
	if err != nil {
		return err
	}
	if g.previews.yield(id) { // the watched branch goes first, on either queue
		g.log.Info("git: a branch's preview held the environment: stopping it for the watched branch's commit", "env", id, "commit", short(want.Commit))
	}
	run, err := g.q.EnqueueWith(req, id, func(err error) { g.wantStarted(id, want, err) })
	if err == nil {
		g.log.Info("git: queued", "env", id, "kind", req.Kind, "commit", short(want.Commit), "run", run)
	}
	return err
}

// wantRequest is the run want asks of environment id: an apply of its
// file, read again from its commit's tree, or a teardown.
func wantRequest(ctx context.Context, g *Reconciler, w *gitwatch.Watcher, id string, want gitWant) (knit.RunRequest, error) {
	req := knit.RunRequest{Actor: want.Author, Source: knit.SourceGit, Reason: want.Reason,
		Commit: want.Commit, Author: want.Author, Message: want.Message}
	if want.Signer != "" {
		// A trusted key signed the commit: its principal made the change.
		req.Actor, req.Source = want.Signer, knit.SourceGitSigned
	}
	if want.Teardown {
		req.Kind, req.EnvRef = engine.KindTeardown, id
	} else {
		dir, err := w.Checkout(ctx, want.Commit)
		if err != nil {
			return req, err
		}
		content, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(want.Path)))
		if err != nil {
			return req, err
		}
		// Relative paths resolve from the file's folder, as in the CLI.
		folder := filepath.Join(dir, filepath.FromSlash(path.Dir(want.Path)))
		env, diags := g.wantedEnv(want, folder, dir, content)
		if diags.HasErrors() {
			return req, errors.New(diags.String())
		}
		req.Kind, req.Env, req.Root, req.Tree = engine.KindApply, env, folder, dir
		req.Origin = origin(g.cfg.URL, want)
	}
	return req, nil
}

// wantStarted follows the start of a want's run. Once it started, the
// environment's revision is recorded: the want is done. A lock held by
// another run (the CLI, say) is retried with backoff, and so is the
// teardown of a producer other environments still read (they may be torn
// down after it was queued, or by hand); a start the server's shutdown
// prevented is left pending for the next start. Any other refusal is
// final for this want: the log says why.
func (g *Reconciler) wantStarted(id string, want gitWant, err error) {
	switch {
	case errors.Is(err, engine.ErrLocked), errors.Is(err, knit.ErrHasConsumers):
		g.previews.yield(id) // one started since the run was queued
		d := g.wants.refused(id, g.clock.Now())
		why := "git: the environment is locked; trying again"
		if !errors.Is(err, engine.ErrLocked) {
			why = "git: the teardown waits for the environments reading it; trying again"
		}
		g.log.Info(why, "env", id, "commit", short(want.Commit), "in", d, "err", err)
		g.retryLater(d)
		return
	case err != nil && g.stopping():
		g.wants.release(id)
		return
	case err != nil:
		g.log.Error("git: the run could not start; the commit's change is dropped", "env", id, "commit", short(want.Commit), "err", err)
	}
	g.wants.started(id)
	g.wantDone(id, want)
}

// wantDone marks want no longer pending, unless a newer commit replaced it.
func (g *Reconciler) wantDone(id string, want gitWant) {
	g.mu.Lock()
	defer g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := g.state(ctx)
	if err != nil {
		g.log.Error("git: read what the commit wants", "env", id, "err", err)
		return
	}
	cur, ok := m.wants[id]
	if !ok || !cur.same(want) {
		return // a newer commit wants something else: still pending
	}
	cur.Pending = false
	if err := g.memo.write(ctx, g.k, map[string]string{settingWant + id: encodeWant(cur)}); err != nil {
		g.log.Error("git: record the commit as reconciled", "env", id, "err", err)
	}
}

// wantedEnv builds the environment a want applies: its file, or its
// element of the set file, read from the commit's tree dir.
func (g *Reconciler) wantedEnv(want gitWant, folder, dir string, content []byte) (*spec.Environment, diag.Diagnostics) {
	if want.Element == nil {
		return spec.ParseWith(want.Path, folder, "", content, g.cfg.Spec.InRepo(dir))
	}
	set, diags := spec.ParseSet(want.Path, folder, dir, content, g.cfg.Spec.InRepo(dir))
	if diags.HasErrors() {
		return nil, diags
	}
	return set.Environment(*want.Element)
}
