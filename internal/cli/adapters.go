package cli

// This is the one file of the CLI that names concrete adapters (runner and
// store implementations): internal/archtest allows them here and nowhere
// else in the package. knit.Open still wires the runners itself (issue 25:
// the caller should inject them, from here); the store comes from here.

import (
	"context"
	"errors"
	"fmt"

	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner/external"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/postgres"
	"knit.dev/knit/internal/store/sqlite"
)

// openKnit builds the library on dataDir with the store the global flags
// and knit's environment name (see storeDSN); tools may also see the
// variables toolEnv names. Close closes the store.
func (d *deps) openKnit(ctx context.Context, dataDir string, toolEnv []string) (*knit.Knit, error) {
	dsn, err := d.storeDSN()
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, dataDir, dsn)
	if err != nil {
		return nil, err
	}
	k, err := knit.Open(ctx, knit.Config{DataDir: dataDir, Store: st, CloseStore: true,
		TFBinary: d.global.tfBinary, Getenv: d.getenv, ToolEnv: toolEnv})
	if err != nil {
		st.Close()
		return nil, err
	}
	return k, nil
}

// openStore opens the store knit keeps its records in: the PostgreSQL
// database dsn names, or with no dsn the SQLite file in dataDir. Either way
// knit.key in dataDir seals sensitive values, so every replica on one
// PostgreSQL database needs the same knit.key. Errors never quote dsn.
func openStore(ctx context.Context, dataDir, dsn string) (store.Store, error) {
	if dsn == "" {
		st, err := sqlite.Open(ctx, dataDir)
		if err != nil {
			return nil, fmt.Errorf("open store in %s: %w", dataDir, err)
		}
		return st, nil
	}
	key, err := keyfile.Load(dataDir)
	if err != nil {
		return nil, err
	}
	return postgres.Open(ctx, dsn, key)
}

// migrateStore copies the SQLite store in dataDir into the new PostgreSQL
// store dsn names, returning the rows copied by table.
func migrateStore(ctx context.Context, dataDir, dsn string) (map[string]int64, error) {
	src, err := sqlite.Open(ctx, dataDir)
	if err != nil {
		return nil, fmt.Errorf("open the SQLite store in %s: %w", dataDir, err)
	}
	defer src.Close()
	key, err := keyfile.Load(dataDir)
	if err != nil {
		return nil, err
	}
	dst, err := postgres.Open(ctx, dsn, key)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	return dst.Import(ctx, src, sqlite.Tables)
}

// storeName says which PostgreSQL store dsn names, without its password.
func storeName(dsn string) string { return postgres.Redact(dsn) }

// locateTools fills in the tools knit's runners would use: the OpenTofu or
// Terraform binary and its version, and the knit-kube that runs helm and
// manifests components.
func locateTools(ctx context.Context, d *deps, v *versionView) {
	bin, err := terraform.Locate(d.global.tfBinary, d.getenv)
	switch {
	case err == nil:
		v.ToolBin = bin.Path
		if tv, err := bin.Version(ctx); err == nil {
			v.Tool = tv
		} else {
			v.Tool = "unknown (" + err.Error() + ")"
		}
	case !errors.Is(err, terraform.ErrNoBinary):
		v.ToolErr = err.Error() // the named binary is missing or not executable
	}
	if v.KubeRunner = d.getenv("KNIT_KUBE_RUNNER"); v.KubeRunner == "" {
		if v.KubeRunner, err = external.Locate("knit-kube"); err != nil {
			v.KubeRunnerErr = err.Error()
		}
	}
}
