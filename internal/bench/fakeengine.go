package bench

import (
	"context"
	"fmt"
	"os"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store/sqlite"
)

// ApplyFake is what `knit apply -f file` does, with the in-memory fake
// runner in place of every tool: load and validate the file, open the SQLite
// store in dataDir, and apply with the given parallelism. It measures the
// engine alone (spec, graph, walk, fingerprints, store writes, events) in
// a process of its own, so its peak memory can be read from outside.
func ApplyFake(ctx context.Context, file, dataDir string, parallelism int) error {
	env, diags := spec.Load(file)
	if err := diags.Err(); err != nil {
		return err
	}
	st, err := sqlite.Open(ctx, dataDir)
	if err != nil {
		return err
	}
	defer st.Close()
	fr := &fake.Runner{}
	host, _ := os.Hostname()
	e := &engine.Engine{
		Store:   st,
		Runners: map[string]runner.Runner{spec.TypeScript: fr, spec.TypeTerraform: fr},
		DataDir: dataDir,
		Actor:   "bench",
		OnEvent: func(engine.Event) {},
		Host:    host,
		PID:     os.Getpid(),
	}
	res, err := e.Apply(ctx, env, engine.Options{Parallelism: parallelism, AutoApprove: true, Source: file})
	if err != nil {
		return err
	}
	if res.Failed() {
		return fmt.Errorf("apply %s: %s", env.ID(), res.Status)
	}
	return nil
}
