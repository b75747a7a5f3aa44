package engine_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
)

// instantClock runs a check's intervals without waiting.
type instantClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *instantClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *instantClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return ch
}

// healthy is an app whose url output points at a loopback endpoint the
// test controls, checked three times; the environment also runs a command.
const healthy = `
apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: t
  envName: verified
  autoApprove: true
  components:
    - name: app
      type: script
      script: {apply: "true"}
      variables: [{name: version, value: VERSION}]
      outputs: [{name: url}]
      health:
        - name: http-ok
          http: {url: {valueFrom: app.url}, expectStatus: 200, bodyRegex: ok}
          interval: 1s
          count: 3
  health:
    checks:
      - {name: shell, command: "test -n \"$PATH\""}
`

func TestApplySucceedsOnlyWhenVerificationSucceeds(t *testing.T) {
	var status atomic.Int32
	status.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	h := newHarness(t)
	h.r.OutputsFor = func(name string, in runner.Inputs) runner.Outputs {
		return runner.Outputs{"url": {Value: srv.URL + "/healthz"}}
	}
	h.e.Verifier = health.Runner{Clock: &instantClock{}}
	ctx := context.Background()

	var kinds []engine.EventKind
	var mu sync.Mutex
	res, err := h.e.Apply(ctx, parse(t, strings.Replace(healthy, "VERSION", "1", 1)), engine.Options{Actor: "tester", OnEvent: func(ev engine.Event) {
		mu.Lock()
		kinds = append(kinds, ev.Kind)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusSucceeded || res.Verification == nil || res.Verification.Verdict != health.Successful || len(res.Verification.Results) != 2 {
		t.Fatalf("healthy apply: %s %s %+v", res.Status, res.Error, res.Verification)
	}
	if got := res.Verification.Results[0]; got.Component != "app" || len(got.Measurements) != 3 || got.Last().StatusCode != 200 {
		t.Errorf("app's check: %+v", got)
	}
	mu.Lock()
	if !containsKind(kinds, engine.Verifying) || !containsKind(kinds, engine.HealthChecked) {
		t.Errorf("events %v, want verifying and health", kinds)
	}
	mu.Unlock()

	// A change after which the endpoint fails: the apply fails, naming
	// the check and the status it saw.
	status.Store(503)
	res, err = h.e.Apply(ctx, parse(t, strings.Replace(healthy, "VERSION", "2", 1)), engine.Options{Actor: "tester"})
	if err == nil || res.Status != store.StatusFailed || res.Verification.Verdict != health.Failed {
		t.Fatalf("failing apply: %v %s %+v", err, res.Status, res.Verification)
	}
	const want = "verification Failed: health check app/http-ok: failed (1) > failureLimit (0): status 503, want 200"
	if !strings.Contains(res.Error, want) {
		t.Errorf("error %q, want it to say %q", res.Error, want)
	}
	runs, _ := h.st.Runs(ctx, "t/verified", store.RunFilter{})
	if len(runs) != 2 || runs[0].Status != store.StatusFailed || !strings.Contains(runs[0].Error, want) {
		t.Errorf("recorded runs: %+v", runs)
	}
	env, _ := h.st.Environment(ctx, "t/verified")
	if env.Status != engine.EnvFailed {
		t.Errorf("environment status %q, want %q", env.Status, engine.EnvFailed)
	}
}

// An apply without health checks runs none; a check whose URL's output
// is missing fails without measuring.
func TestVerificationNeedsChecksAndTheirOutputs(t *testing.T) {
	h := newHarness(t)
	h.e.Verifier = health.Runner{Clock: &instantClock{}}
	res, err := h.e.Apply(context.Background(), parse(t, diamond), engine.Options{Actor: "tester"})
	if err != nil || res.Verification != nil {
		t.Fatalf("no checks: %v %+v", err, res.Verification)
	}
	h.r.OutputsFor = func(string, runner.Inputs) runner.Outputs { return runner.Outputs{} }
	res, err = h.e.Apply(context.Background(), parse(t, strings.Replace(healthy, "VERSION", "1", 1)), engine.Options{Actor: "tester"})
	if err == nil || res.Verification == nil || res.Verification.Results[0].Reason != health.ReasonBroken {
		t.Fatalf("missing output: %v %+v", err, res.Verification)
	}
	var ve *engine.VerificationError
	if !asVerification(err, &ve) || ve.Reason() != engine.ReasonVerificationFailed {
		t.Errorf("error %v is not a VerificationError", err)
	}
}

func containsKind(kinds []engine.EventKind, k engine.EventKind) bool {
	for _, x := range kinds {
		if x == k {
			return true
		}
	}
	return false
}

func asVerification(err error, target **engine.VerificationError) bool { return errors.As(err, target) }

// gatedVerifier holds a verification until the test lets it go.
type gatedVerifier struct {
	started, release chan struct{}
	health.Runner
}

func (g gatedVerifier) Verify(ctx context.Context, targets []health.Target) health.Report {
	close(g.started)
	<-g.release
	return g.Runner.Verify(ctx, targets)
}

// While an apply runs its checks, the live run says verifying.
func TestLiveRunSaysVerifying(t *testing.T) {
	h := newHarness(t)
	g := gatedVerifier{started: make(chan struct{}), release: make(chan struct{}), Runner: health.Runner{Clock: &instantClock{}}}
	h.e.Verifier = g
	env := parse(t, strings.Replace(strings.Replace(healthy, "VERSION", "1", 1), "http: {url: {valueFrom: app.url}, expectStatus: 200, bodyRegex: ok}", `command: "true"`, 1))
	run, err := h.e.Start(context.Background(), engine.KindApply, env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.started:
	case <-time.After(hangGuard):
		t.Fatal("verification never started")
	}
	if got := run.Status(); got != store.StatusVerifying {
		t.Errorf("status while verifying %q, want %q", got, store.StatusVerifying)
	}
	close(g.release)
	if _, err := run.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := run.Status(); got != store.StatusSucceeded {
		t.Errorf("status after %q, want %q", got, store.StatusSucceeded)
	}
}

// The environment's own Prometheus check judges the apply by the value a
// loopback query API answers.
func TestEnvironmentPrometheusCheckJudgesTheApply(t *testing.T) {
	var rate atomic.Value
	rate.Store("0.001")
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" || r.URL.Query().Get("query") != "sum(rate(errors[5m]))" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"` + rate.Load().(string) + `"]}]}}`))
	}))
	defer prom.Close()
	h := newHarness(t)
	h.e.Verifier = health.Runner{Clock: &instantClock{}}
	src := func(v string) string {
		return `
apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: t
  envName: prom
  autoApprove: true
  components:
    - {name: app, type: script, script: {apply: "true"}, variables: [{name: v, value: "` + v + `"}]}
  health:
    checks:
      - name: error-rate
        prometheus: {url: "` + prom.URL + `", query: "sum(rate(errors[5m]))", condition: "result < 0.01"}
        count: 2
`
	}
	res, err := h.e.Apply(context.Background(), parse(t, src("1")), engine.Options{Actor: "tester"})
	if err != nil || res.Status != store.StatusSucceeded || *res.Verification.Results[0].Last().Value != 0.001 {
		t.Fatalf("low error rate: %v %+v", err, res.Verification)
	}
	rate.Store("0.5")
	res, _ = h.e.Apply(context.Background(), parse(t, src("2")), engine.Options{Actor: "tester"})
	const want = "health check error-rate: failed (1) > failureLimit (0): result 0.5 of query sum(rate(errors[5m])): result < 0.01 does not hold"
	if res.Status != store.StatusFailed || !strings.Contains(res.Error, want) {
		t.Errorf("high error rate: %s %q, want it to say %q", res.Status, res.Error, want)
	}
}

