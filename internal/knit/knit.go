// Package knit is the one entry point to knit as a library: built from a
// Config, it wires the store, the runners and the engine, starts runs as
// handles, and answers the read models (environments, components, drift,
// outputs, approvals, history, audit) with cursor pagination. The CLI, the
// server and the dashboard all call it; none of them wires a store or a
// runner itself.
package knit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/external"
	"knit.dev/knit/internal/runner/script"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
)

// Config is what a Knit is built from. Only DataDir is required.
type Config struct {
	// DataDir holds the store (unless Store is set), work dirs, plans and keys.
	DataDir string
	// Store, when set, is used instead of the SQLite file in DataDir; the
	// caller keeps ownership and closes it after Close, unless CloseStore
	// hands it over.
	Store store.Store
	// CloseStore makes Close close Store.
	CloseStore bool
	// TFBinary is the OpenTofu/Terraform binary; empty: KNIT_TF_BINARY,
	// then tofu, then terraform on PATH.
	TFBinary string
	// KubeRunner is the knit-kube executable that runs helm and manifests
	// components; empty: KNIT_KUBE_RUNNER, then knit-kube beside the
	// running binary, then on PATH.
	KubeRunner string
	// CacheDir keeps what knit learns about tools (their versions, keyed
	// by binary path, size and time); empty: the user's cache dir.
	CacheDir string
	// Getenv reads knit's own settings (KNIT_TF_BINARY, TF_CLI_CONFIG_FILE,
	// PATH); default os.Getenv.
	Getenv func(string) string
	// Parallelism is the default number of components run at once (4).
	Parallelism int
	// ToolEnv names variables of knit's environment that tools may see on
	// top of the built-in allowlist (PATH, HOME, TF_*, AWS_*, …). KNIT_*
	// variables never reach a tool.
	ToolEnv []string
	// GracePeriod is how long a cancelled tool has between its interrupt
	// and the kill of its whole process group (default procexec.Grace).
	GracePeriod time.Duration
	// Runners replaces the runners by component type (tests use fakes).
	Runners map[string]runner.Runner
	// Host and PID identify this process in locks; default the machine's
	// host name and this process.
	Host string
	PID  int
	// LockLease is how long a run's lock lives without renewal (60s).
	LockLease time.Duration
	// Now is the clock for records (tests).
	Now func() time.Time
}

// Knit is knit as a library. It is safe for concurrent use by any number of
// goroutines: runs on different environments proceed in parallel.
type Knit struct {
	cfg       Config
	store     store.Store
	ownsStore bool
	engine    *engine.Engine
	specs     revCache[*spec.Environment]
	outlines  revCache[[]outlineComponent]
	tokens    tokenCache
	// restorer writes an environment's files again (SetDirRestorer).
	restorer atomic.Pointer[func(ctx context.Context, dir string) error]
}

// Open builds a Knit from cfg: it opens (or creates) the store and wires the
// runners. A missing OpenTofu/Terraform fails only terraform components,
// when a run first needs one.
func Open(ctx context.Context, cfg Config) (*Knit, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("knit: no data dir: pass --data-dir or set KNIT_DATA_DIR")
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	cfg.DataDir = dir
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 4
	}
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	if cfg.PID == 0 {
		cfg.PID = os.Getpid()
	}
	k := &Knit{cfg: cfg, store: cfg.Store, ownsStore: cfg.CloseStore, specs: revCache[*spec.Environment]{max: maxSpecs},
		outlines: revCache[[]outlineComponent]{max: maxOutlines}}
	if k.store == nil {
		st, err := sqlite.Open(ctx, dir)
		if err != nil {
			return nil, fmt.Errorf("open store in %s: %w", dir, err)
		}
		k.store, k.ownsStore = st, true
	}
	runners := cfg.Runners
	if runners == nil {
		runners = k.defaultRunners(ctx)
	}
	k.engine = &engine.Engine{
		Store: k.store, Runners: runners, DataDir: dir,
		Host: cfg.Host, PID: cfg.PID, LockLease: cfg.LockLease, Now: cfg.Now, EnsureDir: k.ensureDir,
		ToolGrace: cfg.GracePeriod,
	}
	return k, nil
}

// SetDirRestorer makes runs call fn before they read an environment's
// files from a folder that is gone, such as a commit's tree GitOps pruned
// from its cache: fn writes the folder again, does nothing for a folder it
// does not keep, or says why it cannot.
func (k *Knit) SetDirRestorer(fn func(ctx context.Context, dir string) error) {
	k.restorer.Store(&fn)
}

