package terraform

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-version"

	"knit.dev/knit/internal/filelock"
	"knit.dev/knit/internal/gitsource"
	"knit.dev/knit/internal/ocisource"
	"knit.dev/knit/internal/regsource"
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
	// (DataDir/plugin-cache), the git cache (DataDir/git) and the OCI
	// module cache (DataDir/oci).
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
	// States, when set, keeps every component's state in a backend all
	// replicas reach (see sharedstate.go); nil: in the work dir.
	States StateBackend
}

// Runner runs OpenTofu or Terraform for terraform components. It implements
// runner.Runner and is safe for concurrent use on different components; it
// relies on the engine never running two operations on one component at once.
type Runner struct {
	bin  Binary
	opts Options
	git  *gitsource.Cache
	oci  *ocisource.Cache
	reg  *regsource.Cache
	// srcs fetch a component's modules (fetchers.go).
	srcs sources

	hashes   fileHashes
	configs  configCache
	layouts  layoutMemo
	versions toolVersions
	plugins  pluginCache
	state    sharedState
	crypt    encrypter
	// inits counts init runs, commands every tool process, and collected
	// every layout collected (the whole module read), for tests.
	inits, commands, collected atomic.Int64
}

var _ runner.Runner = (*Runner)(nil)

// New returns a Runner that runs bin with opts.
func New(bin Binary, opts Options) *Runner {
	if opts.GracePeriod == 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	r := &Runner{
		bin:     bin,
		opts:    opts,
		git:     gitsource.InDataDir(opts.DataDir),
		oci:     ocisource.InDataDir(opts.DataDir),
		plugins: pluginCache{path: filepath.Join(opts.DataDir, "plugin-cache")},
		state:   sharedState{backend: opts.States},
		crypt:   encrypter{key: opts.EncryptionKey, tool: opts.ToolVersion},
	}
	// Registry modules: git downloads through the same git cache, the
	// token from the CLI config the tool gets (or TF_TOKEN_*), as OpenTofu.
	r.reg = regsource.InDataDir(opts.DataDir)
	r.reg.Git = r.git.Checkout
	r.reg.Credentials = regsource.Credentials{CLIConfig: bin.CLIConfig, Env: os.Environ()}
	r.srcs = sources{server: fetchers{git: r.git, oci: r.oci, reg: r.reg}, anon: anonymousFetchers(r.git, r.oci, r.reg)}
	if v := r.versions.parsed(opts.ToolVersion); v != nil && r.crypt.openTofu() {
		r.plugins.locking = !v.LessThan(openTofuCacheLocking)
	}
	return r
}

// pluginCache is the provider plugin cache every component shares
// (DataDir/plugin-cache), and the lock its inits take.
type pluginCache struct {
	path string
	// locking is whether the tool locks the cache itself while
	// installing into it (OpenTofu 1.10 and later); see lock.
	locking bool
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

// lock guards the shared plugin cache around one init, across every
// knit process sharing the data dir (a flock on DataDir/plugin-cache.lock;
// an in-process mutex would not see another process). A tool that locks
// the cache itself takes the lock shared: its inits run at once, and only a
// tool that does not (Terraform, OpenTofu before 1.10), which takes it
// exclusively, waits for them or makes them wait. Other tool runs need no
// lock: init only ever adds missing providers to the cache (see env), never
// rewrites one a running tool may be executing.
func (c pluginCache) lock(ctx context.Context) (func(), error) {
	p := c.path + ".lock"
	if c.locking {
		return filelock.LockShared(ctx, p)
	}
	return filelock.Lock(ctx, p)
}
