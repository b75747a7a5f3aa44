package gitwatch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"knit.dev/knit/internal/filelock"
)

// DefaultKeepTrees is how many commit trees a Watcher keeps when
// Config.KeepTrees is zero.
const DefaultKeepTrees = 20

// Config says which repository, branch and folder a Watcher follows.
type Config struct {
	// URL is any URL git can fetch: https://, ssh://, user@host:path, file://.
	URL string
	// Branch is the branch to follow; "" means "main".
	Branch string
	// Path is the folder of environment files inside the repository
	// ("envs/"); "" is the root. Files ending in .yaml or .yml directly in
	// it or below it are environment files; symlinks never are.
	Path string
	// SSHKeyFile is a private key for ssh URLs. Git then runs ssh with this
	// key only, accepts a host key the first time it sees a host and
	// refuses a changed one, and never prompts.
	SSHKeyFile string
	// TokenFile holds an HTTPS access token, sent as an Authorization
	// header. It is read on every fetch, so it may be rotated in place. One
	// word is sent as basic auth with the user "x-access-token"; a
	// "<scheme> <credentials>" line (such as "Bearer abc") is sent as it
	// is. The token never appears in argv or in errors.
	TokenFile string
	// CacheDir holds the mirror and the per-commit trees; it is created if
	// needed. It belongs to one repository and branch: processes watching
	// the same one may share it (a file lock serialises them), but each
	// prunes trees the others may still use.
	CacheDir string
	// KeepTrees is how many commit trees stay on disk; older ones are
	// removed after a poll. 0 means DefaultKeepTrees.
	KeepTrees int
	// AllowedSigners is an SSH allowed signers file (ssh-keygen(1),
	// ALLOWED SIGNERS): a commit signed by one of its keys has that key's
	// principal as its Signer. Empty: git's gpg.ssh.allowedSignersFile, if
	// its configuration names one.
	AllowedSigners string
}

// Change is an environment file that a commit added, modified or removed.
type Change struct {
	// Path is relative to the repository's root, slash-separated.
	Path string
	// Content is the file at the commit; nil when Removed.
	Content []byte
	// Removed is set when the commit deleted the file (or renamed it away).
	Removed bool
}

// Commit is one commit of the watched branch and what it did to the
// environment files.
type Commit struct {
	Hash, Author, AuthorEmail, Message string
	// Signer is who signed the commit when its signature verifies against
	// keys the server trusts (the principal of Config.AllowedSigners, or of
	// git's own gpg.ssh.allowedSignersFile; a GPG key's user ID), else "":
	// Author is what the commit claims, which anyone can write.
	Signer string
	// Time is when the commit was authored, in the author's time zone.
	Time time.Time
	// Changes are the environment files added, modified or removed
	// relative to the commit before it (its first parent; Poll says when it
	// is another), sorted by path. A rename is a removal and an addition.
	// It is empty for a commit that changed only other files, such as
	// modules: the commit is still returned, as its Dir differs.
	Changes []Change
	// Dir holds every file of the repository at this commit, so relative
	// module paths resolve as they did in that commit. It is shared: never
	// modify it. Symlinks in the repository are symlinks here. It stays at
	// least until KeepTrees other commits have been returned or checked out
	// since; Checkout writes it again after that.
	Dir string
	// Files are the paths of every environment file of the commit's tree
	// (changed or not), sorted: what the commit declares as a whole.
	Files []string
	// Blobs are the git object IDs of Files' contents, by path: the same
	// ID is the same content, whatever the commit.
	Blobs map[string]string
	// Reset is set when the previous commit is no longer in the branch's
	// history (a force-push): Changes then hold every environment file of
	// this commit as added, and, when the previous commit is still known,
	// the files that only it had as removed.
	Reset bool
}

// Watcher follows one branch. Its methods may be called from several
// goroutines; they are serialised, and a file lock serialises processes
// sharing CacheDir.
type Watcher struct {
	cfg    Config
	prefix string // Path without slashes at either end; "" is the root
	mirror string
	trees  string
	base   []string // environment of every git command
	mu     sync.Mutex
}

