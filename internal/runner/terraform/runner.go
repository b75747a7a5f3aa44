package terraform

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-exec/tfexec"

	"knit.dev/knit/internal/filelock"
	"knit.dev/knit/internal/gitsource"
	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/runner"
)

// DefaultGracePeriod is how long a cancelled tool may take to stop after its
// interrupt before it is killed, when Options.GracePeriod is zero.
const DefaultGracePeriod = 60 * time.Second

// Names inside a component's work dir. The module copy lives in moduleDir;
// everything that must survive re-copying it (state, saved plan, init stamp)
// lives beside it.
const (
	moduleDir = "module"
	stateFile = "terraform.tfstate"
	planFile  = "plan.tfplan"
	stampFile = "init.stamp"
)

// Options configures a Runner.
type Options struct {
	// DataDir holds what components share: the provider plugin cache
	// (DataDir/plugin-cache) and the git cache (DataDir/git).
	DataDir string
	// ToolVersion is the tool's name and version (Binary.Version's answer);
	// it is part of every fingerprint, so upgrading the tool re-plans.
	ToolVersion string
	// GracePeriod is how long a cancelled tool gets between its interrupt
	// (SIGINT) and SIGKILL. Zero means DefaultGracePeriod.
	GracePeriod time.Duration
	// ExtraEnv names variables of knit's environment the tool may see on
	// top of procexec.ToolEnv's allowlist; KNIT_* never pass.
	ExtraEnv []string
	// EncryptionKey, with OpenTofu, encrypts every component's state and
	// saved plans (32 bytes, AES-256-GCM; see secrets.go); empty: no
	// encryption by knit.
	EncryptionKey []byte
}

// Runner runs OpenTofu or Terraform for terraform components. It implements
// runner.Runner and is safe for concurrent use on different components; it
// relies on the engine never running two operations on one component at once.
type Runner struct {
	bin  Binary
	opts Options
	git  *gitsource.Cache

	hashes   fileHashes
	versions toolVersions
	// cacheLocking is whether the tool locks the plugin cache itself while
	// installing into it (OpenTofu 1.10 and later); see initLock.
	cacheLocking bool
	// inits counts init runs, for tests.
	inits atomic.Int64
}

var _ runner.Runner = (*Runner)(nil)

// New returns a Runner that runs bin with opts.
func New(bin Binary, opts Options) *Runner {
	if opts.GracePeriod == 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	r := &Runner{
		bin:  bin,
		opts: opts,
		git:  &gitsource.Cache{Dir: filepath.Join(opts.DataDir, "git")},
	}
	if v := r.versions.parsed(opts.ToolVersion); v != nil && r.isOpenTofu() {
		r.cacheLocking = !v.LessThan(openTofuCacheLocking)
	}
	return r
}

func (r *Runner) pluginCache() string { return filepath.Join(r.opts.DataDir, "plugin-cache") }

