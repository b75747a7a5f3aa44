package engine_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store/sqlite"
)

// bigEnv is n script components in layers of 100; each takes an output of
// two components of the layer before it, so inputs flow along every edge.
func bigEnv(b *testing.B, n int) *spec.Environment {
	var sb strings.Builder
	sb.WriteString("apiVersion: knit.dev/v1\nkind: Environment\nmetadata: {name: big}\nspec:\n  teamName: t\n  envName: big\n  autoApprove: true\n  components:\n")
	for i := range n {
		fmt.Fprintf(&sb, "    - name: c%04d\n      type: script\n      script: {apply: \"true\"}\n      outputs: [{name: id}]\n", i)
		if prev := (i/100 - 1) * 100; i >= 100 {
			fmt.Fprintf(&sb, "      variables:\n        - {name: a, valueFrom: c%04d.id}\n        - {name: b, valueFrom: c%04d.id}\n", prev+i%100, prev+(i+1)%100)
		}
	}
	env, diags := spec.Parse("env.yaml", b.TempDir(), []byte(sb.String()))
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	return env
}

func benchEngine(b *testing.B) *engine.Engine {
	dir := b.TempDir()
	st, err := sqlite.Open(context.Background(), dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	r := &fake.Runner{OutputsFor: func(name string, _ runner.Inputs) runner.Outputs {
		return runner.Outputs{"id": {Value: name + "-id"}}
	}}
	return &engine.Engine{Store: st, Runners: map[string]runner.Runner{spec.TypeScript: r}, DataDir: dir,
		Host: "bench-host", PID: os.Getpid()}
}

func applyOK(b *testing.B, e *engine.Engine, env *spec.Environment, want engine.Status) {
	res, err := e.Apply(context.Background(), env, engine.Options{Actor: "tester", Parallelism: 4})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range res.Components {
		if c.Status != want {
			b.Fatalf("%s: %s (%s), want %s", c.Name, c.Status, c.Reason, want)
		}
	}
}

// BenchmarkEngineApply1000 measures the engine alone applying 1,000
// components for the first time: fake runner, real SQLite store.
func BenchmarkEngineApply1000(b *testing.B) {
	env := bigEnv(b, 1000)
	for b.Loop() {
		b.StopTimer()
		e := benchEngine(b)
		b.StartTimer()
		applyOK(b, e, env, engine.Applied)
	}
}

// BenchmarkEngineNoop1000 measures the engine re-applying 1,000 unchanged
// components: every one up to date by its fingerprint.
func BenchmarkEngineNoop1000(b *testing.B) {
	env := bigEnv(b, 1000)
	e := benchEngine(b)
	applyOK(b, e, env, engine.Applied)
	for b.Loop() {
		applyOK(b, e, env, engine.UpToDate)
	}
}
