package cli

// This is the one file of the CLI that names concrete adapters (runner and
// store implementations, and internal/adapters which wires them):
// internal/archtest allows them here and nowhere else in the package. The
// library takes its store and runners from here.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5/pgxpool"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/procexec"
	"knit.dev/knit/internal/runner/external"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store/postgres"
	"knit.dev/knit/internal/store/sqlite"
)

// openKnit builds the library on dataDir from the global flags and knit's
// environment: the store they name (see storeDSN), the real runners (tools
// may also see the variables toolEnv names). Close closes the store.
func (d *deps) openKnit(ctx context.Context, dataDir string, toolEnv, policies []string) (*knit.Knit, error) {
	k, _, err := d.openServeKnit(ctx, dataDir, toolEnv, policies, 0)
	return k, err
}

// openServeKnit is openKnit for knit serve: on a PostgreSQL store it also
// returns the store's connection pool, grown by queueConns connections,
// which the run queue shares (riverqueue.Open); nil on SQLite.
func (d *deps) openServeKnit(ctx context.Context, dataDir string, toolEnv, policies []string, queueConns int32) (*knit.Knit, *pgxpool.Pool, error) {
	dsn, err := d.storeDSN()
	if err != nil {
		return nil, nil, err
	}
	wd, err := d.watchdog.get()
	if err != nil {
		return nil, nil, err
	}
	key, err := keyfile.Load(dataDir) // once: the store and the runners take it
	if err != nil {
		return nil, nil, err
	}
	st, err := adapters.OpenStoreWith(ctx, dataDir, dsn, key, postgres.Options{ExtraConns: queueConns})
	if err != nil {
		return nil, nil, err
	}
	var pool *pgxpool.Pool
	if pg, ok := st.(*postgres.Store); ok {
		pool = pg.Pool()
	}
	k, err := adapters.Open(ctx, adapters.Config{
		Config: knit.Config{DataDir: dataDir, Store: st, CloseStore: true, Policies: policies, LockLease: d.global.lockLease, Watchdog: wd,
			Host: d.getenv("KNIT_HOST")},
		Tools: adapters.Tools{TFBinary: d.global.tfBinary, Getenv: d.getenv, ToolEnv: toolEnv, Key: key},
	})
	return k, pool, err
}

// migrateStore copies the SQLite store in dataDir into the new PostgreSQL
// store dsn names, returning the rows copied by table, and the tables it
// leaves as the migrations made them with why (postgres.Skipped).
func migrateStore(ctx context.Context, dataDir, dsn string) (map[string]int64, [][2]string, error) {
	key, err := keyfile.Load(dataDir) // once: both stores take it
	if err != nil {
		return nil, nil, err
	}
	src, err := sqlite.OpenKey(ctx, dataDir, key)
	if err != nil {
		return nil, nil, fmt.Errorf("open the SQLite store in %s: %w", dataDir, err)
	}
	defer src.Close()
	dst, err := postgres.Open(ctx, dsn, key)
	if err != nil {
		return nil, nil, err
	}
	defer dst.Close()
	counts, err := dst.Import(ctx, src, sqlite.Tables)
	if err != nil {
		return nil, nil, err
	}
	skipped := make([][2]string, 0, len(postgres.Skipped))
	for _, t := range postgres.Skipped {
		skipped = append(skipped, [2]string{t.Table, t.Why})
	}
	return counts, skipped, nil
}

// storeName says which PostgreSQL store dsn names, without its password.
func storeName(dsn string) string { return postgres.Redact(dsn) }

// knitKube is the knit-kube to run: KNIT_KUBE_RUNNER, else beside knit or
// on PATH.
func (d *deps) knitKube() (string, error) {
	if path := d.getenv("KNIT_KUBE_RUNNER"); path != "" {
		return path, nil
	}
	return external.Locate("knit-kube")
}

// valuesSchema is the checker of charts' values.schema.json: knit-kube's
// values-check, found when a validation first needs it.
func (d *deps) valuesSchema() spec.SchemaChecker {
	return func(checks []spec.SchemaCheck) ([][]spec.SchemaViolation, error) {
		path, err := d.knitKube()
		if err != nil {
			return nil, err
		}
		return external.ValuesSchema(path)(checks)
	}
}

// replaceWithKnitKube runs this command in knit-kube, which links the
// Kubernetes controller (see Kube): this process becomes `knit-kube knit
// ARGS`, with the same streams, environment and process ID, so signals
// reach the controller itself. It returns only when that fails.
func (d *deps) replaceWithKnitKube() error {
	if !d.ownProcess {
		return errors.New("knit controller runs in knit-kube: call cli.RunWith with a Kube (package kubecli)")
	}
	path, err := d.knitKube()
	if err != nil {
		return fmt.Errorf("knit controller runs in knit-kube: %w", err)
	}
	if err := procexec.Replace(path, append([]string{"knit-kube", "knit"}, d.args...)); err != nil {
		return fmt.Errorf("knit controller runs in knit-kube: %w (make build puts it beside knit)", err)
	}
	return nil
}

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

// storeReachable reports whether a store is there to read without making
// one: a PostgreSQL DSN is named, or the data dir holds SQLite's file.
func (d *deps) storeReachable() bool {
	if dsn, err := d.storeDSN(); err == nil && dsn != "" {
		return true
	}
	dir, err := d.dataDir()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(dir, sqlite.DBFile))
	return err == nil
}
