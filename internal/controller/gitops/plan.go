package gitops

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"knit.dev/knit/internal/diag"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// gitWant is what GitOps wants of one environment: applied as a file of a
// commit declares it, or torn down because no file declares it any more.
type gitWant struct {
	// Commit and Path are the commit and file the want comes from (Path is
	// the file that declared the environment last, for a teardown).
	Commit string `json:"commit"`
	Path   string `json:"path"`
	// Teardown: no file of the commit's tree declares the environment.
	Teardown bool `json:"teardown,omitempty"`
	// Sum is the hash of the file and of every local file its components
	// read: a commit that changes neither leaves the environment alone.
	Sum string `json:"sum,omitempty"`
	// Pending: no run of this want has started yet.
	Pending bool `json:"pending"`
	// Element is set when the environment is an element of the
	// environment set at Path: its run builds it from the set again.
	Element *spec.SetElement `json:"element,omitempty"`
	// Reason, Author and Message go with the run and its revision.
	Reason  string `json:"reason"`
	Author  string `json:"author,omitempty"`
	Message string `json:"message,omitempty"`
	// Signer is the commit's verified signer (gitwatch.Commit.Signer):
	// the run's actor when set; else the actor is Author, unverified.
	Signer string `json:"signer,omitempty"`
	// Wave, when set, is the set (team/name) whose rollout in waves
	// starts this want's run in its turn (waves.go): reconcileWants
	// leaves it alone.
	Wave string `json:"wave,omitempty"`
}

func (w gitWant) same(o gitWant) bool {
	return w.Commit == o.Commit && w.Path == o.Path && w.Teardown == o.Teardown && w.Sum == o.Sum
}

// treeFile is an environment file of a commit's tree that validates, or
// one element of a set file that does.
type treeFile struct {
	path, sum string
	element   *spec.SetElement
}

// fileKey is the key of the file→environment bookkeeping: the file's
// path, and for an element of a set the path and the element's name.
func fileKey(p string, el *spec.SetElement) string {
	if el == nil {
		return p
	}
	return p + "#" + el.Name
}

// elementKeys are the bookkeeping keys of set file p's elements.
func elementKeys(files map[string]string, p string) []string {
	var out []string
	for k := range files {
		if strings.HasPrefix(k, p+"#") {
			out = append(out, k)
		}
	}
	return out
}