// env is the environment the tool runs with: the allowlisted part of knit's
// own (procexec.ToolEnv: never a KNIT_* variable), with knit's CLI
// config, automation settings and the shared plugin cache. Variables that
// tfexec manages itself (TF_IN_AUTOMATION, TF_INPUT, TF_LOG*, TF_CLI_ARGS*,
// TF_VAR_*, ...) are dropped: tfexec refuses them in SetEnv, sets
// TF_IN_AUTOMATION=1 on every command and passes -input=false; inputs come
// only from knit's own files.
func (r *Runner) env() map[string]string {
	m := map[string]string{}
	for _, kv := range r.bin.Env(procexec.ToolEnv(nil, r.opts.ExtraEnv)) {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	m["TF_PLUGIN_CACHE_DIR"] = r.pluginCache()
	// Link a provider the cache already holds instead of re-installing it
	// over the cached copy, which another component's plan or apply may be
	// running at that moment: init then writes to the cache only what is
	// missing, so tool runs never wait for an init. The cost: the lock file
	// in a component's private module copy records the hash of the cached
	// package only; a lock file shipped with the module is still enforced.
	m["TF_PLUGIN_CACHE_MAY_BREAK_DEPENDENCY_LOCK_FILE"] = "true"
	m["CHECKPOINT_DISABLE"] = "1"
	return tfexec.CleanEnv(m)
}

// session is one operation's handle on the tool, in one folder. Commands whose
// stdout is data (show -json, output -json) run quiet so neither plans nor
// sensitive outputs reach the log; the others stream into it.
type session struct {
	tf  *tfexec.Terraform
	log io.Writer
}

// session prepares tfexec for dir. Cancelling ctx sends the tool SIGINT and,
// if it has not exited after the grace period, SIGKILL (tfexec sets
// exec.Cmd.Cancel to an interrupt and WaitDelay to the grace period; the tool
// runs in its own process group, so a terminal's Ctrl-C reaches it only this way).
//
// extra is added to the environment (see toolEnv): TF_ENCRYPTION and the
// sensitive inputs as TF_VAR_*. tfexec refuses TF_VAR_* in SetEnv, which
// keeps the map it is given and copies it for every command; the secret
// variables are added to that map after SetEnv checked it, so they reach
// the tool through its environment and never a file or its argv
// (TestSensitiveInputsReachTheToolOnlyThroughItsEnvironment guards this).
func (r *Runner) session(ctx context.Context, dir string, log io.Writer, extra map[string]string) (*session, error) {
	tf, err := tfexec.NewTerraform(dir, r.bin.Path)
	if err != nil {
		return nil, err
	}
	env := r.env()
	if err := tf.SetEnv(env); err != nil {
		return nil, err
	}
	for k, v := range extra {
		env[k] = v
	}
	if err := tf.SetWaitDelay(r.opts.GracePeriod); err != nil {
		return nil, err
	}
	log = &lockedWriter{w: log}
	tf.SetStderr(log)
	// tfexec needs the tool's version before most commands; if it had to
	// ask the tool, it would copy the answer to stdout's writer, so this
	// happens while stdout is still unset.
	if err := r.learnVersion(ctx, tf); err != nil {
		return nil, err
	}
	return &session{tf: tf, log: log}, nil
}

func (s *session) loud() *tfexec.Terraform  { s.tf.SetStdout(s.log); return s.tf }
func (s *session) quiet() *tfexec.Terraform { s.tf.SetStdout(nil); return s.tf }

// lockedWriter serialises writes: tfexec copies stdout and stderr from two
// goroutines, and the component's log need not be safe for that.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// workDir returns the component's work dir as an absolute path.
func workDir(c runner.Component) (string, error) {
	if c.WorkDir == "" {
		return "", fmt.Errorf("component %s has no work dir", c.Def.Name)
	}
	return filepath.Abs(c.WorkDir)
}

func compName(c runner.Component) string {
	if c.Def == nil {
		return "?"
	}
	return c.Def.Name
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// openTofuCacheLocking is the first OpenTofu that locks the shared plugin
// cache while installing into it, so that concurrent inits are safe.
var openTofuCacheLocking = version.Must(version.NewVersion("1.10.0"))

// initLock guards the shared plugin cache around one init, across every
// knit process sharing the data dir (a flock on DataDir/plugin-cache.lock;
// an in-process mutex would not see another process). A tool that locks
// the cache itself takes the lock shared: its inits run at once, and only a
// tool that does not (Terraform, OpenTofu before 1.10), which takes it
// exclusively, waits for them or makes them wait. Other tool runs need no
// lock: init only ever adds missing providers to the cache (see env), never
// rewrites one a running tool may be executing.
func (r *Runner) initLock(ctx context.Context) (func(), error) {
	p := r.pluginCache() + ".lock"
	if r.cacheLocking {
		return filelock.LockShared(ctx, p)
	}
	return filelock.Lock(ctx, p)
}
