package gitwatch

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// fetchArgs fetches only the watched branch, force-updating the mirror's
// copy so a force-push is seen. Fetching one branch, rather than the whole
// repository as `clone --mirror` would, skips other branches and the
// pull-request refs that hosts publish.
func fetchArgs(url, branch string) []string {
	ref := "refs/heads/" + branch
	return []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", url, "+" + ref + ":" + ref}
}

// mirrorConfig is set once in a new mirror: garbage collection after a
// fetch runs in the foreground, inside the command's process group, rather
// than outliving it.
var mirrorConfig = [][2]string{{"gc.autoDetach", "false"}, {"maintenance.autoDetach", "false"}}

// fetch brings the branch up to date and returns its head.
func (w *Watcher) fetch(ctx context.Context) (string, error) {
	if err := w.ensureMirror(ctx); err != nil {
		return "", err
	}
	c, err := w.withToken(command{args: fetchArgs(w.cfg.URL, w.cfg.Branch)})
	if err != nil {
		return "", err
	}
	if _, err := w.git(ctx, c); err != nil {
		return "", err
	}
	out, err := w.git(ctx, command{args: []string{"rev-parse", "--verify", "refs/heads/" + w.cfg.Branch + "^{commit}"}})
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// withToken adds the access token, if any, to a command that talks to the remote.
func (w *Watcher) withToken(c command) (command, error) {
	if w.cfg.TokenFile != "" {
		t, err := readToken(w.cfg.TokenFile)
		if err != nil {
			return c, err
		}
		c.env = t.env()
		c.secrets = append(c.secrets, t.secrets...)
	}
	return c, nil
}

// Branches lists the branches of the remote repository (ls-remote: no
// objects are fetched), sorted by name: what an environment set's
// gitBranches generator is evaluated over.
func (w *Watcher) Branches(ctx context.Context) ([]string, error) {
	heads, err := w.Heads(ctx)
	if err != nil {
		return nil, err
	}
	branches := make([]string, 0, len(heads))
	for b := range heads {
		branches = append(branches, b)
	}
	sort.Strings(branches)
	return branches, nil
}

// Heads lists the branches of the remote repository with the commit each
// points at (ls-remote: no objects are fetched).
func (w *Watcher) Heads(ctx context.Context) (map[string]string, error) {
	var out []byte
	err := w.locked(ctx, func() error {
		if err := w.ensureMirror(ctx); err != nil {
			return err
		}
		c, err := w.withToken(command{args: []string{"ls-remote", "--heads", "--", w.cfg.URL}})
		if err != nil {
			return err
		}
		out, err = w.git(ctx, c)
		return err
	})
	if err != nil {
		return nil, w.wrap("list the branches", err)
	}
	return parseHeads(out), nil
}

// parseHeads reads ls-remote's "<hash>\trefs/heads/<branch>" lines.
func parseHeads(out []byte) map[string]string {
	heads := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		hash, ref, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if b, isHead := strings.CutPrefix(ref, "refs/heads/"); ok && isHead && hashPattern.MatchString(hash) {
			heads[b] = hash
		}
	}
	return heads
}

// ensureMirror creates the bare repository the first time, atomically, so
// a crash never leaves a half-made one.
func (w *Watcher) ensureMirror(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(w.mirror, "HEAD")); err == nil {
		return nil
	}
	tmp, err := os.MkdirTemp(w.cfg.CacheDir, ".mirror-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := run(ctx, w.base, "", command{args: []string{"init", "--quiet", "--bare", "--", tmp}}); err != nil {
		return err
	}
	for _, kv := range mirrorConfig {
		if _, err := run(ctx, w.base, tmp, command{args: []string{"config", kv[0], kv[1]}}); err != nil {
			return err
		}
	}
	return os.Rename(tmp, w.mirror)
}

// known reports whether the mirror holds commit.
func (w *Watcher) known(ctx context.Context, commit string) bool {
	_, err := w.git(ctx, command{args: []string{"cat-file", "-e", commit + "^{commit}"}})
	return err == nil
}

// isAncestor reports whether a is an ancestor of b (or b itself); both must
// be known.
func (w *Watcher) isAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := w.git(ctx, command{args: []string{"merge-base", "--is-ancestor", a, b}})
	switch {
	case err == nil:
		return true, nil
	case exitCode(err) == 1:
		return false, nil
	}
	return false, err
}

// git runs c in the mirror.
func (w *Watcher) git(ctx context.Context, c command) ([]byte, error) {
	c.secrets = append(c.secrets, urlSecrets(w.cfg.URL)...)
	return run(ctx, w.base, w.mirror, c)
}
