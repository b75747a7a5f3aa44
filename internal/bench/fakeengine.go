package bench

import (
	"context"
	"fmt"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
)

// ApplyFake is what `knit apply -f file` does, with the in-memory fake
// runner in place of every tool: load and validate the file, open the
// library on dataDir, and apply with the given parallelism. It measures the
// engine alone (spec, graph, walk, fingerprints, store writes, events) in
// a process of its own, so its peak memory can be read from outside.
func ApplyFake(ctx context.Context, file, dataDir string, parallelism int) error {
	env, diags := spec.Load(file)
	if err := diags.Err(); err != nil {
		return err
	}
	fr := &fake.Runner{}
	k, err := adapters.Open(ctx, adapters.Config{Config: knit.Config{DataDir: dataDir,
		Runners: map[string]runner.Runner{spec.TypeScript: fr, spec.TypeTerraform: fr}}})
	if err != nil {
		return err
	}
	defer k.Close()
	res, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: env, Parallelism: parallelism,
		AutoApprove: true, Actor: "bench", Source: "bench", OnEvent: func(engine.Event) {}}).Run(ctx)
	if err != nil {
		return err
	}
	if res.Failed() {
		return fmt.Errorf("apply %s: %s", env.ID(), res.Status)
	}
	return nil
}
