package gitops

import (
	"os"
	"path"
	"path/filepath"
	"strings"

	"knit.dev/knit/internal/diag"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/spec"
)

// parseCache keeps, from one commit to the next, what parsing each valid
// environment file found: its environment's ID and content sum. An entry
// is keyed by the file's path and content (its git blob), and holds the
// content hash of every path the parse read besides the file (templates,
// extended files, modules, charts, values, policies; spec.Options.Read),
// so that it serves a later commit only where each of those still hashes
// the same in that commit's tree: a commit re-parses the files it changed
// and those whose reads it changed, never by path or time alone.
//
// What it never caches: a file that does not validate, an environment set,
// a parse that asked for a git module or template (Fetched, Checkout: not
// in the tree), or one that read a path outside the tree or through a
// symlink (a link's target may change without the link). g.mu guards it.
type parseCache struct {
	envs  map[string]cachedEnv // by fileBlobKey
	kinds map[string]string    // spec.KindOf by blob
	// used are the keys the commit being recorded looked up: the others
	// are dropped once it is (prune).
	used, usedKinds map[string]bool
}

type cachedEnv struct {
	id, sum string
	reads   map[string]string // slash path in the tree → treeView.fact
}

func fileBlobKey(p, blob string) string { return p + "\x00" + blob }

// treeView answers, for one commit's tree, what the cache asks of it,
// each path once.
type treeView struct {
	dir   string
	sums  contentSums
	plain map[string]bool // a folder of the tree → no symlink at or above it
}

func newTreeView(dir string, sums contentSums) *treeView {
	return &treeView{dir: dir, sums: sums, plain: map[string]bool{}}
}

// fact is the content hash of slash path rel of the tree (a file, a
// folder, or missing), "" when it cannot be relied on: it is or holds a
// symlink, a folder above it is one, or it cannot be read.
func (v *treeView) fact(rel string) string {
	if !v.plainDir(path.Dir(rel)) {
		return ""
	}
	abs := filepath.Join(v.dir, filepath.FromSlash(rel))
	sum, err := v.sums.path(abs)
	if err != nil || v.sums.linked(abs) {
		return ""
	}
	return sum
}

func (v *treeView) plainDir(dir string) bool {
	if dir == "." || dir == "/" || dir == "" {
		return true
	}
	if ok, seen := v.plain[dir]; seen {
		return ok
	}
	ok := v.plainDir(path.Dir(dir))
	if ok {
		st, err := os.Lstat(filepath.Join(v.dir, filepath.FromSlash(dir)))
		ok = err != nil || st.Mode()&os.ModeSymlink == 0
	}
	v.plain[dir] = ok
	return ok
}

// begin starts the lookups of one commit.
func (pc *parseCache) begin() {
	if pc.envs == nil {
		pc.envs, pc.kinds = map[string]cachedEnv{}, map[string]string{}
	}
	pc.used, pc.usedKinds = map[string]bool{}, map[string]bool{}
}

// prune drops the entries the commit just recorded did not look up.
func (pc *parseCache) prune() {
	for k := range pc.envs {
		if !pc.used[k] {
			delete(pc.envs, k)
		}
	}
	for k := range pc.kinds {
		if !pc.usedKinds[k] {
			delete(pc.kinds, k)
		}
	}
}

// lookup is the cached parse of file p of blob in the tree v, when every
// path it read hashes there as it did.
func (pc *parseCache) lookup(v *treeView, p, blob string) (cachedEnv, bool) {
	if blob == "" {
		return cachedEnv{}, false
	}
	key := fileBlobKey(p, blob)
	pc.used[key] = true
	e, ok := pc.envs[key]
	if !ok {
		return cachedEnv{}, false
	}
	for rel, want := range e.reads {
		if v.fact(rel) != want {
			return cachedEnv{}, false
		}
	}
	return e, true
}

// kindOf is spec.KindOf of content, of blob.
func (pc *parseCache) kindOf(blob string, content []byte) string {
	if blob == "" {
		return spec.KindOf(content)
	}
	pc.usedKinds[blob] = true
	k, ok := pc.kinds[blob]
	if !ok {
		k = spec.KindOf(content)
		pc.kinds[blob] = k
	}
	return k
}

// store keeps the parse of file p of blob, which read the paths of pr.
func (pc *parseCache) store(v *treeView, p, blob, id, sum string, pr *parseReads) {
	if blob == "" || pr.remote {
		return
	}
	reads := make(map[string]string, len(pr.paths))
	for _, abs := range pr.paths {
		rel, err := filepath.Rel(v.dir, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return // outside the tree
		}
		rel = filepath.ToSlash(rel)
		f := v.fact(rel)
		if f == "" {
			return
		}
		reads[rel] = f
	}
	pc.envs[fileBlobKey(p, blob)] = cachedEnv{id: id, sum: sum, reads: reads}
}

// parseReads is what one parse read besides its file.
type parseReads struct {
	paths  []string
	remote bool // it asked for a git module or template
}

// parseEnv parses environment file p of commit c with opts, and says what
// the parse read besides it.
func parseEnv(opts spec.Options, c gitwatch.Commit, p string, content []byte) (*spec.Environment, diag.Diagnostics, *parseReads) {
	pr := &parseReads{}
	opts = opts.InRepo(c.Dir)
	opts.Read = func(q string) { pr.paths = append(pr.paths, q) }
	if fetched := opts.Fetched; fetched != nil {
		opts.Fetched = func(url, ref string) (string, bool, bool) {
			pr.remote = true
			return fetched(url, ref)
		}
	}
	if checkout := opts.Checkout; checkout != nil {
		opts.Checkout = func(url, ref string) (string, string, error) {
			pr.remote = true
			return checkout(url, ref)
		}
	}
	env, diags := spec.ParseWith(p, filepath.Join(c.Dir, filepath.FromSlash(path.Dir(p))), "", content, opts)
	return env, diags, pr
}
