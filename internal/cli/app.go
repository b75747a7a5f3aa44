package cli

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"path/filepath"

	"knit.dev/knit/internal/knit"
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

// open builds the library from the global flags and knit's environment.
func (d *deps) open(ctx context.Context) (*knit.Knit, error) {
	dir, err := d.dataDir()
	if err != nil {
		return nil, err
	}
	return d.openKnit(ctx, dir, nil, nil)
}

// withKnit checks the -o value, opens the library for fn and closes it after.
func (d *deps) withKnit(ctx context.Context, output string, fn func(*knit.Knit) error) error {
	if err := checkOutput(output); err != nil {
		return err
	}
	k, err := d.open(ctx)
	if err != nil {
		return err
	}
	defer k.Close()
	return fn(k)
}

// actor names who runs knit: KNIT_ACTOR, else the OS user.
func (d *deps) actor() string {
	if u := d.getenv("KNIT_ACTOR"); u != "" {
		return u
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "unknown"
}
