package procexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Sandbox is how knit runs code nobody reviewed (the tools and script
// commands of a branch's preview): as another user, with an explicit
// minimal environment, a bound on CPU time, in folders that user owns
// outside knit's data dir. It guards knit's files (the data dir, its key,
// the store, other work dirs) and knit's environment, given that the data
// dir is not traversable by that user (0700, owned by knit's user); it
// does not guard the network, or what that user may read elsewhere on the
// host (docs/security.md).
type Sandbox struct {
	// UID and GID are the user the commands run as; never knit's own.
	UID, GID uint32
	// CPU bounds each process's CPU time (RLIMIT_CPU; zero: DefaultCPU).
	CPU time.Duration
	// Dir holds the sandbox's work dirs: a folder outside the data dir
	// (MkdirAll'd 0711, owned by knit's user; each work dir in it is the
	// sandbox user's, 0700).
	Dir string
}

// DefaultCPU is a sandboxed process's CPU-time bound when Sandbox.CPU is zero.
const DefaultCPU = 5 * time.Minute

// ErrNoSandbox means a sandbox cannot be set up here: knit cannot run
// commands as another user (it is not root).
var ErrNoSandbox = errors.New("cannot run code of unreviewed branches as another user: knit serve must start as root to drop to --preview-uid (or pass --preview-unsandboxed to run previews as knit's own user, with knit's powers; docs/security.md)")

// Check reports whether s can confine commands here: knit runs as root
// (it sets the commands' user), s's user is not root, and its folder can
// be made.
func (s *Sandbox) Check() error {
	if os.Geteuid() != 0 || runtime.GOOS != "linux" {
		return ErrNoSandbox
	}
	if s.UID == 0 || s.GID == 0 {
		return fmt.Errorf("the sandbox's user must not be root (uid %d gid %d): pass --preview-uid and --preview-gid", s.UID, s.GID)
	}
	if !filepath.IsAbs(s.Dir) {
		return fmt.Errorf("the sandbox's folder %q must be an absolute path", s.Dir)
	}
	if err := os.MkdirAll(s.Dir, 0o711); err != nil {
		return fmt.Errorf("the sandbox's folder: %w", err)
	}
	return os.Chmod(s.Dir, 0o711) // its entries' names are not listed
}

// Confine makes cmd run as s's user, with no supplementary group, and
// with its CPU time bounded (RLIMIT_CPU: SIGXCPU, then SIGKILL). The bound
// is set by /bin/sh in the child itself before it execs the command (a
// process may lower its own limits; knit may not have CAP_SYS_RESOURCE
// to set another user's), so cmd's Path and Args become sh's. cmd must
// come from Command or CommandGrace, and its Env should be SandboxEnv's.
func (s *Sandbox) Confine(cmd *exec.Cmd) {
	confine(cmd, s)
	cpu := s.CPU
	if cpu <= 0 {
		cpu = DefaultCPU
	}
	sec := max(int64(cpu/time.Second), 1)
	args := append([]string{"/bin/sh", "-c", fmt.Sprintf(`ulimit -t %d && exec "$0" "$@"`, sec), cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args = "/bin/sh", args
}

// Own gives path and everything under it that knit's user owns to s's
// user: symlinks themselves, never what they point at, and never a file
// with another link (a hard link the sandbox made to a file of knit's
// user's elsewhere stays that user's).
func (s *Sandbox) Own(path string) error {
	me := os.Geteuid()
	return filepath.Walk(path, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		uid, links, ok := owner(info)
		if !ok || uid != me || (info.Mode().IsRegular() && links != 1) {
			return nil
		}
		return os.Lchown(p, int(s.UID), int(s.GID))
	})
}

// CreateFile writes data to a new file at p, 0600, replacing whatever the
// sandbox left there, never through a link it planted: knit writing into
// a folder its sandbox's user owns.
func CreateFile(p string, data []byte) error {
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// SandboxEnv is the whole environment of a sandboxed command: a PATH, a
// HOME and TMPDIR in its work dir home, a plain locale, and the
// variables in extra ("NAME=value"): nothing of knit's own environment.
func SandboxEnv(home string, extra ...string) []string {
	path := os.Getenv("PATH")
	if path == "" || strings.Contains(path, "KNIT_") {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	env := []string{"PATH=" + path, "HOME=" + home, "TMPDIR=" + home, "LANG=C.UTF-8", "USER=knit-preview"}
	return append(env, extra...)
}
