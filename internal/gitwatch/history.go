package gitwatch

import (
	"context"
	"strings"
)

// since returns the commits of the branch after `after` up to head, with
// their changes but no Dir yet. See Poll.
func (w *Watcher) since(ctx context.Context, after, head string) ([]Commit, error) {
	switch {
	case after == head:
		return nil, nil
	case after == "":
		return w.snapshot(ctx, head, "", false)
	case !w.known(ctx, after):
		return w.snapshot(ctx, head, "", true)
	}
	ok, err := w.isAncestor(ctx, after, head)
	if err != nil {
		return nil, err
	}
	if !ok {
		return w.snapshot(ctx, head, after, true)
	}
	infos, err := w.log(ctx, "--first-parent", "--reverse", after+".."+head)
	if err != nil || len(infos) == 0 {
		return nil, err
	}
	var pairs [][2]string
	if infos[0].firstParent() == after {
		for _, info := range infos {
			pairs = append(pairs, [2]string{info.hash, info.firstParent()})
		}
	} else {
		// after is a second parent somewhere: step from it to head at once.
		infos = infos[len(infos)-1:]
		pairs = [][2]string{{head, after}}
	}
	diffs, err := w.diffs(ctx, pairs)
	if err != nil {
		return nil, err
	}
	files := make([][]fileChange, len(infos))
	for i, info := range infos {
		files[i] = w.envChanges(diffs[info.hash])
	}
	return w.commits(ctx, infos, files)
}

// snapshot returns head as one Commit whose changes add every environment
// file, and remove those that only previous (when not "") has.
func (w *Watcher) snapshot(ctx context.Context, head, previous string, reset bool) ([]Commit, error) {
	infos, err := w.log(ctx, "-1", head)
	if err != nil {
		return nil, err
	}
	files, err := w.envFiles(ctx, head)
	if err != nil {
		return nil, err
	}
	var changes []fileChange
	present := map[string]bool{}
	for _, f := range files {
		changes = append(changes, fileChange{path: f.path, blob: f.blob})
		present[f.path] = true
	}
	if previous != "" {
		old, err := w.envFiles(ctx, previous)
		if err != nil {
			return nil, err
		}
		for _, f := range old {
			if !present[f.path] {
				changes = append(changes, fileChange{path: f.path})
			}
		}
	}
	commits, err := w.commits(ctx, infos[:1], [][]fileChange{changes})
	if err != nil {
		return nil, err
	}
	commits[0].Reset = reset
	return commits, nil
}

// commits builds a Commit per info with the changes of the same index,
// reading every changed file's content in one git command.
func (w *Watcher) commits(ctx context.Context, infos []commitInfo, files [][]fileChange) ([]Commit, error) {
	var ids []string
	for _, fs := range files {
		for _, f := range fs {
			if f.blob != "" {
				ids = append(ids, f.blob)
			}
		}
	}
	blobs, err := w.blobs(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Commit, len(infos))
	for i, info := range infos {
		out[i] = info.commit()
		all, err := w.envFiles(ctx, info.hash)
		if err != nil {
			return nil, err
		}
		out[i].Blobs = make(map[string]string, len(all))
		for _, f := range all {
			out[i].Files = append(out[i].Files, f.path)
			out[i].Blobs[f.path] = f.blob
		}
		sortFileChanges(files[i])
		for _, f := range files[i] {
			ch := Change{Path: f.path, Removed: f.blob == ""}
			if !ch.Removed {
				ch.Content = blobs[f.blob]
			}
			out[i].Changes = append(out[i].Changes, ch)
		}
	}
	return out, nil
}

// log returns the commits git log lists for revs.
func (w *Watcher) log(ctx context.Context, revs ...string) ([]commitInfo, error) {
	out, err := w.git(ctx, command{args: logArgs(revs...), env: signersEnv(w.cfg.AllowedSigners)})
	if err != nil {
		return nil, err
	}
	return parseLog(out)
}

// diffs compares the first commit of each pair with the second, limited to
// Path, and returns the entries by the first commit.
func (w *Watcher) diffs(ctx context.Context, pairs [][2]string) (map[string][]rawDiff, error) {
	var stdin strings.Builder
	for _, p := range pairs {
		stdin.WriteString(p[0] + " " + p[1] + "\n")
	}
	out, err := w.git(ctx, command{args: diffTreeArgs(w.prefix), stdin: []byte(stdin.String())})
	if err != nil {
		return nil, err
	}
	return parseDiffTree(out)
}

// envFiles lists the environment files of commit.
func (w *Watcher) envFiles(ctx context.Context, commit string) ([]treeEntry, error) {
	out, err := w.git(ctx, command{args: lsTreeArgs(commit, w.prefix)})
	if err != nil {
		return nil, err
	}
	entries, err := parseLsTree(out)
	if err != nil {
		return nil, err
	}
	var files []treeEntry
	for _, e := range entries {
		if w.isEnvFile(e.path, e.mode) {
			files = append(files, e)
		}
	}
	return files, nil
}

// fileChange is an environment file a commit changed: its path and new
// blob, "" when it was removed.
type fileChange struct{ path, blob string }

// envChanges keeps the entries that concern environment files. A file that
// stops being one (a symlink now) counts as removed.
func (w *Watcher) envChanges(diffs []rawDiff) []fileChange {
	var out []fileChange
	for _, d := range diffs {
		switch {
		case w.isEnvFile(d.path, d.newMode):
			out = append(out, fileChange{path: d.path, blob: d.newBlob})
		case w.isEnvFile(d.path, d.oldMode):
			out = append(out, fileChange{path: d.path})
		}
	}
	return out
}

// blobs reads the contents of blob ids in one git command.
func (w *Watcher) blobs(ctx context.Context, ids []string) (map[string][]byte, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	out, err := w.git(ctx, command{args: []string{"cat-file", "--batch"}, stdin: []byte(strings.Join(ids, "\n") + "\n")})
	if err != nil {
		return nil, err
	}
	return parseBatch(out)
}

// isEnvFile says whether a path of the given mode is an environment file:
// a regular file under Path ending in .yaml or .yml.
func (w *Watcher) isEnvFile(p, mode string) bool {
	if mode != "100644" && mode != "100755" {
		return false
	}
	if w.prefix != "" && !strings.HasPrefix(p, w.prefix+"/") {
		return false
	}
	return strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")
}

// signersEnv is the configuration that makes git verify SSH signatures
// against file (none when empty: git's own configuration decides).
func signersEnv(file string) []string {
	if file == "" {
		return nil
	}
	return []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=gpg.ssh.allowedSignersFile", "GIT_CONFIG_VALUE_0=" + file}
}
