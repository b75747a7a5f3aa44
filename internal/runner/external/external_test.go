package external_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/external"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// The test binary is also the runner process: run with
// KNIT_EXTERNAL_TEST_RUNNER set, it serves one request with a fake runner,
// as knit-kube does with the real ones.
func TestMain(m *testing.M) {
	if os.Getenv("KNIT_EXTERNAL_TEST_RUNNER") != "" {
		os.Exit(serveFake())
	}
	os.Exit(m.Run())
}

func serveFake() int {
	ctx, stop := signalContext()
	defer stop()
	r := &fake.Runner{
		OutputsFor: func(name string, in runner.Inputs) runner.Outputs {
			return runner.Outputs{"url": {Value: fmt.Sprintf("http://%s/%v", name, in["size"])}, "token": {Value: "t0k3n", Sensitive: true}}
		},
		Hook: func(ctx context.Context, op, comp string) error {
			switch comp {
			case "slow":
				<-ctx.Done() // blocks until knit interrupts the process
				return ctx.Err()
			case "broken":
				panic("broken runner")
			case "env":
				fmt.Fprintf(os.Stderr, "secret=%q\n", os.Getenv("KNIT_SECRET"))
			}
			return nil
		},
		Fail: map[string]map[string]error{"failing": {"plan": errors.New("provider unreachable")}},
	}
	newRunner := func(typ, dataDir string) (runner.Runner, error) {
		switch typ {
		case spec.TypeHelm:
			return lookingRunner{r}, nil
		case spec.TypeManifests:
			return r, nil // cannot look at workloads
		}
		return nil, fmt.Errorf("no runner for %q", typ)
	}
	if err := external.Serve(ctx, os.Stdin, os.Stdout, os.Stderr, newRunner); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

const envDoc = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: e}
spec:
  teamName: t
  envName: e
  components:
    - {name: app, type: helm, chart: {path: ./chart}}
    - {name: slow, type: helm, chart: {path: ./chart}}
    - {name: broken, type: helm, chart: {path: ./chart}}
    - {name: failing, type: helm, chart: {path: ./chart}}
    - {name: env, type: helm, chart: {path: ./chart}}