// An apply that stops at an approval gate, or whose component failed,
// runs no health checks: there is nothing applied to verify.
func TestNoVerificationUnlessEverythingApplied(t *testing.T) {
	h := newHarness(t)
	probe := &countingVerifier{}
	h.e.Verifier = probe
	src := strings.Replace(strings.Replace(healthy, "VERSION", "1", 1), "autoApprove: true", "autoApprove: false", 1)
	res, err := h.e.Apply(context.Background(), parse(t, src), engine.Options{Actor: "tester"})
	if err != nil || res.Status != store.StatusAwaiting || res.Verification != nil {
		t.Errorf("gated: %v %s %+v", err, res.Status, res.Verification)
	}
	h.r.Fail = map[string]map[string]error{"app": {"apply": errors.New("boom")}}
	res, err = h.e.Apply(context.Background(), parse(t, strings.Replace(healthy, "VERSION", "2", 1)), engine.Options{Actor: "tester"})
	if err != nil || res.Status != store.StatusFailed || res.Verification != nil {
		t.Errorf("failed: %v %s %+v", err, res.Status, res.Verification)
	}
	if probe.calls.Load() != 0 {
		t.Errorf("%d verifications ran", probe.calls.Load())
	}
}

// countingVerifier counts verifications and passes them all.
type countingVerifier struct{ calls atomic.Int32 }

func (c *countingVerifier) Verify(context.Context, []health.Target) health.Report {
	c.calls.Add(1)
	return health.Report{Verdict: health.Successful}
}

// A command check's evidence is masked by the engine's rule: sensitive
// outputs and the tool environment's values never show.
func TestVerificationEvidenceIsMasked(t *testing.T) {
	h := newHarness(t)
	h.e.Verifier = health.Runner{Clock: &instantClock{}}
	h.r.OutputsFor = func(string, runner.Inputs) runner.Outputs {
		return runner.Outputs{"token": {Value: "s3cr3t-token-value", Sensitive: true}}
	}
	src := `
apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: t
  envName: masked
  autoApprove: true
  components:
    - name: app
      type: script
      script: {apply: "true"}
      outputs: [{name: token, sensitive: true}]
      health:
        - {name: leaky, command: "echo token=s3cr3t-token-value path=$PATH; exit 2"}
`
	res, _ := h.e.Apply(context.Background(), parse(t, src), engine.Options{Actor: "tester"})
	if res.Status != store.StatusFailed || res.Verification == nil {
		t.Fatalf("got %s %+v", res.Status, res.Verification)
	}
	msg := res.Verification.Results[0].Last().Message
	if strings.Contains(msg, "s3cr3t") || strings.Contains(res.Error, "s3cr3t") || strings.Contains(msg, os.Getenv("PATH")) ||
		!strings.Contains(msg, "token=(sensitive value)") {
		t.Errorf("evidence %q\nerror %q", msg, res.Error)
	}
}
