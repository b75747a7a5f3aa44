// Package adapters wires the concrete adapters knit ships with, the stores
// (SQLite in the data dir, or PostgreSQL) and the runners of the real tools (OpenTofu/Terraform, scripts,
// knit-kube for helm and manifests), into the library. It is the wiring
// edge: internal/knit takes its store and runners from its caller (as
// Helm's action.Configuration does), and only internal/cli/adapters.go, the
// cmd binaries and tests import this package (internal/archtest keeps the
// server and the dashboard from reaching it).
package adapters

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/external"
	"knit.dev/knit/internal/runner/script"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/postgres"
	"knit.dev/knit/internal/store/sqlite"
	"knit.dev/knit/internal/tfstate"
)

// Tools are the settings of the real runners.
type Tools struct {
	// DataDir holds the work dirs, plans and knit's key file.
	DataDir string
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
	// ToolEnv names variables of knit's environment that tools may see on
	// top of the built-in allowlist (PATH, HOME, TF_*, AWS_*, …). KNIT_*
	// variables never reach a tool.
	ToolEnv []string
	// GracePeriod is how long a cancelled tool has between its interrupt
	// and the kill of its whole process group (default procexec.Grace).
	GracePeriod time.Duration
	// States, when set, keeps terraform components' state in the store
	// rather than in work dirs: knit serves it to the tool over the
	// Terraform HTTP backend protocol on loopback (package tfstate). Open
	// sets it for a PostgreSQL store, which every replica shares.
	States store.TFStates
	// Host names this machine in the locks tools take (knit.Config.Host;
	// empty: its host name).
	Host string
	// Key is knit's key (keyfile.Load of DataDir), when the caller read
	// it already: a process reads it once. Nil: read when a runner first
	// needs it.
	Key []byte
	// Lease is the runs' lock lease (knit.Config.LockLease; zero: the
	// default): the state server's retries of a failing store, and the
	// tools' retries of the state server, are sized to it.
	Lease time.Duration
}

// StateKeyPurpose is the label that derives, from knit's key file, the
// key that encrypts OpenTofu state and plans (keyfile.TofuState: the
// purposes and their labels are keyfile's table), for tests that derive
// it by hand.
var StateKeyPurpose = keyfile.TofuState.Labels[0]

// OpenStore opens (or creates) the store knit keeps its records in: the
// PostgreSQL database dsn names, or with no dsn the SQLite file in dataDir.
// Either way knit.key in dataDir seals sensitive values, so every replica
// on one PostgreSQL database needs the same knit.key. Errors never quote
// dsn: it may hold a password.
func OpenStore(ctx context.Context, dataDir, dsn string) (store.Store, error) {
	return OpenStoreWith(ctx, dataDir, dsn, nil, postgres.Options{})
}

// OpenStoreWith is OpenStore with knit's key already read (nil: read from
// dataDir), and a PostgreSQL store's pool sized by pg (unused for SQLite).
func OpenStoreWith(ctx context.Context, dataDir, dsn string, key []byte, pg postgres.Options) (store.Store, error) {
	if dsn == "" {
		st, err := sqlite.OpenKey(ctx, dataDir, key)
		if err != nil {
			return nil, fmt.Errorf("open store in %s: %w", dataDir, err)
		}
		return st, nil
	}
	if key == nil {
		var err error
		if key, err = keyfile.Load(dataDir); err != nil {
			return nil, err
		}
	}
	return postgres.OpenWith(ctx, dsn, key, pg)
}

// Runners are the real tools, one per component type. Each is located
// when a run first needs it, so a missing OpenTofu/Terraform fails only
// terraform components.
func Runners(ctx context.Context, t Tools) map[string]runner.Runner {
	if t.Getenv == nil {
		t.Getenv = os.Getenv
	}
	// knit's key, read once for every runner that needs one, when the
	// first does (unless the caller read it: Tools.Key).
	key := sync.OnceValues(func() ([]byte, error) {
		if t.Key != nil {
			return t.Key, nil
		}
		return keyfile.Load(t.DataDir)
	})
	return map[string]runner.Runner{
		// Locating the tool and asking its version waits for a run that
		// has terraform components to plan.
		spec.TypeTerraform: runner.Lazy(func() runner.Runner { return t.terraform(ctx, key) }),
		spec.TypeScript:    runner.Lazy(func() runner.Runner { return t.script(key) }),
		spec.TypeHelm:      t.kube(spec.TypeHelm),
		spec.TypeManifests: t.kube(spec.TypeManifests),
	}
}

// Config is what Open wires: the library's Config, and the tools' settings
// for the runners it lacks.
type Config struct {
	knit.Config
	Tools
}