`

func setup(t *testing.T, typ string) (*external.Runner, func(name string) (runner.Component, *testtools.Log)) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "chart"), 0o700); err != nil {
		t.Fatal(err)
	}
	env, diags := spec.Parse(filepath.Join(dir, "env.yaml"), dir, []byte(envDoc))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := &external.Runner{Path: self, Type: typ, DataDir: dir, GracePeriod: 2 * time.Second,
		Env: []string{"KNIT_EXTERNAL_TEST_RUNNER=1", "PATH=" + os.Getenv("PATH")}}
	return r, func(name string) (runner.Component, *testtools.Log) {
		log := &testtools.Log{}
		wd := filepath.Join(dir, "work", name)
		if err := os.MkdirAll(wd, 0o700); err != nil {
			t.Fatal(err)
		}
		return runner.Component{Env: env.ID(), Spec: env, Def: env.Component(name), WorkDir: wd, Log: log,
			Sensitive: map[string]bool{"password": true}}, log
	}
}

func TestAnOperationRunsInTheRunnerProcessAndComesBackWhole(t *testing.T) {
	r, component := setup(t, spec.TypeHelm)
	ctx := context.Background()
	c, log := component("app")
	in := runner.Inputs{"size": 3.0, "password": "hunter2", "zones": []any{"a", "b"}}

	fp, err := r.Fingerprint(ctx, c, in)
	if err != nil {
		t.Fatal(err)
	}
	local, _ := (&fake.Runner{}).Fingerprint(ctx, c, in)
	if fp != local {
		t.Errorf("fingerprint %q, want the runner's own %q", fp, local)
	}

	p, err := r.Plan(ctx, c, in, runner.PlanOptions{Attributes: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Add != 1 || len(p.Resources) != 1 || p.Resources[0].Address != "fake.app" || p.Checksum == "" || p.File == "" {
		t.Errorf("plan %+v", p)
	}
	// Planned output values travel back too (never in the plan's JSON).
	if got := p.PlannedOutputs["url"].Value; got != "http://app/3" {
		t.Errorf("planned url %v", got)
	}
	if !p.PlannedOutputs["token"].Sensitive {
		t.Error("planned token lost its sensitivity")
	}
	if !strings.Contains(log.String(), "planning app") {
		t.Errorf("the runner's log did not reach the component's: %q", log.String())
	}

	outs, err := r.Apply(ctx, c, p)
	if err != nil {
		t.Fatal(err)
	}
	if outs["url"].Value != "http://app/3" || !outs["token"].Sensitive {
		t.Errorf("outputs %+v", outs)
	}
	if !strings.Contains(log.String(), "applied app") {
		t.Errorf("log %q", log.String())
	}
	if err := r.Destroy(ctx, c, in); err != nil {
		t.Fatal(err)
	}
}

func TestARunnerFailureOrPanicIsTheOperationsError(t *testing.T) {
	r, component := setup(t, spec.TypeHelm)
	ctx := context.Background()
	c, _ := component("failing")
	if _, err := r.Plan(ctx, c, nil, runner.PlanOptions{}); err == nil || err.Error() != "provider unreachable" {
		t.Errorf("plan of a failing component: %v", err)
	}
	c, _ = component("broken")
	if _, err := r.Plan(ctx, c, nil, runner.PlanOptions{}); err == nil || !strings.Contains(err.Error(), "panicked: broken runner") {
		t.Errorf("plan of a panicking runner: %v", err)
	}
	r2, component2 := setup(t, spec.TypeScript)
	c, _ = component2("app")
	if _, err := r2.Plan(ctx, c, nil, runner.PlanOptions{}); err == nil || !strings.Contains(err.Error(), `no runner for "script"`) {
		t.Errorf("a type the runner process lacks: %v", err)
	}
	// A runner process that dies without answering: its last words lead.
	dying := filepath.Join(t.TempDir(), "dying")
	if err := os.WriteFile(dying, []byte("#!/bin/sh\necho 'runtime: cannot allocate' >&2\necho 'fatal error: out of memory' >&2\nexit 2\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	r.Path = dying
	c, _ = component("app")
	if _, err := r.Plan(ctx, c, nil, runner.PlanOptions{}); err == nil || !strings.HasSuffix(strings.SplitN(err.Error(), "\n", 2)[0], ": fatal error: out of memory") {
		t.Errorf("a runner process that died: %v", err)
	}
	r.Path = filepath.Join(t.TempDir(), "missing")
	c, _ = component("app")
	if _, err := r.Plan(ctx, c, nil, runner.PlanOptions{}); err == nil {
		t.Error("a missing runner executable planned")
	}
}

func TestACancelledOperationInterruptsTheRunnerProcess(t *testing.T) {
	r, component := setup(t, spec.TypeHelm)
	c, _ := component("slow")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := r.Plan(ctx, c, nil, runner.PlanOptions{})
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		// The process saw SIGINT, its runner ctx.Err(), and answered.
		if err == nil || !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("cancelled plan: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the runner process outlived its cancelled operation")
	}
}

func TestTheRunnerProcessGetsOnlyTheEnvironmentItIsGiven(t *testing.T) {
	t.Setenv("KNIT_SECRET", "do-not-pass")
	r, component := setup(t, spec.TypeHelm)
	c, log := component("env")
	if _, err := r.Plan(context.Background(), c, nil, runner.PlanOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), `secret=""`) {
		t.Errorf("the runner process saw knit's environment: %q", log.String())
	}
}

func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// lookingRunner is the fake runner that can look at workloads: it names
// the objects asked for, and says whether its operation has a deadline.
type lookingRunner struct{ *fake.Runner }

func (lookingRunner) Workloads(ctx context.Context, c runner.Component, in runner.Inputs, objects []string) (runner.Workloads, error) {
	w := runner.Workloads{Checked: len(objects)}
	for _, o := range objects {
		w.NotReady = append(w.NotReady, o+": not ready in "+c.Def.Name)
	}
	if d, ok := ctx.Deadline(); ok {
		w.NotReady = append(w.NotReady, "deadline "+d.UTC().Format(time.RFC3339))
	}
	return w, nil
}

// A workloads look runs in the runner process with the caller's deadline;
// a runner that cannot look says so (runner.ErrUnsupported).
func TestAWorkloadsLookRunsInTheRunnerProcess(t *testing.T) {
	r, component := setup(t, spec.TypeHelm)
	c, _ := component("app")
	deadline := time.Now().Add(time.Hour).Truncate(time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	w, err := r.Workloads(ctx, c, runner.Inputs{}, []string{"Deployment/web"})
	want := []string{"Deployment/web: not ready in app", "deadline " + deadline.UTC().Format(time.RFC3339)}
	if err != nil || w.Checked != 1 || strings.Join(w.NotReady, "|") != strings.Join(want, "|") {
		t.Fatalf("look: %+v %v", w, err)
	}
	m, component := setup(t, spec.TypeManifests)
	c, _ = component("app")
	if _, err := m.Workloads(context.Background(), c, runner.Inputs{}, nil); !errors.Is(err, runner.ErrUnsupported) {
		t.Errorf("a runner that cannot look: %v", err)
	}
}
