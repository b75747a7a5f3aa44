package gitops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Bounds of the previews of branches: what one poll may spend, whatever
// the repository holds.
const (
	// DefaultPreviewsPerPoll is how many branch heads one poll previews
	// when Config.PreviewsPerPoll is zero; the others wait for the next
	// polls, oldest name first, a pushed branch (PreviewSoon) first of all.
	DefaultPreviewsPerPoll = 4
	// MaxPreviewEnvs is how many environments one branch commit may
	// change and still be previewed: beyond, nothing of it is planned and
	// its preview says why.
	MaxPreviewEnvs = 20
)

// settingPreviewHead + branch is the last head of the branch previewed.
const settingPreviewHead = "preview.head:"

// PreviewSoon asks for a preview of branch at the next poll, before any
// other branch, and wakes the loop (a signed push webhook naming it).
func (g *Reconciler) PreviewSoon(branch string) {
	g.soonMu.Lock()
	if g.soon == nil {
		g.soon = map[string]bool{}
	}
	if len(g.soon) < 64 { // a flood of webhooks is bounded too
		g.soon[branch] = true
	}
	g.soonMu.Unlock()
	g.Wake()
}

// PreviewMatches reports whether branch is one knit serve previews.
func (g *Reconciler) PreviewMatches(branch string) bool {
	if g.cfg.PreviewBranches == "" || branch == g.cfg.Branch || (g.cfg.Branch == "" && branch == "main") {
		return false
	}
	ok, err := path.Match(g.cfg.PreviewBranches, branch)
	return ok && err == nil
}

// previewBranches previews the new heads of the branches that match
// Config.PreviewBranches, at most PreviewsPerPoll of them.
func (g *Reconciler) previewBranches(ctx context.Context, w *gitwatch.Watcher) {
	if g.cfg.PreviewBranches == "" {
		return
	}
	heads, err := w.Heads(ctx)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("git: list the branches to preview", "err", err)
		}
		return
	}
	seen, err := settingsByName(ctx, g.k, settingPreviewHead)
	if err != nil {
		g.log.Error("git: read the previewed heads", "err", err)
		return
	}
	forget := map[string]string{}
	for b := range seen {
		if _, ok := heads[b]; !ok {
			forget[settingPreviewHead+b] = "" // deleted: its bookkeeping goes
		}
	}
	if len(forget) > 0 {
		if err := g.k.State().SetSettings(ctx, forget); err != nil {
			g.log.Error("git: forget deleted branches' previews", "err", err)
		}
	}
	for _, b := range g.newHeads(heads, seen) {
		if ctx.Err() != nil {
			return
		}
		branch, head := b, heads[b]
		g.previews.start(ctx, branch, g.Wake, func(ctx context.Context) { g.previewBranch(ctx, w, branch, head) })
	}
}

// newHeads are the branches to preview this poll: matching, with a head
// not previewed yet and no preview running, those asked for first, then
// by name; at most PreviewsPerPoll.
func (g *Reconciler) newHeads(heads, seen map[string]string) []string {
	g.soonMu.Lock()
	soon := g.soon
	g.soon = nil
	g.soonMu.Unlock()
	var todo []string
	for b, h := range heads {
		if g.PreviewMatches(b) && seen[b] != h && !g.previews.busy(b, h) {
			todo = append(todo, b)
		}
	}
	sort.Slice(todo, func(i, j int) bool {
		if soon[todo[i]] != soon[todo[j]] {
			return soon[todo[i]]
		}
		return todo[i] < todo[j]
	})
	limit := g.cfg.PreviewsPerPoll
	if limit <= 0 {
		limit = DefaultPreviewsPerPoll
	}
	if len(todo) > limit {
		g.log.Info("git: more branches to preview than one poll does; the rest wait", "previewing", limit, "waiting", len(todo)-limit)
		todo = todo[:limit]
	}
	return todo
}

// branchEnv is one environment a branch's commit changes.
type branchEnv struct {
	id, change, path string
	env              *spec.Environment
	folder           string
	element          string  // the set element's name, of a set file's environment
	want             gitWant // what the watched branch wants of it (zero: nothing)
}

