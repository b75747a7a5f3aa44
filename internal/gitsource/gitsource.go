// Package gitsource fetches git repositories into a local cache and exports
// the files of one commit, for modules, variables files and overlays that a
// component takes from git. It runs the git binary, as gitwatch does for
// GitOps; nothing else in knit does.
//
// Layout under Cache.Dir:
//
//	mirrors/<hash of URL>.git   a bare mirror per URL, fetched on use
//	mirrors/<hash of URL>.lock  serialises work on that mirror across processes
//	checkouts/<commit>          the files of one commit, written once, then only read
package gitsource

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"knit.dev/knit/internal/filelock"
	"knit.dev/knit/internal/procexec"
)

// ErrUnknownRef means the repository has no tag, branch or commit by that name.
var ErrUnknownRef = errors.New("unknown git ref")

// Cache keeps bare mirrors and per-commit checkouts under Dir. The zero value
// with Dir set is ready to use. A Cache is safe for concurrent use, and
// several processes may share one Dir: work on a URL is serialised by a
// mutex and a file lock.
type Cache struct {
	// Dir is the cache's root folder; it is created on first use.
	Dir string
	// Anonymous is for a run that may not use the server's credentials (a
	// preview of a branch nobody reviewed): see anonymous.go.
	Anonymous bool

	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

// InDataDir returns the cache knit keeps in its data dir, shared by the
// runners (which fetch) and validation (which only looks, see Fetched).
func InDataDir(dataDir string) *Cache { return &Cache{Dir: filepath.Join(dataDir, "git")} }

var fullCommit = regexp.MustCompile(`^[0-9a-f]{40}$`)

// Checkout returns a folder holding the files of url at ref, and the commit
// ref resolved to. Ref may be a tag, a branch, a commit (full or abbreviated)
// or "" for the default branch. The mirror is fetched first unless ref is a
// full commit hash it already has. The folder is shared and must not be
// modified; it stays valid for the life of the cache. Submodules are not
// fetched.
func (c *Cache) Checkout(ctx context.Context, url, ref string) (dir, commit string, err error) {
	err = c.withMirror(ctx, url, ref, func(mirror string) error {
		if commit, err = resolve(ctx, mirror, ref); err != nil {
			return err
		}
		dir, err = c.export(ctx, mirror, commit)
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("git %s at %s: %w", url, refName(ref), err)
	}
	return dir, commit, nil
}

// Resolve fetches url and returns the commit ref names, without exporting files.
func (c *Cache) Resolve(ctx context.Context, url, ref string) (commit string, err error) {
	err = c.withMirror(ctx, url, ref, func(mirror string) error {
		commit, err = resolve(ctx, mirror, ref)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("git %s at %s: %w", url, refName(ref), err)
	}
	return commit, nil
}

// ReadFile returns the content of the file at p (slash-separated, relative to
// the repository's root) in url at ref. A missing file is an error wrapping
// fs.ErrNotExist.
func (c *Cache) ReadFile(ctx context.Context, url, ref, p string) ([]byte, error) {
	clean := path.Clean(strings.TrimPrefix(filepath.ToSlash(p), "./"))
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.HasPrefix(clean, "/") {
		return nil, fmt.Errorf("git %s: path %q is not inside the repository", url, p)
	}
	var data []byte
	err := c.withMirror(ctx, url, ref, func(mirror string) error {
		commit, err := resolve(ctx, mirror, ref)
		if err != nil {
			return err
		}
		obj := commit + ":" + clean
		if _, err := run(ctx, mirror, nil, "cat-file", "-e", obj); err != nil {
			return fmt.Errorf("%s: %w", clean, fs.ErrNotExist)
		}
		data, err = run(ctx, mirror, nil, "cat-file", "blob", obj)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("git %s at %s: %w", url, refName(ref), err)
	}
	return data, nil
}

// withMirror runs fn with the URL's mirror up to date, holding its locks.
func (c *Cache) withMirror(ctx context.Context, url, ref string, fn func(mirror string) error) error {
	if url == "" {
		return errors.New("empty repository URL")
	}
	if strings.HasPrefix(ref, "-") || strings.HasPrefix(url, "-") {
		return fmt.Errorf("refusing ref %q / URL %q that starts with '-'", ref, url)
	}
	key := urlKey(url)
	mirrors := filepath.Join(c.Dir, "mirrors")
	net := os.Environ()
	if c.Anonymous {
		if err := anonymousURL(url); err != nil {
			return err
		}
		mirrors = filepath.Join(c.Dir, "mirrors-anonymous")
		var err error
		if net, err = c.anonymousEnv(); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(mirrors, 0o755); err != nil {
		return err
	}
	mu := c.urlMutex(key)
	mu.Lock()
	defer mu.Unlock()
	unlock, err := filelock.Lock(ctx, filepath.Join(mirrors, key+".lock"))
	if err != nil {
		return err
	}
	defer unlock()

	mirror := filepath.Join(mirrors, key+".git")
	if err := update(ctx, mirror, url, ref, net); err != nil {
		if c.Anonymous && ctx.Err() == nil {
			return fmt.Errorf("%w (%v)", ErrNeedsCredentials, err)
		}
		return err
	}
	return fn(mirror)
}

func (c *Cache) urlMutex(key string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.locks == nil {
		c.locks = map[string]*sync.Mutex{}
	}
	m := c.locks[key]
	if m == nil {
		m = &sync.Mutex{}
		c.locks[key] = m
	}
	return m
}

// update clones the mirror the first time and fetches it afterwards, except
// when ref is a full commit hash the mirror already holds. Both run with
// the environment net.
func update(ctx context.Context, mirror, url, ref string, net []string) error {
	if _, err := os.Stat(filepath.Join(mirror, "HEAD")); err != nil {
		tmp, err := os.MkdirTemp(filepath.Dir(mirror), ".clone-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if _, err := runEnv(ctx, "", net, "clone", "--mirror", "--quiet", "--", url, tmp); err != nil {
			return err
		}
		return os.Rename(tmp, mirror)
	}
	if fullCommit.MatchString(ref) {
		if _, err := run(ctx, mirror, nil, "cat-file", "-e", ref+"^{commit}"); err == nil {
			return nil
		}
	}
	_, err := runEnv(ctx, mirror, net, "fetch", "--quiet", "--prune", "--force", "origin")
	return err
}

// resolve turns ref into a full commit hash.
func resolve(ctx context.Context, mirror, ref string) (string, error) {
	name := ref
	if name == "" {
		name = "HEAD"
	}
	out, err := run(ctx, mirror, nil, "rev-parse", "--verify", "--quiet", name+"^{commit}")
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", fmt.Errorf("%w %q", ErrUnknownRef, ref)
	}
	return strings.TrimSpace(string(out)), nil
}

// export writes the files of commit to checkouts/<commit> once; later calls
// reuse the folder. It writes into a temporary folder and renames it, so a
// checkout folder is always complete.
func (c *Cache) export(ctx context.Context, mirror, commit string) (string, error) {
	root := filepath.Join(c.Dir, "checkouts")
	dir := filepath.Join(root, commit)
	if st, err := os.Stat(dir); err == nil && st.IsDir() {
		return dir, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(root, ".tmp-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	index := tmp + ".index"
	defer os.Remove(index)
	// A private index file keeps the shared mirror untouched.
	env := []string{"GIT_INDEX_FILE=" + index, "GIT_WORK_TREE=" + tmp}
	if _, err := run(ctx, mirror, env, "read-tree", "--reset", "-u", commit); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another process exported the same commit first.
		if st, serr := os.Stat(dir); serr == nil && st.IsDir() {
			return dir, nil
		}
		return "", err
	}
	return dir, nil
}

// run executes git through procexec (SIGINT on cancellation, SIGKILL after a
// grace period) with an explicit environment, never prompting for
// credentials. gitDir, when set, selects the repository. Stderr is kept for
// the error.
func run(ctx context.Context, gitDir string, env []string, args ...string) ([]byte, error) {
	return runEnv(ctx, gitDir, append(os.Environ(), env...), args...)
}

// runEnv is run with exactly the environment env (plus the settings that
// keep git from prompting).
func runEnv(ctx context.Context, gitDir string, env []string, args ...string) ([]byte, error) {
	full := args
	if gitDir != "" {
		full = append([]string{"--git-dir=" + gitDir}, args...)
	}
	cmd := procexec.Command(ctx, "git", full...)
	cmd.Env = append(append([]string{}, env...), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0", "LC_ALL=C")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func urlKey(url string) string {
	sum := sha256.Sum256([]byte(url))
	return hex.EncodeToString(sum[:10])
}

func refName(ref string) string {
	if ref == "" {
		return "default branch"
	}
	return ref
}

// safeRef matches the refs Fetched looks up as files: no "..", no leading
// '-' or '/', only the characters of ordinary tag and branch names.
var safeRef = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._/+-]*$`)

// Fetched returns the folder holding the files of url at ref as this cache
// last fetched and exported them, without running git or touching the
// network; ok is false when it cannot tell (never fetched, never exported,
// an annotated tag stored loose, an abbreviated hash). fixed is true when
// ref names content that does not move: a full commit hash or a tag; a
// branch (or "", the default branch) is as of the last fetch.
func (c *Cache) Fetched(url, ref string) (dir string, fixed, ok bool) {
	if url == "" || c.Dir == "" {
		return "", false, false
	}
	mirror := filepath.Join(c.Dir, "mirrors", urlKey(url)+".git")
	commit := ""
	switch {
	case fullCommit.MatchString(ref):
		commit, fixed = ref, true
	case ref == "":
		head, err := os.ReadFile(filepath.Join(mirror, "HEAD"))
		name, sym := strings.CutPrefix(strings.TrimSpace(string(head)), "ref: ")
		if err != nil || !sym || !strings.HasPrefix(name, "refs/heads/") {
			return "", false, false
		}
		commit = lookupRef(mirror, name)
	case safeRef.MatchString(ref) && !strings.Contains(ref, ".."):
		if commit = lookupRef(mirror, "refs/tags/"+ref); commit != "" {
			fixed = true
		} else {
			commit = lookupRef(mirror, "refs/heads/"+ref)
		}
	}
	if commit == "" {
		return "", false, false
	}
	dir = filepath.Join(c.Dir, "checkouts", commit)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", false, false
	}
	return dir, fixed, true
}

// lookupRef reads the commit a ref points to from a repository's files: a
// loose ref, else packed-refs (a tag's peeled commit when listed). It
// returns "" when the ref is not there. A loose annotated tag names a tag
// object, which no checkout is named after: Fetched then finds nothing.
func lookupRef(gitDir, name string) string {
	if data, err := os.ReadFile(filepath.Join(gitDir, filepath.FromSlash(name))); err == nil {
		if h := strings.TrimSpace(string(data)); fullCommit.MatchString(h) {
			return h
		}
		return ""
	}
	data, err := os.ReadFile(filepath.Join(gitDir, "packed-refs"))
	if err != nil {
		return ""
	}
	found := ""
	for _, line := range strings.Split(string(data), "\n") {
		switch {
		case found != "" && strings.HasPrefix(line, "^"):
			return strings.TrimSpace(line[1:]) // the tag's commit
		case found != "":
			return found
		}
		if h, n, ok := strings.Cut(strings.TrimSpace(line), " "); ok && n == name && fullCommit.MatchString(h) {
			found = h
		}
	}
	return found
}