// recordCommit works out what commit c wants of every environment its tree
// declares, and writes the wants that changed with the commit pointer in
// one transaction. An environment no file of the tree declares any more is
// torn down; one that a file still declares never is, whatever else the
// commit removed or renamed. An environment set yields one environment per
// element, over the repository's branches; when branchesMoved, its file
// counts as changed even if the commit did not touch it.
func (g *Reconciler) recordCommit(ctx context.Context, c gitwatch.Commit, branches []string, branchesMoved bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, err := g.state(ctx)
	if err != nil {
		return err
	}
	wants, files, invalid := m.wants, m.files, m.invalid
	changed := map[string]gitwatch.Change{}
	for _, ch := range c.Changes {
		changed[ch.Path] = ch
	}
	// The commit's policies judge every run of the environments GitOps
	// manages from now on, whatever starts it (knit.RepoPolicySettings).
	kv, err := knit.RepoPolicySettings(c.Hash, c.Dir)
	if err != nil {
		return err
	}
	kv[settingCommit], kv[settingBranches] = c.Hash, strings.Join(branches, "\n")
	declared := map[string][]treeFile{} // env ID → the valid files declaring it
	kept := map[string]bool{}           // env IDs an invalid file declared before
	sums := newContentSums()
	var later []laterSet
	st := setState{files, invalid, changed, declared, kept, kv, map[string]string{}, sums, newTreeView(c.Dir, sums), deferLive, &later}
	g.parses.begin()
	for _, p := range c.Files {
		if err := g.recordFile(ctx, c, p, branches, branchesMoved, st); err != nil {
			return err
		}
	}
	if err := recordLater(ctx, g, c, branches, branchesMoved, st, wants, m.fleet, later); err != nil {
		return err
	}
	for _, ch := range c.Changes {
		if !ch.Removed {
			continue
		}
		kv[settingFile+ch.Path] = ""
		for _, k := range elementKeys(files, ch.Path) {
			kv[settingFile+k] = ""
		}
		if old := invalid[ch.Path]; old != "" {
			g.forgetInvalid(ctx, ch.Path, old, kv)
		}
		if id := files[ch.Path]; id != "" && len(declared[id]) > 0 {
			g.gitWarn(ctx, c, id, fmt.Sprintf("%s was removed, but %s still declares %s: nothing is torn down",
				ch.Path, declared[id][0].path, id))
		}
	}
	for id, tf := range declared {
		want, ok, err := g.wantFor(ctx, c, id, tf, wants[id], changed)
		if err != nil {
			return err // nothing of the commit is recorded: the next poll tries again
		}
		if ok {
			kv[settingWant+id] = encodeWant(holdForWave(want, wants[id], st.waved[id]))
		}
	}
	for id, w := range wants {
		if w.Teardown || len(declared[id]) > 0 || kept[id] {
			continue
		}
		why := "no file declares it any more"
		if ch, ok := changed[w.Path]; ok && ch.Removed {
			why = "the file was removed"
		} else if w.Element != nil {
			why = "the set generates it no more (its element is gone)"
		}
		kv[settingWant+id] = encodeWant(gitWant{Commit: c.Hash, Path: w.Path, Teardown: true, Pending: true, Element: w.Element,
			Reason: fmt.Sprintf("%s (%s): %s", why, w.Path, commitReason(c)), Author: c.Author, Message: c.Message, Signer: c.Signer})
		g.log.Info("git: tearing down", "env", id, "why", why, "commit", short(c.Hash))
	}
	g.log.Info("git: commit", "commit", short(c.Hash), "author", c.Author, "changes", len(c.Changes), "reset", c.Reset)
	if err := g.memo.write(ctx, g.k, kv); err != nil {
		return err
	}
	g.parses.prune()
	return nil
}

// recordFile adds what file p of commit c declares to st: the environment
// of a valid environment file (from the parse cache when nothing it reads
// changed), each element's of a set; a file that does not validate keeps
// what it declared before, and is recorded as invalid when c changed it.
func (g *Reconciler) recordFile(ctx context.Context, c gitwatch.Commit, p string, branches []string, branchesMoved bool, st setState) error {
	blob := c.Blobs[p]
	if hit, ok := g.parses.lookup(st.view, p, blob); ok {
		g.declare(ctx, p, hit.id, hit.sum, st)
		return nil
	}
	content, err := os.ReadFile(filepath.Join(c.Dir, filepath.FromSlash(p)))
	if err != nil {
		return fmt.Errorf("read %s at %s: %w", p, short(c.Hash), err)
	}
	switch g.parses.kindOf(blob, content) {
	case spec.KindTemplate:
		return nil // used by environments, never applied on its own
	case spec.KindSet:
		return g.recordSet(ctx, c, p, content, branches, branchesMoved, st)
	}
	env, diags, reads := parseEnv(g.cfg.Spec, c, p, content)
	if diags.HasErrors() {
		if prev := st.files[p]; prev != "" {
			st.kept[prev] = true // a broken file still declares what it declared
		}
		if _, ok := st.changed[p]; ok {
			return g.gitInvalid(ctx, c, p, content, diags.String(), st.files[p], st.kv)
		}
		return nil
	}
	id := env.ID()
	sum, err := st.sums.env(env, content)
	if err != nil {
		return fmt.Errorf("%s at %s: %w", p, short(c.Hash), err)
	}
	g.parses.store(st.view, p, blob, id, sum, reads)
	g.declare(ctx, p, id, sum, st)
	return nil
}

// declare records that valid environment file p declares environment id,
// whose content sum is sum.
func (g *Reconciler) declare(ctx context.Context, p, id, sum string, st setState) {
	st.declared[id] = append(st.declared[id], treeFile{path: p, sum: sum})
	if st.files[p] != id {
		st.kv[settingFile+p] = id
	}
	if old := st.invalid[p]; old != "" {
		g.forgetInvalid(ctx, p, old, st.kv)
	}
}

