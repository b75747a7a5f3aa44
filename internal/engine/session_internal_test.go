package engine

import (
	"context"
	"os"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
)

// pair: app takes db's url; db waits for approval, app does not.
const pair = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: pair}
spec:
  teamName: t
  envName: pair
  components:
    - name: db
      type: script
      script: {apply: "true"}
      outputs: [{name: url}]
    - name: app
      type: script
      autoApprove: true
      script: {apply: "true"}
      variables: [{name: url, valueFrom: db.url}]
`

// testEngine is an engine on a real SQLite store with a fake runner.
func testEngine(t *testing.T) (*Engine, *fake.Runner) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &fake.Runner{OutputsFor: func(name string, _ runner.Inputs) runner.Outputs {
		if name == "db" {
			return runner.Outputs{"url": {Value: "postgres://db"}}
		}
		return runner.Outputs{}
	}}
	return &Engine{Store: st, Runners: map[string]runner.Runner{spec.TypeScript: r}, DataDir: dir,
		Host: "test-host", PID: os.Getpid()}, r
}

func parseEnv(t *testing.T, doc string) *spec.Environment {
	t.Helper()
	env, diags := spec.Parse("env.yaml", t.TempDir(), []byte(doc))
	if diags.HasErrors() {
		t.Fatalf("spec: %s", diags)
	}
	return env
}

// began is a session of kind on env that has begun (it holds the lock and
// is recorded) and that nothing walks: a test drives its collaborators.
func began(t *testing.T, e *Engine, env *spec.Environment, kind store.RunKind, opts Options) *session {
	t.Helper()
	if opts.Parallelism == 0 {
		opts.Parallelism = 4
	}
	s, err := e.begin(context.Background(), env, kind, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.release(); err != nil {
			t.Error(err)
		}
		s.handle.cancel(context.Canceled)
	})
	return s
}

// bare is a session of kind on env with its collaborators and nothing
// begun: no lock, no record, no store (e, when set, gives its folders).
func bare(env *spec.Environment, kind store.RunKind, opts Options) *session {
	s := &session{e: &Engine{}, env: env, kind: kind, opts: opts, db: context.Background(),
		states: map[string]store.ComponentState{}, result: &Result{}}
	s.handle = &Run{log: newEventLog(Retention{})}
	s.wire()
	return s
}