// New checks cfg and returns a Watcher for it. It does not touch the
// network; the first Poll clones.
func New(cfg Config) (*Watcher, error) {
	if cfg.Branch == "" {
		cfg.Branch = "main"
	}
	if cfg.KeepTrees == 0 {
		cfg.KeepTrees = DefaultKeepTrees
	}
	var errs []error
	if cfg.URL == "" || strings.HasPrefix(cfg.URL, "-") {
		errs = append(errs, fmt.Errorf("repository URL %q is not a URL", cfg.URL))
	}
	if !validBranch(cfg.Branch) {
		errs = append(errs, fmt.Errorf("branch %q is not a valid branch name", cfg.Branch))
	}
	prefix, err := cleanPath(cfg.Path)
	errs = append(errs, err)
	if cfg.CacheDir == "" {
		errs = append(errs, errors.New("no cache folder"))
	}
	if cfg.KeepTrees < 0 {
		errs = append(errs, fmt.Errorf("KeepTrees %d is negative", cfg.KeepTrees))
	}
	for _, p := range []*string{&cfg.CacheDir, &cfg.SSHKeyFile, &cfg.TokenFile, &cfg.AllowedSigners} {
		if *p != "" {
			abs, err := filepath.Abs(*p)
			errs = append(errs, err)
			*p = abs
		}
	}
	if cfg.SSHKeyFile != "" {
		if _, err := os.Stat(cfg.SSHKeyFile); err != nil {
			errs = append(errs, fmt.Errorf("ssh key: %w", err))
		}
	}
	if cfg.AllowedSigners != "" {
		if _, err := os.Stat(cfg.AllowedSigners); err != nil {
			errs = append(errs, fmt.Errorf("allowed signers file: %w", err))
		}
	}
	if cfg.TokenFile != "" {
		_, err := readToken(cfg.TokenFile)
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("gitwatch %s: %w", displayURL(cfg.URL), err)
	}
	return &Watcher{
		cfg:    cfg,
		prefix: prefix,
		mirror: filepath.Join(cfg.CacheDir, "mirror.git"),
		trees:  filepath.Join(cfg.CacheDir, "trees"),
		base:   baseEnv(nil, sshCommand(cfg.SSHKeyFile)),
	}, nil
}

var hashPattern = regexp.MustCompile(`^([0-9a-f]{40}|[0-9a-f]{64})$`)

// Poll fetches the branch and returns the commits after the commit `after`,
// oldest first: each commit of the branch's first-parent history, with its
// changes relative to its first parent. It returns nothing when after is
// the head.
//
// When after is "" (the first run) Poll returns one Commit for the head
// whose Changes are every environment file, all added. When after is no
// longer in the branch's history, it does the same with Reset set. When
// after is in the history but not on its first-parent line (the branch was
// fast-forwarded to a merge of itself into another branch), it returns the
// head alone, with the changes since after.
//
// after must be a full commit hash. Errors name the repository and branch
// and carry git's message; ErrBranchNotFound and context errors can be
// tested with errors.Is.
func (w *Watcher) Poll(ctx context.Context, after string) ([]Commit, error) {
	if after != "" && !hashPattern.MatchString(after) {
		return nil, w.wrap("poll", fmt.Errorf("%q is not a full commit hash", after))
	}
	var commits []Commit
	err := w.locked(ctx, func() error {
		head, err := w.fetch(ctx)
		if err != nil {
			return err
		}
		if commits, err = w.since(ctx, after, head); err != nil {
			return err
		}
		return w.checkoutAll(ctx, commits)
	})
	if err != nil {
		return nil, w.wrap("poll", err)
	}
	return commits, nil
}

// Head fetches the branch and returns the hash of its head.
func (w *Watcher) Head(ctx context.Context) (string, error) {
	var head string
	err := w.locked(ctx, func() (err error) {
		head, err = w.fetch(ctx)
		return err
	})
	if err != nil {
		return "", w.wrap("fetch", err)
	}
	return head, nil
}

// Checkout returns the folder holding the files of commit, as Commit.Dir
// does, writing it again if it was pruned. It fetches only when the mirror
// lacks the commit; a commit the remote no longer has is an error.
func (w *Watcher) Checkout(ctx context.Context, commit string) (string, error) {
	if !hashPattern.MatchString(commit) {
		return "", w.wrap("checkout", fmt.Errorf("%q is not a full commit hash", commit))
	}
	var dir string
	err := w.locked(ctx, func() error {
		if d, ok, err := w.written(commit); ok {
			dir = d // complete (written whole, then renamed): no git needed
			return err
		}
		if err := w.ensureMirror(ctx); err != nil {
			return err
		}
		if !w.known(ctx, commit) {
			if _, err := w.fetch(ctx); err != nil {
				return err
			}
			if !w.known(ctx, commit) {
				return fmt.Errorf("the repository has no commit %s", commit)
			}
		}
		var err error
		dir, err = w.tree(ctx, commit)
		return err
	})
	if err != nil {
		return "", w.wrap("checkout "+commit, err)
	}
	return dir, nil
}

// Restore writes dir again when it is one of this Watcher's commit trees
// (a Commit.Dir) or a folder inside one, pruned since; any other folder is
// not its to restore.
func (w *Watcher) Restore(ctx context.Context, dir string) error {
	rel, err := filepath.Rel(filepath.Clean(w.trees), filepath.Clean(dir))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return nil
	}
	commit, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	_, err = w.Checkout(ctx, commit)
	return err
}

