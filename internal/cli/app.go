package cli

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/script"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
)

// dataDir is --data-dir, else KNIT_DATA_DIR, else $XDG_DATA_HOME/knit, else ~/.local/share/knit.
func (d *deps) dataDir() (string, error) {
	dir := d.global.dataDir
	if dir == "" {
		dir = d.getenv("KNIT_DATA_DIR")
	}
	if dir == "" {
		if x := d.getenv("XDG_DATA_HOME"); x != "" {
			dir = filepath.Join(x, "knit")
		} else {
			home, err := os.UserHomeDir()
			if err != nil {
				return "", fmt.Errorf("no data dir: pass --data-dir or set KNIT_DATA_DIR")
			}
			dir = filepath.Join(home, ".local", "share", "knit")
		}
	}
	return filepath.Abs(dir)
}

func (d *deps) openStore(ctx context.Context) (store.Store, string, error) {
	dir, err := d.dataDir()
	if err != nil {
		return nil, "", err
	}
	st, err := sqlite.Open(ctx, dir)
	if err != nil {
		return nil, "", fmt.Errorf("open store in %s: %w", dir, err)
	}
	return st, dir, nil
}

// actor names who runs knit: the OS user.
func (d *deps) actor() string {
	if u := d.getenv("KNIT_ACTOR"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}

// newEngine wires the engine with the store and the runners for each type.
// A missing OpenTofu/Terraform fails only the terraform components.
func (d *deps) newEngine(ctx context.Context, st store.Store, dataDir string, onEvent func(engine.Event)) (*engine.Engine, error) {
	host, _ := os.Hostname()
	return &engine.Engine{
		Store: st,
		Runners: map[string]runner.Runner{
			// Locating the tool and asking its version waits for a run
			// that has terraform components to plan.
			spec.TypeTerraform: runner.Lazy(func() runner.Runner { return d.terraformRunner(ctx, dataDir) }),
			spec.TypeScript:    script.New(),
		},
		DataDir: dataDir,
		Actor:   d.actor(),
		OnEvent: onEvent,
		Host:    host,
		PID:     os.Getpid(),
	}, nil
}

func (d *deps) terraformRunner(ctx context.Context, dataDir string) runner.Runner {
	bin, err := terraform.Locate(d.global.tfBinary, d.getenv)
	if err != nil {
		return runner.Unavailable(err)
	}
	tv, err := bin.CachedVersion(ctx, filepath.Join(dataDir, "cache"))
	if err != nil {
		return runner.Unavailable(err)
	}
	return terraform.New(bin, terraform.Options{DataDir: dataDir, ToolVersion: tv})
}