// wantFor is the want of environment id, declared by the files tf at c,
// when it differs from prev (ok false: leave prev alone). Two files
// declaring one environment are a conflict: the one followed so far wins,
// else the first by path, and a warning says so. A store that cannot be
// read is an error: never "nothing changed".
func (g *Reconciler) wantFor(ctx context.Context, c gitwatch.Commit, id string, tf []treeFile, prev gitWant, changed map[string]gitwatch.Change) (gitWant, bool, error) {
	pick := tf[0]
	for _, f := range tf {
		if f.path == prev.Path {
			pick = f
		}
	}
	if len(tf) > 1 {
		touched := false
		var paths []string
		for _, f := range tf {
			_, ok := changed[f.path]
			touched = touched || ok
			paths = append(paths, f.path)
		}
		if touched {
			g.gitWarn(ctx, c, id, fmt.Sprintf("%s all declare %s: knit follows %s; remove the others",
				strings.Join(paths, ", "), id, pick.path))
		}
	}
	// A file that was broken and now reads as it did before still runs:
	// its new revision replaces the invalid one, whose alarm ends.
	unchanged := prev.Commit != "" && !prev.Teardown && prev.Sum == pick.sum
	if unchanged && !g.memo.valid[id] {
		inv, err := knit.NewRecords(g.k).NewestInvalid(ctx, id)
		if err != nil {
			return gitWant{}, false, fmt.Errorf("read the newest revision of %s: %w", id, err)
		}
		unchanged = inv == nil
		if unchanged && g.memo.valid != nil {
			g.memo.valid[id] = true // only an invalid file's record changes that
		}
	}
	switch {
	case unchanged && prev.Path == pick.path:
		return gitWant{}, false, nil // nothing it reads changed
	case unchanged:
		// Moved, not changed: the same spec and files from another path.
		prev.Commit, prev.Path, prev.Element = c.Hash, pick.path, pick.element
		return prev, true, nil
	}
	g.log.Info("git: applying", "env", id, "file", pick.path, "commit", short(c.Hash))
	return gitWant{Commit: c.Hash, Path: pick.path, Sum: pick.sum, Pending: true, Element: pick.element,
		Reason: commitReason(c), Author: c.Author, Message: c.Message, Signer: c.Signer}, true, nil
}

func settingsByName(ctx context.Context, k *knit.Knit, prefix string) (map[string]string, error) {
	raw, err := knit.NewRecords(k).Settings(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		out[strings.TrimPrefix(k, prefix)] = v
	}
	return out, nil
}

func encodeWant(w gitWant) string {
	b, _ := json.Marshal(w) // plain strings and bools: cannot fail
	return string(b)
}

// gitInvalid records a file that does not validate, with its errors, as a
// revision of the environment it declared before, or else of an
// environment named after its path: the names in an invalid file are
// never trusted. Nothing runs.
func (g *Reconciler) gitInvalid(ctx context.Context, c gitwatch.Commit, p string, content []byte, errs, prev string, kv map[string]string) error {
	e := store.Environment{ID: prev}
	if prev != "" {
		e.Team, e.Name, _ = strings.Cut(prev, "/")
	} else {
		e = store.Environment{ID: invalidID(p), Team: invalidTeam, Name: strings.TrimPrefix(invalidID(p), invalidTeam+"/")}
		if team := ownerOf(g.cfg.Owners, p); team != "" {
			e.Team, e.ID = team, team+"/"+invalidTeam+"-"+e.Name // the path's owners see it, not only admins
		}
		kv[settingInvalid+p] = e.ID
	}
	sum := sha256.Sum256(content)
	inv, err := knit.NewRecordInvalid(g.k, e, store.Revision{Env: e.ID, Hash: hex.EncodeToString(sum[:]),
		Source: g.cfg.URL + "@" + c.Hash + ":" + p, Spec: content, File: content, Commit: c.Hash, Author: c.Author,
		Message: c.Message, Errors: errs}, c.Author).Run(ctx)
	if err != nil {
		return fmt.Errorf("record the invalid file %s: %w", p, err)
	}
	delete(g.memo.valid, e.ID) // its newest revision may be this one
	if inv == nil {
		return nil // recorded already, and told
	}
	g.log.Warn("git: invalid environment file: nothing runs", "path", p, "env", e.ID, "revision", inv.Number, "commit", short(c.Hash))
	g.notify(invalidEvent(e.ID, inv))
	return nil
}

