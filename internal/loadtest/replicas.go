package loadtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"knit.dev/knit/internal/testtools/pgtest"
)

// pgRow measures the same requests as the SQLite row against cfg.Replicas
// knit serve replicas on one PostgreSQL database (a throwaway cluster in
// the scratch folder) holding the seeded store (knit store migrate),
// called round-robin.
func pgRow(ctx context.Context, cfg Config, data, token string, rep *Report) (err error) {
	tb := &cluster{}
	defer tb.cleanup()
	defer func() {
		if p := recover(); p != nil {
			if f, ok := p.(clusterFailed); ok {
				err = fmt.Errorf("postgres: %s", string(f))
				return
			}
			panic(p)
		}
	}()
	testing.Init() // pgtest asks testing.Short
	c := pgtest.Start(tb)
	dsn := c.DB(tb)
	dsnFile := filepath.Join(cfg.Work, "store.dsn")
	if err := os.WriteFile(dsnFile, []byte(dsn), 0o600); err != nil {
		return err
	}
	start := time.Now()
	mig := exec.CommandContext(ctx, cfg.Knit, "store", "migrate", "--data-dir", data, "--store-dsn-file", dsnFile)
	if out, err := mig.CombinedOutput(); err != nil {
		return fmt.Errorf("knit store migrate: %v\n%s", err, out)
	}
	rep.PGMigrate = time.Since(start)
	cfg.logf("copied the store into PostgreSQL in %s", rep.PGMigrate.Round(time.Millisecond))
	var bases []string
	for range cfg.Replicas {
		srv, err := startServer(ctx, cfg.Knit, data, cfg.Work, "--store-dsn-file", dsnFile)
		if err != nil {
			return err
		}
		defer srv.stop()
		bases = append(bases, srv.url)
	}
	time.Sleep(2 * time.Second)
	cl := newClient(bases[0], token, cfg.Clients)
	cl.bases = bases
	lists, err := cl.sample(ctx, cfg.Samples, func(i int) string {
		return fmt.Sprintf("/api/v1/environments?limit=50&cursor=%s", envID((i*7919)%cfg.Envs, cfg.Envs))
	})
	if err != nil {
		return err
	}
	rep.PGListP50, rep.PGListP99 = percentile(lists, 50), percentile(lists, 99)
	ones, err := cl.sample(ctx, cfg.Samples, func(i int) string {
		return "/api/v1/environments/" + envID((i*104729)%cfg.Envs, cfg.Envs)
	})
	if err != nil {
		return err
	}
	rep.PGOneP50, rep.PGOneP99 = percentile(ones, 50), percentile(ones, 99)
	rep.PGRequests, rep.PGErrors = cl.hammer(ctx, cfg.Clients, cfg.Duration, cfg.Envs)
	rep.Replicas = cfg.Replicas
	cfg.logf("postgres, %d replicas: list p99 %s, one environment p99 %s, %.0f requests/s, %d errors",
		cfg.Replicas, rep.PGListP99, rep.PGOneP99, rep.PGRPS(), rep.PGErrors)
	return nil
}

// clusterFailed is a failure pgtest reported through cluster.
type clusterFailed string

// cluster is the testing.TB pgtest needs, outside a test: failures
// panic (pgRow recovers them), cleanups run at the end.
type cluster struct {
	testing.TB
	cleanups []func()
}

func (c *cluster) Helper()                   {}
func (c *cluster) Cleanup(f func())          { c.cleanups = append(c.cleanups, f) }
func (c *cluster) Fatal(args ...any)         { panic(clusterFailed(fmt.Sprint(args...))) }
func (c *cluster) Fatalf(f string, a ...any) { panic(clusterFailed(fmt.Sprintf(f, a...))) }
func (c *cluster) Skip(args ...any)          { panic(clusterFailed(fmt.Sprint(args...))) }
func (c *cluster) Errorf(f string, a ...any) { fmt.Fprintf(os.Stderr, "postgres: "+f+"\n", a...) }
func (c *cluster) Name() string              { return "knit-loadtest" }

func (c *cluster) cleanup() {
	for i := len(c.cleanups) - 1; i >= 0; i-- {
		c.cleanups[i]()
	}
}
