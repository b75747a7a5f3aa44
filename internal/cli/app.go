package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"

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

// storeDSN is the connection string of the PostgreSQL store: --store, else
// the file --store-dsn-file names, else KNIT_STORE_DSN; "" is the SQLite
// store in the data dir. It never appears in an error: it may hold a
// password.
func (d *deps) storeDSN() (string, error) {
	if d.global.store != "" && d.global.storeDSNFile != "" {
		return "", errors.New("--store and --store-dsn-file both name the store: pass one")
	}
	dsn, from := d.global.store, "--store"
	if d.global.storeDSNFile != "" {
		b, err := os.ReadFile(d.global.storeDSNFile)
		if err != nil {
			return "", fmt.Errorf("--store-dsn-file: %w", err)
		}
		dsn, from = strings.TrimSpace(string(b)), "--store-dsn-file "+d.global.storeDSNFile
	}
	if dsn == "" {
		dsn, from = d.getenv("KNIT_STORE_DSN"), "KNIT_STORE_DSN"
	}
	if dsn != "" && !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return "", fmt.Errorf("%s: the store must be a PostgreSQL URL (postgres://user@host:5432/db); leave it unset for SQLite in the data dir", from)
	}
	return dsn, nil
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