// invalidEvent tells that a commit's environment file does not validate:
// the summary names the file, the commit and the first error; the payload
// carries every error.
func invalidEvent(env string, inv *knit.InvalidRevision) notify.Event {
	first := ""
	if len(inv.Errors) > 0 {
		first, _, _ = strings.Cut(inv.Errors[0], "\n")
		if more := len(inv.Errors) - 1; more > 0 {
			first += fmt.Sprintf(" (and %d more)", more)
		}
	}
	return notify.Event{Kind: notify.KindInvalidRevision, Env: env, Actor: inv.Author,
		Summary: fmt.Sprintf("%s at commit %s does not validate; nothing of it runs: %s", inv.File, short(inv.Commit), first),
		File:    inv.File, Revision: inv.Number, Commit: inv.Commit, Errors: inv.Errors}
}

// invalidTeam is the team of the records of invalid files that declared
// no environment before.
const invalidTeam = "git"

var notName = regexp.MustCompile(`[^a-z0-9]+`)

// invalidID is the environment ID an invalid file is recorded under: the
// team "git" and a name made of the file's path, with a hash of the path
// so that two paths never share one.
func invalidID(p string) string {
	sum := sha256.Sum256([]byte(p))
	name := strings.Trim(notName.ReplaceAllString(strings.ToLower(p), "-"), "-")
	if len(name) > 48 {
		name = strings.TrimRight(name[:48], "-")
	}
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		name = "f-" + name
	}
	return invalidTeam + "/" + strings.TrimSuffix(name, "-") + "-" + hex.EncodeToString(sum[:3])
}

// forgetInvalid removes the record of an invalid file that was removed or
// now validates (kept if it was ever applied, which it never is).
func (g *Reconciler) forgetInvalid(ctx context.Context, p, id string, kv map[string]string) {
	kv[settingInvalid+p] = ""
	removed, err := g.k.State().ForgetUnapplied(ctx, id)
	if err != nil {
		g.log.Error("git: remove the record of an invalid file", "path", p, "env", id, "err", err)
		return
	}
	if removed {
		g.log.Info("git: removed the record of an invalid file", "path", p, "env", id)
	}
}

// gitWarn logs a problem of the repository that knit works around, and
// records it in the environment's audit trail.
func (g *Reconciler) gitWarn(ctx context.Context, c gitwatch.Commit, env, msg string) {
	g.log.Warn("git: "+msg, "env", env, "commit", short(c.Hash))
	if err := g.k.State().RecordAudit(ctx, store.AuditEvent{Env: env, Actor: c.Author, Action: "git-warning",
		Reason: commitReason(c), Detail: msg}); err != nil {
		g.log.Error("git: record a warning", "env", env, "err", err)
	}
}

type setState struct {
	files, invalid map[string]string
	changed        map[string]gitwatch.Change
	declared       map[string][]treeFile
	kept           map[string]bool
	kv             map[string]string
	// waved are the environments of sets with waves: env ID → set ID.
	waved map[string]string
	sums  contentSums
	view  *treeView
	// live is what environments generators read (deferLive: the set is
	// evaluated later, and added to later).
	live  func(team string) ([]spec.LiveEnvironment, error)
	later *[]laterSet
}

