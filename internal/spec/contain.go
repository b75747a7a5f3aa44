package spec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Containment: every local path an environment reads (module, variables
// file, overlay, chart, values file, manifests folder, kubeconfig) must stay
// inside its root, the folder the loader was given: the environment file's
// folder from the CLI, the commit's tree in GitOps. The check is made on
// real paths, every symlink followed, so a link such as `leak -> /var/lib/knit`
// cannot carry a component out of the folder. Both the loader and the
// runners call Contain (through Environment.LocalPath) and ContainTree; no
// other code decides what "inside" means.

// Contain resolves p against dir (p may be absolute) and returns the joined
// path (lexical, symlinks kept) when that path stays inside root both
// lexically and with every symlink on the way followed. The error says
// which: a path that leaves root as written, or the symlink (named relative
// to root) that leads out and its target. A path that does not exist yet is
// contained as far as it exists; whether it must exist is the caller's
// business.
func Contain(root, dir, p string) (string, error) {
	full := filepath.Clean(p)
	if !filepath.IsAbs(p) {
		full = filepath.Join(dir, p)
	}
	if !lexicallyInside(root, full) {
		return "", fmt.Errorf("path %q leaves the environment's folder", p)
	}
	if err := realInside(root, full); err != nil {
		return "", fmt.Errorf("path %q: %w", p, err)
	}
	return full, nil
}

// ContainTree checks every symlink below dir (dir included): each must
// resolve, and to a real path inside root; a link to a folder has that
// folder checked too. Tools that read a whole folder (a chart, a manifests
// folder) follow links, so a link inside the folder could otherwise hand
// them any file on the machine. Each real folder is walked once, so a
// symlink loop cannot trap it.
func ContainTree(root, dir string) error {
	return containTree(root, dir, nil)
}

// ContainModule is ContainTree for a terraform module's folder, leaving out
// the folders its copy into a work dir leaves out (ModuleToolDir): a
// module someone ran `tofu init` in holds links into a plugin cache, which
// no run reads.
func ContainModule(root, dir string) error {
	return containTree(root, dir, ModuleToolDir)
}

// ModuleToolDir reports whether a folder in a terraform module belongs to
// the tool or to git, not to the module: knit neither copies nor checks it.
func ModuleToolDir(name string) bool {
	return name == ".git" || name == ".terraform" || name == "terraform.tfstate.d"
}

func containTree(root, dir string, skip func(name string) bool) error {
	if err := realInside(root, dir); err != nil {
		return err
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	w := treeWalk{root: root, realRoot: realRoot, skip: skip, seen: map[string]bool{}}
	return w.walk(dir)
}

// treeWalk is one ContainTree: the links it found are named relative to
// root, as Contain names them.
type treeWalk struct {
	root, realRoot string
	skip           func(name string) bool
	seen           map[string]bool
}

func (w *treeWalk) walk(dir string) error {
	start, err := filepath.EvalSymlinks(dir)
	if err != nil || w.seen[start] {
		return err
	}
	w.seen[start] = true
	return filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != start && w.skip != nil && w.skip(d.Name()) {
			return filepath.SkipDir
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		name := filepath.Join(dir, strings.TrimPrefix(p, start))
		if abs, err := filepath.Abs(name); err == nil {
			if rel, err := filepath.Rel(w.root, abs); err == nil && !strings.HasPrefix(rel, "..") {
				name = rel
			}
		}
		if err := linkInside(w.realRoot, p, name); err != nil {
			return err
		}
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return w.walk(p)
		}
		return nil
	})
}

// realInside checks each existing prefix of full (inside root as written)
// that is a symlink: it must resolve to a real path inside root.
func realInside(root, full string) error {
	// Absolute, so that a link's absolute target compares with a relative root.
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	if full, err = filepath.Abs(full); err != nil {
		return err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // nothing below a missing root exists, links included
		}
		return err
	}
	rel, err := filepath.Rel(root, full)
	if err != nil {
		return err
	}
	cur := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if part == "." || part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // the rest does not exist, so it is no link
		}
		if err != nil {
			return err
		}
		if st.Mode()&fs.ModeSymlink != 0 {
			name, _ := filepath.Rel(root, cur)
			if err := linkInside(realRoot, cur, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// linkInside checks that the symlink at p, called name in messages,
// resolves to a real path inside realRoot.
func linkInside(realRoot, p, name string) error {
	target, err := filepath.EvalSymlinks(p)
	if err != nil {
		dest, _ := os.Readlink(p)
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s is a symlink to %s, which does not exist", name, dest)
		}
		return fmt.Errorf("%s is a symlink to %s that cannot be followed (a symlink loop?): %v", name, dest, err)
	}
	if !lexicallyInside(realRoot, target) {
		return fmt.Errorf("%s is a symlink to %s, outside the environment's folder %s", name, target, realRoot)
	}
	return nil
}

// lexicallyInside reports whether full is root or below it, as written.
func lexicallyInside(root, full string) bool {
	rel, err := filepath.Rel(root, full)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