// ensureDir is the engine's EnsureDir: the restorer, for a missing folder.
func (k *Knit) ensureDir(ctx context.Context, dir string) error {
	fn := k.restorer.Load()
	if fn == nil {
		return nil
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or a problem the run will name itself
	}
	return (*fn)(ctx, dir)
}

// defaultRunners are the real tools, one per component type.
func (k *Knit) defaultRunners(ctx context.Context) map[string]runner.Runner {
	return map[string]runner.Runner{
		// Locating the tool and asking its version waits for a run that
		// has terraform components to plan.
		spec.TypeTerraform: runner.Lazy(func() runner.Runner { return k.terraformRunner(ctx) }),
		spec.TypeScript:    runner.Lazy(k.scriptRunner),
		spec.TypeHelm:      k.kubeRunner(spec.TypeHelm),
		spec.TypeManifests: k.kubeRunner(spec.TypeManifests),
	}
}

// kubeRunner runs components of typ in knit-kube, a process per operation
// (package external says why), found when a run first needs it.
func (k *Knit) kubeRunner(typ string) runner.Runner {
	return runner.Lazy(func() runner.Runner {
		path := k.cfg.KubeRunner
		if path == "" {
			path = k.cfg.Getenv("KNIT_KUBE_RUNNER")
		}
		if path == "" {
			var err error
			if path, err = external.Locate("knit-kube"); err != nil {
				return runner.Unavailable(err)
			}
		}
		return &external.Runner{Path: path, Type: typ, DataDir: k.cfg.DataDir,
			Env: procexec.ToolEnv(nil, k.cfg.ToolEnv), GracePeriod: k.cfg.GracePeriod}
	})
}

func (k *Knit) terraformRunner(ctx context.Context) runner.Runner {
	bin, err := terraform.Locate(k.cfg.TFBinary, k.cfg.Getenv)
	if err != nil {
		return runner.Unavailable(err)
	}
	tv, err := bin.CachedVersion(ctx, k.versionCache())
	if err != nil {
		return runner.Unavailable(err)
	}
	master, err := keyfile.Load(k.cfg.DataDir)
	if err != nil {
		return runner.Unavailable(fmt.Errorf("state encryption key: %w", err))
	}
	key := keyfile.Derive(master, StateKeyPurpose)
	return terraform.New(bin, terraform.Options{DataDir: k.cfg.DataDir, ToolVersion: tv, ExtraEnv: k.cfg.ToolEnv,
		GracePeriod: k.cfg.GracePeriod, EncryptionKey: key})
}

// scriptRunner runs script components, sealing their work files with a
// key derived from knit's key file.
func (k *Knit) scriptRunner() runner.Runner {
	master, err := keyfile.Load(k.cfg.DataDir)
	if err != nil {
		return runner.Unavailable(fmt.Errorf("work file key: %w", err))
	}
	return script.New(script.Options{ExtraEnv: k.cfg.ToolEnv, GracePeriod: k.cfg.GracePeriod,
		Key: keyfile.Derive(master, ScriptKeyPurpose)})
}

// versionCache is where the tool's version is remembered: the user's cache
// dir, shared by every data dir on the machine (a fresh data dir then
// starts no version process), else the data dir.
func (k *Knit) versionCache() string {
	if k.cfg.CacheDir != "" {
		return k.cfg.CacheDir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "knit")
	}
	return filepath.Join(k.cfg.DataDir, "cache")
}

// StateKeyPurpose derives, from knit's key file, the key that encrypts
// OpenTofu state and saved plans.
const StateKeyPurpose = "opentofu state and plans"

// ScriptKeyPurpose derives, from knit's key file, the key that seals script
// components' saved plans and outputs in their work dirs.
const ScriptKeyPurpose = "script work files"

// DataDir is the absolute data dir.
func (k *Knit) DataDir() string { return k.cfg.DataDir }

// Close waits for nothing: it closes the store if Open opened it. Runs
// still going fail their next write; cancel and wait for them first.
func (k *Knit) Close() error {
	if k.ownsStore {
		return k.store.Close()
	}
	return nil
}

func (k *Knit) now() time.Time {
	if k.cfg.Now != nil {
		return k.cfg.Now()
	}
	return time.Now()
}