// recordSet adds the environments of set file p to st: one per element
// over branches, each hashed with its element so that an element whose
// parameters changed runs again. A set that does not validate (any
// element) is recorded as an invalid file and keeps every environment it
// generated before, as a broken environment file does.
func (g *Reconciler) recordSet(ctx context.Context, c gitwatch.Commit, p string, content []byte, branches []string, branchesMoved bool, st setState) error {
	set, els, envs, sums, diags, err := g.setEnvs(c, p, content, setInputs{branches, st.live}, st.sums)
	if errors.Is(err, errDeferred) {
		*st.later = append(*st.later, laterSet{p, content})
		return nil
	}
	if err != nil {
		return err
	}
	if diags.HasErrors() {
		for _, k := range elementKeys(st.files, p) {
			st.kept[st.files[k]] = true
		}
		if _, ok := st.changed[p]; ok || branchesMoved {
			diags.Sort()
			return g.gitInvalid(ctx, c, p, content, diags.String(), "", st.kv)
		}
		return nil
	}
	generated := map[string]bool{}
	for i, env := range envs {
		el := els[i]
		id, key := env.ID(), fileKey(p, &el)
		st.declared[id] = append(st.declared[id], treeFile{path: p, sum: sums[i], element: &el})
		if set.Waves() != nil {
			st.waved[id] = set.TeamName + "/" + set.Name
		}
		generated[key] = true
		if st.files[key] != id {
			st.kv[settingFile+key] = id
		}
	}
	for _, k := range elementKeys(st.files, p) {
		if !generated[k] {
			st.kv[settingFile+k] = ""
		}
	}
	if old := st.invalid[p]; old != "" {
		g.forgetInvalid(ctx, p, old, st.kv)
	}
	return nil
}

// setEnvs are the elements of set file p at commit c over in, the
// environment of each and its content sum (the set file, the element, and
// what the environment reads): what GitOps records and a preview compares.
// Diagnostics with errors: the set does not validate, nothing of it counts.
// An error is the live environments' (errDeferred: evaluate it later).
func (g *Reconciler) setEnvs(c gitwatch.Commit, p string, content []byte, in setInputs, cs contentSums) (*spec.Set, []spec.SetElement, []*spec.Environment, []string, diag.Diagnostics, error) {
	folder := filepath.Join(c.Dir, filepath.FromSlash(path.Dir(p)))
	set, diags := spec.ParseSet(p, folder, c.Dir, content, g.cfg.Spec.InRepo(c.Dir))
	var els []spec.SetElement
	if !diags.HasErrors() {
		sin := spec.SetInputs{Branches: in.branches}
		if _, ok := set.EnvironmentGenerator(); ok && in.live != nil {
			live, err := in.live(set.TeamName)
			if err != nil {
				return nil, nil, nil, nil, nil, err
			}
			sin.Environments = live
		}
		els, diags = set.ElementsOver(sin)
	}
	envs := make([]*spec.Environment, 0, len(els))
	for _, el := range els {
		env, more := set.Environment(el)
		diags = append(diags, more...)
		envs = append(envs, env)
	}
	if diags.HasErrors() {
		return nil, nil, nil, nil, diags, nil
	}
	sums := make([]string, len(envs))
	for i, env := range envs {
		elJSON, _ := json.Marshal(els[i]) // plain values decoded from YAML: cannot fail
		sum, err := cs.env(env, append(append(append([]byte(nil), content...), 0), elJSON...))
		if err != nil {
			return nil, nil, nil, nil, nil, fmt.Errorf("%s at %s: %w", p, short(c.Hash), err)
		}
		sums[i] = sum
	}
	return set, els, envs, sums, diags, nil
}

// holdForWave is want, held for the rollout of set (its Wave set) when
// the set rolls changes in waves and want changes an environment that has
// a release already: it was applied, or waits in a rollout. A new
// environment has none to keep: it applies at once, as do teardowns.
func holdForWave(want, prev gitWant, set string) gitWant {
	if set != "" && want.Pending && !want.Teardown && prev.Commit != "" && !prev.Teardown && (!prev.Pending || prev.Wave != "") {
		want.Wave = set
	} else if !want.Pending || set == "" {
		want.Wave = ""
	}
	return want
}