// previewBranch previews every environment branch's head changes, records
// the head as previewed unless a plan must be tried again (the
// environment was locked), and sends preview.ready. It runs in the
// preview worker: ctx ends at the preview's deadline, and what was not
// planned by then is recorded as timed out. Every plan is judged by the
// watched branch's policies, never the branch's own.
func (g *Reconciler) previewBranch(ctx context.Context, w *gitwatch.Watcher, branch, head string) {
	c, err := w.FetchBranch(ctx, branch)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("git: fetch a branch to preview", "branch", branch, "err", err)
		}
		if errors.Is(err, gitwatch.ErrInvalidBranch) {
			g.markPreviewed(ctx, branch, head) // never fetched: not tried at every poll
		}
		return
	}
	watched, err := g.watchedTree(ctx, w)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Error("git: read the watched branch's tree", "branch", branch, "err", err)
		}
		return
	}
	envs, err := g.branchChanges(ctx, c, branch, watched)
	if err != nil {
		g.log.Error("git: work out what a branch changes", "branch", branch, "commit", short(c.Hash), "err", err)
		return
	}
	if len(envs) > MaxPreviewEnvs {
		g.log.Warn("git: a branch changes too many environments to preview", "branch", branch, "envs", len(envs), "max", MaxPreviewEnvs)
		envs = nil
	}
	again := false
	for _, e := range envs {
		if ctx.Err() != nil {
			if !g.stopping() { // the preview's deadline, not a shutdown
				g.recordTimedOut(branch, c.Hash, e)
				continue
			}
			return
		}
		again = g.previewEnv(ctx, branch, c, e, watched) || again
	}
	if again {
		return
	}
	if ctx.Err() != nil {
		if g.stopping() {
			return
		}
		ctx = context.WithoutCancel(ctx) // timed out: record and tell it all the same
	}
	g.markPreviewed(ctx, branch, c.Hash)
	ps, err := knit.NewRecords(g.k).Previews(ctx, branch, c.Hash)
	if err != nil {
		g.log.Error("git: read the previews to tell", "branch", branch, "err", err)
		return
	}
	summary := fmt.Sprintf("branch %s at %s changes %d environment(s)", branch, short(c.Hash), len(ps))
	if len(envs) == 0 && len(ps) == 0 {
		summary = fmt.Sprintf("branch %s at %s changes no environment", branch, short(c.Hash))
	}
	g.notify(notify.Event{Kind: notify.KindPreviewReady, Branch: branch, Commit: c.Hash, Actor: c.Author,
		Summary: summary, Markdown: knit.PreviewMarkdown(branch, c.Hash, ps)})
}

// previewEnv previews one environment e of branch's commit c, judged by
// the policies of watched (the watched branch's last commit's tree), and
// reports whether it must be tried again (the environment was locked, a
// store error).
func (g *Reconciler) previewEnv(ctx context.Context, branch string, c gitwatch.Commit, e branchEnv, watched string) bool {
	if e.want.Pending { // the watched branch's run of it goes first
		g.log.Info("git: the watched branch's run of the environment has not started; previewing it at a later poll", "branch", branch, "env", e.id)
		return true
	}
	req := knit.PreviewRequest{Branch: branch, Commit: c.Hash, Change: e.change, Env: e.env, EnvRef: e.id,
		Root: e.folder, Origin: g.cfg.URL + "@" + c.Hash + ":" + e.path, Actor: c.Author, Policy: g.cfg.Preview}
	if e.element != "" {
		req.Origin += "#" + e.element // as GitOps names an element's origin
	}
	var err error
	if req.PolicyTree, req.PolicyDirs, err = g.watchedPolicies(watched, e.want); err != nil {
		req.PolicyError = err // fails closed: recorded as the preview's error
	}
	pctx, release := g.previews.hold(ctx, e.id)
	defer release()
	p, err := knit.NewPreview(g.k, req).Run(pctx)
	switch {
	case errors.Is(context.Cause(pctx), errYielded) && ctx.Err() == nil:
		g.log.Info("git: a preview gave way to the watched branch's run of the environment; previewing it at a later poll", "branch", branch, "env", e.id)
		return true
	case errors.Is(err, engine.ErrLocked):
		g.log.Info("git: the environment is locked; previewing it at the next poll", "branch", branch, "env", e.id)
		return true
	case ctx.Err() != nil && !g.stopping():
		g.recordTimedOut(branch, c.Hash, e)
	case err != nil:
		if ctx.Err() == nil {
			g.log.Error("git: preview", "branch", branch, "env", e.id, "err", err)
		}
		return true
	default:
		g.log.Info("git: previewed", "branch", branch, "env", e.id, "commit", short(c.Hash), "status", p.Status, "checksum", p.Checksum)
	}
	return false
}

// recordTimedOut records that e's preview did not end before the
// preview's deadline (its tools were stopped).
func (g *Reconciler) recordTimedOut(branch, commit string, e branchEnv) {
	g.log.Warn("git: a preview timed out; its tools were stopped", "branch", branch, "env", e.id, "after", g.previews.timeout)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	team, _, _ := strings.Cut(e.id, "/")
	if err := g.k.State().RecordTimedOutPreview(ctx, branch, commit, e.id, team, e.change, g.previews.timeout); err != nil {
		g.log.Error("git: record a preview that timed out", "branch", branch, "env", e.id, "err", err)
	}
}