// locked runs fn holding the Watcher's mutex and the cache's file lock.
func (w *Watcher) locked(ctx context.Context, fn func() error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := os.MkdirAll(w.cfg.CacheDir, 0o755); err != nil {
		return err
	}
	unlock, err := filelock.Lock(ctx, filepath.Join(w.cfg.CacheDir, "lock"))
	if err != nil {
		return err
	}
	defer unlock()
	return fn()
}

func (w *Watcher) wrap(op string, err error) error {
	return fmt.Errorf("gitwatch: %s branch %s of %s: %w", op, w.cfg.Branch, displayURL(w.cfg.URL), err)
}

// cleanPath turns Config.Path into a slash-separated folder relative to the
// repository's root, "" for the root itself.
func cleanPath(p string) (string, error) {
	clean := path.Clean("/" + filepath.ToSlash(p))
	if strings.Contains("/"+filepath.ToSlash(p)+"/", "/../") {
		return "", fmt.Errorf("path %q leaves the repository", p)
	}
	return strings.TrimPrefix(clean, "/"), nil
}

// validBranch rejects names git would refuse, and anything that could be
// read as an option or a refspec.
func validBranch(b string) bool {
	if b == "" || strings.HasPrefix(b, "-") || strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") ||
		strings.HasSuffix(b, ".") || strings.HasSuffix(b, ".lock") ||
		strings.Contains(b, "..") || strings.Contains(b, "//") || strings.Contains(b, "@{") {
		return false
	}
	for _, r := range b {
		if r <= ' ' || r == 0x7f || strings.ContainsRune(`~^:?*[\`, r) {
			return false
		}
	}
	return true
}

// At returns commit as Poll would, with its Dir and Files but no Changes:
// what a caller re-evaluates when something outside the branch's history
// changed (another branch was pushed or deleted).
func (w *Watcher) At(ctx context.Context, commit string) (Commit, error) {
	if !hashPattern.MatchString(commit) {
		return Commit{}, w.wrap("read", fmt.Errorf("%q is not a full commit hash", commit))
	}
	var c Commit
	err := w.locked(ctx, func() (err error) {
		if err := w.ensureMirror(ctx); err != nil {
			return err
		}
		c, err = w.read(ctx, commit)
		return err
	})
	if err != nil {
		return Commit{}, w.wrap("read "+commit, err)
	}
	return c, nil
}

// read returns commit, which the mirror holds, with its Dir and Files but
// no Changes; the caller holds the lock.
func (w *Watcher) read(ctx context.Context, commit string) (Commit, error) {
	infos, err := w.log(ctx, "-1", commit)
	if err != nil {
		return Commit{}, err
	}
	commits, err := w.commits(ctx, infos[:1], [][]fileChange{nil})
	if err != nil {
		return Commit{}, err
	}
	c := commits[0]
	c.Dir, err = w.tree(ctx, commit)
	return c, err
}

// ErrInvalidBranch is a branch name FetchBranch refuses to hand to git.
var ErrInvalidBranch = errors.New("not a valid branch name")

// previewRef is where the mirror keeps a fetched branch other than the
// watched one (FetchBranch), apart from the watched branch's ref.
const previewRef = "refs/knit-preview/"

// FetchBranch fetches another branch of the repository (a pull request's,
// to preview it) and returns its head as At does: its Dir and Files, no
// Changes. A name git would refuse, or that could be read as an option or
// a refspec, is refused before anything runs.
func (w *Watcher) FetchBranch(ctx context.Context, branch string) (Commit, error) {
	if !validBranch(branch) {
		return Commit{}, w.wrap("fetch", fmt.Errorf("%w: %q", ErrInvalidBranch, branch))
	}
	var c Commit
	err := w.locked(ctx, func() error {
		if err := w.ensureMirror(ctx); err != nil {
			return err
		}
		fc, err := w.withToken(command{args: []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", w.cfg.URL,
			"+refs/heads/" + branch + ":" + previewRef + branch}})
		if err != nil {
			return err
		}
		if _, err := w.git(ctx, fc); err != nil {
			return err
		}
		out, err := w.git(ctx, command{args: []string{"rev-parse", "--verify", previewRef + branch + "^{commit}"}})
		if err != nil {
			return err
		}
		c, err = w.read(ctx, strings.TrimSpace(string(out)))
		return err
	})
	if err != nil {
		return Commit{}, fmt.Errorf("gitwatch: fetch branch %q of %s: %w", branch, displayURL(w.cfg.URL), err)
	}
	return c, nil
}
