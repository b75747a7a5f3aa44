// Package knit is the one entry point to knit as a library: built from a
// Config that carries the store and the runners its caller chose, it wires
// the engine, starts runs as handles, and answers the read models
// (environments, components, drift, outputs, approvals, history, audit)
// with cursor pagination. The CLI, the server and the dashboard all call
// it; only the CLI's adapters.go (through internal/adapters) names the
// store and runner implementations.
package knit

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// Config is what a Knit is built from: DataDir, Store and Runners are
// required. The caller builds the store and the runners (internal/adapters
// wires the shipped ones; tests pass fakes), as Helm's action.Configuration
// is given its clients: the library names no implementation.
type Config struct {
	// DataDir holds the work dirs and plans.
	DataDir string
	// Store keeps knit's records. The caller keeps ownership and closes it
	// after Close, unless CloseStore hands it over.
	Store store.Store
	// CloseStore makes Close close Store.
	CloseStore bool
	// Runners drive the tools, by component type (spec.TypeTerraform, …).
	// A component whose type has none fails when it runs.
	Runners map[string]runner.Runner
	// Parallelism is the default number of components run at once (4).
	Parallelism int
	// GracePeriod is how long a cancelled tool has between its interrupt
	// and the kill of its whole process group (default procexec.Grace).
	GracePeriod time.Duration
	// Host and PID identify this process in locks; default the machine's
	// host name and this process.
	Host string
	PID  int
	// LockLease is how long a run's lock lives without renewal (60s).
	LockLease time.Duration
	// Watchdog, when set, stops a run's tools once its lease is no longer
	// known renewed, from a process of its own (procexec.Watchdog): a
	// knit that is stopped cannot leave its tools acting past its lease.
	Watchdog *procexec.Watchdog
	// Policies are folders of Rego policies that judge every run's plan
	// (knit serve --policies); a run may add its own (RunRequest).
	Policies []string
	// Now is the clock for records (tests).
	Now func() time.Time
}

// Knit is knit as a library: the configuration every action is built
// from, as Helm's action.Configuration (the store, the engine with its
// runners and clock, the policy folders, the caches). A write is an
// action built from it, a small type with its options and one Run (Run,
// the one door of every run; Decide; …); Knit itself keeps construction
// and what every action shares. It is safe for concurrent use by any
// number of goroutines: runs on different environments proceed in
// parallel.
type Knit struct {
	cfg      Config
	store    store.Store
	engine   *engine.Engine
	specs    revCache[*spec.Environment]
	outlines revCache[[]outlineComponent]
	tokens   tokenCache
	// restorer writes an environment's files again (SetDirRestorer).
	restorer atomic.Pointer[func(ctx context.Context, dir string) error]
	// fleetNudge is told of an operator's fleet action (SetFleetNudge).
	fleetNudge atomic.Pointer[func()]
	// rolloutNotify is told of rollouts' audit entries (SetRolloutNotify).
	rolloutNotify rolloutNotifier
}

// Open builds a Knit from cfg. It starts nothing: a tool is looked for
// when a run first needs it.
func Open(ctx context.Context, cfg Config) (*Knit, error) {
	if cfg.DataDir == "" {
		return nil, errors.New("knit: no data dir: pass --data-dir or set KNIT_DATA_DIR")
	}
	if cfg.Store == nil || cfg.Runners == nil {
		return nil, errors.New("knit: no store or no runners: the caller wires them (internal/adapters has the shipped ones)")
	}
	dir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	cfg.DataDir = dir
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 4
	}
	if cfg.Host == "" {
		cfg.Host, _ = os.Hostname()
	}
	if cfg.PID == 0 {
		cfg.PID = os.Getpid()
	}
	k := &Knit{cfg: cfg, store: cfg.Store, specs: revCache[*spec.Environment]{max: maxSpecs},
		outlines: revCache[[]outlineComponent]{max: maxOutlines}}
	k.engine = &engine.Engine{
		Store: k.store, Runners: cfg.Runners, DataDir: dir,
		Host: cfg.Host, PID: cfg.PID, LockLease: cfg.LockLease, Now: cfg.Now, EnsureDir: k.ensureDir,
		ToolGrace: cfg.GracePeriod, Watchdog: cfg.Watchdog,
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

// Lookup finds a running or recently finished run of this process by ID.
func (k *Knit) Lookup(id string) (*engine.Run, bool) { return k.engine.Lookup(id) }

// Cancel interrupts a run of this process by ID.
func (k *Knit) Cancel(id string) error { return k.engine.Cancel(id) }

// DataDir is the absolute data dir.
func (k *Knit) DataDir() string { return k.cfg.DataDir }

// Close waits for nothing: it closes the store if Config.CloseStore says
// so. Runs still going fail their next write; cancel and wait for them
// first.
func (k *Knit) Close() error {
	if k.cfg.CloseStore {
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