func (g *Reconciler) markPreviewed(ctx context.Context, branch, head string) {
	g.previews.done(branch, head)
	if err := g.k.State().SetSettings(ctx, map[string]string{settingPreviewHead + branch: head}); err != nil {
		g.log.Error("git: record the previewed head", "branch", branch, "err", err)
	}
}

// branchChanges are the environments commit c of branch changes, compared
// with what the watched branch wants of each: a file whose environment
// and inputs hash otherwise (or that no want has: a new one), and, as a
// destroy, an environment the watched branch declares by a file the
// branch removed. A template changes the environments built from it (their
// sums include it); a set file previews each element as GitOps would
// record it (a gone element: a destroy); a file that does not validate is
// recorded as an invalid preview. An element of a set the branch leaves
// as the watched tree (watched) has it is left out, whatever the set's
// other elements do.
func (g *Reconciler) branchChanges(ctx context.Context, c gitwatch.Commit, branch, watched string) ([]branchEnv, error) {
	g.mu.Lock()
	wants, files, _, err := g.gitState(ctx)
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	// A gitBranches set generates over the branches the watched branch's
	// last commit was recorded with: what it applies now.
	known, err := knit.NewRecords(g.k).Setting(ctx, settingBranches)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	var branches []string
	if known != "" {
		branches = strings.Split(known, "\n")
	}
	in := setInputs{branches, newFleetPass(ctx, g.fleet.fleet, tornDownByGit(wants)).live}
	var out []branchEnv
	declared := map[string]bool{}
	sums := newContentSums()
	for _, p := range c.Files {
		content, err := os.ReadFile(filepath.Join(c.Dir, filepath.FromSlash(p)))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", p, err)
		}
		folder := filepath.Join(c.Dir, filepath.FromSlash(path.Dir(p)))
		switch spec.KindOf(content) {
		case spec.KindTemplate:
			continue // its environments' sums include it: they differ when it does
		case spec.KindSet:
			_, els, envs, envSums, diags, err := g.setEnvs(c, p, content, in, sums)
			if err != nil {
				return nil, err
			}
			if diags.HasErrors() {
				// The elements it generated before stay declared: an
				// invalid preview of each, nothing torn down.
				for _, k := range elementKeys(files, p) {
					id := files[k]
					declared[id] = true
					team, _, _ := strings.Cut(id, "/")
					if err := g.k.State().RecordInvalidPreview(ctx, branch, c.Hash, id, team, diags.String()); err != nil {
						return nil, err
					}
				}
				continue
			}
			same, err := unchangedElements(g, watched, p, content, in, els, envs)
			if err != nil {
				return nil, err
			}
			for i, env := range envs {
				id := env.ID()
				declared[id] = true
				if e, ok := changeOf(wants[id], envSums[i], id, p, env, folder); ok && (e.change != store.PreviewUpdate || !same[els[i].Name]) {
					e.element = els[i].Name
					out = append(out, e)
				}
			}
			continue
		}
		env, diags := spec.ParseWith(p, folder, "", content, g.cfg.Spec.InRepo(c.Dir))
		if diags.HasErrors() {
			if id := files[p]; id != "" { // the names in an invalid file are never trusted
				declared[id] = true
				team, _, _ := strings.Cut(id, "/")
				if err := g.k.State().RecordInvalidPreview(ctx, branch, c.Hash, id, team, diags.String()); err != nil {
					return nil, err
				}
			}
			continue
		}
		id := env.ID()
		declared[id] = true
		sum, err := sums.env(env, content)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if e, ok := changeOf(wants[id], sum, id, p, env, folder); ok {
			out = append(out, e)
		}
	}
	// What the watched branch applies and the branch declares no more (its
	// file removed, its set's element gone) is torn down.
	for id, want := range wants {
		if want.Commit == "" || want.Teardown || declared[id] {
			continue
		}
		out = append(out, branchEnv{id: id, change: store.PreviewDestroy, path: want.Path, want: want})
	}
	ids := map[string]bool{}
	for _, e := range out {
		ids[e.id] = true
	}
	out = append(out, stageChanges(g, c.Dir, watched, ids)...)
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// changeOf is how a branch's environment id, declared by file p with
// content sum sum, changes the watched branch's want of it: none (ok
// false) when the sums agree, an update of what the watched branch
// applies, else a create.
func changeOf(want gitWant, sum, id, p string, env *spec.Environment, folder string) (branchEnv, bool) {
	e := branchEnv{id: id, change: store.PreviewCreate, path: p, env: env, folder: folder, want: want}
	switch {
	case want.Commit != "" && !want.Teardown && want.Sum == sum:
		return e, false // the branch leaves it as the watched branch has it
	case want.Commit != "" && !want.Teardown:
		e.change = store.PreviewUpdate
	}
	return e, true
}