// Open builds a Knit from cfg with the shipped adapters filling what cfg
// leaves out: the SQLite store in cfg.DataDir when cfg.Store is nil (Close
// then closes it), the real runners when cfg.Runners is nil. When Open
// fails, a store it was to close is closed.
func Open(ctx context.Context, cfg Config) (k *knit.Knit, err error) {
	defer func() {
		if err != nil && cfg.CloseStore && cfg.Store != nil {
			cfg.Store.Close()
		}
	}()
	if cfg.Config.DataDir == "" {
		return nil, errors.New("knit: no data dir: pass --data-dir or set KNIT_DATA_DIR")
	}
	dir, err := filepath.Abs(cfg.Config.DataDir)
	if err != nil {
		return nil, err
	}
	cfg.Config.DataDir, cfg.Tools.DataDir = dir, dir
	if cfg.Tools.GracePeriod == 0 {
		cfg.Tools.GracePeriod = cfg.Config.GracePeriod
	}
	if cfg.Tools.Lease == 0 {
		cfg.Tools.Lease = cfg.Config.LockLease
	}
	if cfg.Tools.Host == "" {
		cfg.Tools.Host = cfg.Config.Host
	}
	if cfg.Store == nil {
		if cfg.Tools.Key == nil {
			if cfg.Tools.Key, err = keyfile.Load(dir); err != nil {
				return nil, err
			}
		}
		if cfg.Store, err = OpenStoreWith(ctx, dir, "", cfg.Tools.Key, postgres.Options{}); err != nil {
			return nil, err
		}
		cfg.CloseStore = true
	}
	if _, shared := cfg.Store.(*postgres.Store); shared && cfg.Tools.States == nil {
		cfg.Tools.States = cfg.Store
	}
	if cfg.Runners == nil {
		cfg.Runners = Runners(ctx, cfg.Tools)
	}
	return knit.Open(ctx, cfg.Config)
}

// kube runs components of typ in knit-kube, a process per operation
// (package external says why), found when a run first needs it.
func (t Tools) kube(typ string) runner.Runner {
	return runner.Lazy(func() runner.Runner {
		path := t.KubeRunner
		if path == "" {
			path = t.Getenv("KNIT_KUBE_RUNNER")
		}
		if path == "" {
			var err error
			if path, err = external.Locate("knit-kube"); err != nil {
				return runner.Unavailable(err)
			}
		}
		return &external.Runner{Path: path, Type: typ, DataDir: t.DataDir,
			Env: procexec.ToolEnv(nil, t.ToolEnv), GracePeriod: t.GracePeriod}
	})
}

func (t Tools) terraform(ctx context.Context, knitKey func() ([]byte, error)) runner.Runner {
	bin, err := terraform.Locate(t.TFBinary, t.Getenv)
	if err != nil {
		return runner.Unavailable(err)
	}
	tv, err := bin.CachedVersion(ctx, t.versionCache())
	if err != nil {
		return runner.Unavailable(err)
	}
	master, err := knitKey()
	if err != nil {
		return runner.Unavailable(fmt.Errorf("state encryption key: %w", err))
	}
	key := keyfile.TofuState.Key(master)
	opts := terraform.Options{DataDir: t.DataDir, ToolVersion: tv, ExtraEnv: t.ToolEnv,
		GracePeriod: t.GracePeriod, EncryptionKey: key}
	if t.States != nil {
		srv, err := tfstate.Start(t.States)
		if err != nil {
			return runner.Unavailable(err)
		}
		srv.Lease = t.Lease
		if t.Host != "" {
			srv.Host = t.Host
		}
		go func() { <-ctx.Done(); srv.Close() }() // the runner lives as long as ctx
		opts.States = srv
	}
	return terraform.New(bin, opts)
}

// script runs script components, sealing their work files with a key
// derived from knit's key file (keyfile.ScriptRunner).
func (t Tools) script(knitKey func() ([]byte, error)) runner.Runner {
	master, err := knitKey()
	if err != nil {
		return runner.Unavailable(fmt.Errorf("work file key: %w", err))
	}
	return script.New(script.Options{ExtraEnv: t.ToolEnv, GracePeriod: t.GracePeriod,
		Key: keyfile.ScriptRunner.Key(master)})
}

// versionCache is where the tool's version is remembered: the user's cache
// dir, shared by every data dir on the machine (a fresh data dir then
// starts no version process), else the data dir.
func (t Tools) versionCache() string {
	if t.CacheDir != "" {
		return t.CacheDir
	}
	if dir, err := os.UserCacheDir(); err == nil {
		return filepath.Join(dir, "knit")
	}
	return filepath.Join(t.DataDir, "cache")
}
