package engine_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
)

// hangGuard bounds the waits of tests that check that things happen at
// the same time: it turns "never" into a failure and is no claim about speed.
const hangGuard = 30 * time.Second

// diamond: a → b, a → c, b,c → d; d takes b's output and c's list element [1].
const diamond = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: diamond}
spec:
  teamName: t
  envName: diamond
  autoApprove: true
  components:
    - name: a
      type: script
      script: {apply: "true"}
      outputs: [{name: id}]
      variables:
        - {name: size, value: 3}
    - name: b
      type: script
      script: {apply: "true"}
      variables: [{name: parent, valueFrom: a.id}]
      outputs: [{name: url}]
    - name: c
      type: script
      script: {apply: "true"}
      variables: [{name: parent, valueFrom: a.id}]
      outputs: [{name: zones}, {name: token, sensitive: true}]
    - name: d
      type: script
      script: {apply: "true"}
      variables:
        - {name: url, valueFrom: b.url}
        - {name: zone, valueFrom: "c.zones[1]"}
        - {name: token, valueFrom: c.token}
        - {name: replicas, value: 2}
        - {name: labels, value: {tier: web}}
`

func parse(t *testing.T, doc string) *spec.Environment {
	t.Helper()
	env, diags := spec.Parse("env.yaml", t.TempDir(), []byte(doc))
	if diags.HasErrors() {
		t.Fatalf("spec: %s", diags)
	}
	return env
}

func outputs(name string, in runner.Inputs) runner.Outputs {
	switch name {
	case "a":
		return runner.Outputs{"id": {Value: "a-1"}}
	case "b":
		return runner.Outputs{"url": {Value: fmt.Sprintf("http://b/%v", in["parent"])}}
	case "c":
		return runner.Outputs{"zones": {Value: []any{"z0", "z1", "z2"}}, "token": {Value: "s3cr3t-token", Sensitive: true}}
	}
	return runner.Outputs{}
}

type harness struct {
	e   *engine.Engine
	r   *fake.Runner
	st  store.Store
	dir string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	r := &fake.Runner{OutputsFor: outputs}
	e := &engine.Engine{
		Store: st, Runners: map[string]runner.Runner{spec.TypeScript: r}, DataDir: dir,
		Host: "test-host", PID: os.Getpid(),
	}
	return &harness{e: e, r: r, st: st, dir: dir}
}

// applied parses src and applies it, as the tester.
func (h *harness) applied(t *testing.T, src string) *spec.Environment {
	t.Helper()
	env := parse(t, src)
	if _, err := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	return env
}

func statuses(res *engine.Result) map[string]engine.Status {
	m := map[string]engine.Status{}
	for _, c := range res.Components {
		m[c.Name] = c.Status
	}
	return m
}

func wantStatuses(t *testing.T, res *engine.Result, want map[string]engine.Status) {
	t.Helper()
	got := statuses(res)
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s: status %q, want %q (reason %q)", name, got[name], w, res.Component(name).Reason)
		}
	}
	if len(got) != len(want) {
		t.Errorf("components %v, want %v", got, want)
	}
}

// wantCause checks a component's cause: the reason for machines and what it
// names, never read from its words.
func wantCause(t *testing.T, res *engine.Result, name string, want store.Cause) {
	t.Helper()
	if got := res.Component(name).Cause; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: cause %+v, want %+v", name, got, want)
	}
}

func TestApplyDiamondRunsInOrderWithInputs(t *testing.T) {
	h := newHarness(t)
	// b and c each wait until the other has started: the test only passes
	// if they run at the same time.
	started := map[string]chan struct{}{"b": make(chan struct{}), "c": make(chan struct{})}
	h.r.Hook = func(ctx context.Context, op, comp string) error {
		if op != "apply" || started[comp] == nil {
			return nil
		}
		close(started[comp])
		other := map[string]string{"b": "c", "c": "b"}[comp]
		select {
		case <-started[other]:
			return nil
		case <-time.After(hangGuard):
			return errors.New("b and c did not run concurrently")
		}
	}
	res, err := h.e.Apply(context.Background(), parse(t, diamond), engine.Options{Actor: "tester", Parallelism: 4})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Applied, "b": engine.Applied, "c": engine.Applied, "d": engine.Applied})

	end := map[string]time.Time{}
	start := map[string]time.Time{}
	var dIn runner.Inputs
	for _, c := range h.r.Calls("apply") {
		start[c.Component], end[c.Component] = c.Start, c.End
		if c.Component == "d" {
			dIn = c.Inputs
		}
	}
	for _, e := range [][2]string{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}} {
		if start[e[1]].Before(end[e[0]]) {
			t.Errorf("%s started before %s finished", e[1], e[0])
		}
	}
	if dIn["url"] != "http://b/a-1" || dIn["zone"] != "z1" || dIn["token"] != "s3cr3t-token" {
		t.Errorf("d inputs = %v", dIn)
	}
	if _, ok := dIn["replicas"].(float64); !ok { // through JSON: a number stays a number
		t.Errorf("replicas = %#v, want a number", dIn["replicas"])
	}
	if m, ok := dIn["labels"].(map[string]any); !ok || m["tier"] != "web" {
		t.Errorf("labels = %#v, want a map", dIn["labels"])
	}
	runs, _ := h.st.Runs(context.Background(), "t/diamond", store.RunFilter{})
	if len(runs) != 1 || runs[0].Status != store.StatusSucceeded {
		t.Errorf("runs = %+v", runs)
	}
}

func TestFailureSkipsDependentsAndRerunFinishesTheRest(t *testing.T) {
	h := newHarness(t)
	env := parse(t, diamond+`
    - name: lone
      type: script
      script: {apply: "true"}
`)
	h.r.Fail = map[string]map[string]error{"b": {"apply": errors.New("boom")}}
	res, err := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester", Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Applied, "b": engine.Failed, "c": engine.Applied, "d": engine.Skipped, "lone": engine.Applied})
	if d := res.Component("d"); d.Reason != "skipped: b failed" || d.Code != "skipped: upstream b failed" {
		t.Errorf("d reason %q, code %q", d.Reason, d.Code)
	}
	wantCause(t, res, "d", engine.ReasonUpstreamFailed.Cause("b"))
	wantCause(t, res, "b", engine.ReasonToolFailed.Cause())
	wantCause(t, res, "a", store.Cause{})
	// The store shows exactly that.
	crs, _ := h.st.ComponentRuns(context.Background(), res.RunID)
	got := map[string]string{}
	for _, cr := range crs {
		got[cr.Component] = cr.Status
	}
	want := map[string]string{"a": "applied", "b": "failed", "c": "applied", "d": "skipped", "lone": "applied"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("stored component runs %v, want %v", got, want)
	}
	run, _ := h.st.Run(context.Background(), res.RunID)
	if run.Status != store.StatusFailed {
		t.Errorf("run status %q", run.Status)
	}

	// Fixed: only b and d run again.
	h.r.Fail = nil
	before := len(h.r.Calls("plan"))
	res, err = h.e.Apply(context.Background(), env, engine.Options{Actor: "tester", Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.UpToDate, "b": engine.Applied, "c": engine.UpToDate, "d": engine.Applied, "lone": engine.UpToDate})
	var planned []string
	for _, c := range h.r.Calls("plan")[before:] {
		planned = append(planned, c.Component)
	}
	if strings.Join(planned, ",") != "b,d" {
		t.Errorf("planned %v on re-run, want b,d", planned)
	}
}

func TestReapplyOfUnchangedEnvironmentRunsNoTool(t *testing.T) {
	h := newHarness(t)
	env := parse(t, diamond)
	if _, err := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	plans, applies := len(h.r.Calls("plan")), len(h.r.Calls("apply"))
	res, err := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.UpToDate, "b": engine.UpToDate, "c": engine.UpToDate, "d": engine.UpToDate})
	if len(h.r.Calls("plan")) != plans || len(h.r.Calls("apply")) != applies {
		t.Errorf("re-apply ran the tool: plans %d→%d, applies %d→%d", plans, len(h.r.Calls("plan")), applies, len(h.r.Calls("apply")))
	}
	// --refresh plans again.
	if _, err := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester", Refresh: true}); err != nil {
		t.Fatal(err)
	}
	if len(h.r.Calls("plan")) != plans+4 {
		t.Errorf("--refresh planned %d components, want 4", len(h.r.Calls("plan"))-plans)
	}
}

func TestApprovalGateHoldsDependents(t *testing.T) {
	h := newHarness(t)
	env := parse(t, strings.Replace(diamond, "autoApprove: true", "autoApprove: false", 1)+`
    - name: lone
      type: script
      autoApprove: true
      script: {apply: "true"}
`)
	res, err := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Awaiting, "b": engine.Waiting, "c": engine.Waiting, "d": engine.Waiting, "lone": engine.Applied})
	if !res.Awaiting() || res.Status != store.StatusAwaiting {
		t.Errorf("result awaiting=%v status=%q", res.Awaiting(), res.Status)
	}
	if h.r.Applied("a") {
		t.Error("a was applied without approval")
	}
	// A person says yes to a only; the others are asked too and refused.
	var asked []string
	var mu sync.Mutex
	confirm := func(name string, p *runner.Plan) bool {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, name)
		return name == "a"
	}
	res, _ = h.e.Apply(context.Background(), env, engine.Options{Actor: "tester", Confirm: confirm})
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Applied, "b": engine.Awaiting, "c": engine.Awaiting, "d": engine.Waiting, "lone": engine.UpToDate})
	res, _ = h.e.Apply(context.Background(), env, engine.Options{Actor: "tester", AutoApprove: true})
	wantStatuses(t, res, map[string]engine.Status{"a": engine.UpToDate, "b": engine.Applied, "c": engine.Applied, "d": engine.Applied, "lone": engine.UpToDate})
}

func TestConcurrentApplyIsRefusedNamingTheHolder(t *testing.T) {
	h := newHarness(t)
	env := parse(t, diamond)
	inside, release := make(chan struct{}), make(chan struct{})
	h.r.Hook = func(ctx context.Context, op, comp string) error {
		if comp == "a" && op == "plan" {
			close(inside)
			<-release
		}
		return nil
	}
	done := make(chan error)
	go func() {
		_, err := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester"})
		done <- err
	}()
	<-inside
	// Another engine in the same live process: its lease must be honoured.
	second := &engine.Engine{Store: h.st, Runners: h.e.Runners, DataDir: h.dir, Host: "test-host", PID: os.Getpid()}
	_, err := second.Apply(context.Background(), env, engine.Options{Actor: "tester"})
	var le *store.LockedError
	if !errors.Is(err, engine.ErrLocked) || !errors.As(err, &le) {
		t.Fatalf("second apply: %v, want ErrLocked", err)
	}
	if le.Holder.PID != os.Getpid() || le.Holder.Host != "test-host" || !strings.Contains(err.Error(), "test-host") {
		t.Errorf("holder %+v / message %q", le.Holder, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Released: a third apply goes through.
	if _, err := second.Apply(context.Background(), env, engine.Options{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
}

func TestDeadHolderIsTakenOverAndItsRunMarkedInterrupted(t *testing.T) {
	h := newHarness(t)
	env := parse(t, diamond)
	ctx := context.Background()
	// A knit that was kill -9'd: a run left "running" and its lock, by a pid that no longer exists.
	deadPID := 1 << 22
	now := time.Now()
	if _, err := h.st.PutRevision(ctx, store.Environment{ID: "t/diamond", Team: "t", Name: "diamond"}, store.Revision{Env: "t/diamond", Hash: "x", Spec: []byte("{}"), CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := h.st.CreateRun(ctx, store.Run{ID: "dead-run", Env: "t/diamond", Kind: "apply", Status: store.StatusRunning, PID: deadPID, StartedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.st.AcquireLock(ctx, store.Lock{Env: "t/diamond", RunID: "dead-run", PID: deadPID, Host: "test-host"}, time.Hour, nil); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatalf("apply after a crash: %v", err)
	}
	if res.Status != store.StatusSucceeded {
		t.Errorf("status %q", res.Status)
	}
	if r, _ := h.st.Run(ctx, "dead-run"); r.Status != store.StatusInterrupted {
		t.Errorf("crashed run recorded %q, want interrupted", r.Status)
	}
}

func TestCancelRecordsInterruptedAndReleasesLock(t *testing.T) {
	h := newHarness(t)
	env := parse(t, diamond)
	ctx, cancel := context.WithCancel(context.Background())
	h.r.Hook = func(ctx context.Context, op, comp string) error {
		if comp == "b" && op == "apply" {
			cancel()
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}
	res, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester", Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != store.StatusInterrupted {
		t.Errorf("run status %q, want interrupted", res.Status)
	}
	if st := res.Component("b").Status; st != engine.Canceled {
		t.Errorf("b: %q, want interrupted", st)
	}
	h.r.Hook = nil
	res, err = h.e.Apply(context.Background(), env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatalf("lock not released: %v", err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.UpToDate, "b": engine.Applied, "c": engine.Applied, "d": engine.Applied})
}

func TestTeardownReverseOrderAndDestroyProtection(t *testing.T) {
	h := newHarness(t)
	env := parse(t, diamond)
	ctx := context.Background()
	if _, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester", Parallelism: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.Teardown(ctx, env, engine.Options{Actor: "tester", Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, c := range h.r.Calls("destroy") {
		order = append(order, c.Component)
	}
	if strings.Join(order, ",") != "d,b,c,a" {
		t.Errorf("destroy order %v, want d,b,c,a", order)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Destroyed, "b": engine.Destroyed, "c": engine.Destroyed, "d": engine.Destroyed})
	if e, _ := h.st.Environment(ctx, "t/diamond"); e.Status != "torn-down" {
		t.Errorf("environment status %q", e.Status)
	}

	// Protect b: b and what it depends on (a) are refused; c and d go.
	protected := parse(t, strings.Replace(diamond, "    - name: b\n", "    - name: b\n      destroyProtection: true\n", 1))
	if _, err := h.e.Apply(ctx, protected, engine.Options{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	res, _ = h.e.Teardown(ctx, protected, engine.Options{Actor: "tester"})
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Refused, "b": engine.Refused, "c": engine.Destroyed, "d": engine.Destroyed})
	if !h.r.Applied("a") || !h.r.Applied("b") || h.r.Applied("c") {
		t.Error("protection not honoured in the world")
	}
	if !strings.Contains(res.Component("b").Reason, "destroyProtection") || !strings.Contains(res.Component("a").Reason, "b depends on it") {
		t.Errorf("reasons: b %q, a %q", res.Component("b").Reason, res.Component("a").Reason)
	}
	if res.Status != store.StatusFailed {
		t.Errorf("teardown with refusals: status %q, want failed", res.Status)
	}
}

// A component that failed before its tool changed anything, never having
// been applied, has nothing to destroy: teardown leaves it alone (its
// destroy could not even resolve its inputs) and destroys what it depends
// on.
func TestTeardownPassesAComponentThatFailedBeforeItsToolRan(t *testing.T) {
	h := newHarness(t)
	h.r.Fail = map[string]map[string]error{"b": {"plan": errors.New("no plan"), "destroy": errors.New("no destroy")}}
	env := parse(t, diamond)
	ctx := context.Background()
	res, err := h.e.Apply(ctx, env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Applied, "b": engine.Failed, "c": engine.Applied, "d": engine.Skipped})
	res, err = h.e.Teardown(ctx, env, engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Destroyed, "b": engine.Destroyed, "c": engine.Destroyed, "d": engine.Destroyed})
	if h.r.Applied("a") || h.r.Applied("c") {
		t.Error("a or c survived the teardown")
	}
}

func TestDestroyFlagDestroysOneComponentUnlessSomethingLiveNeedsIt(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.e.Apply(ctx, parse(t, diamond), engine.Options{Actor: "tester"}); err != nil {
		t.Fatal(err)
	}
	res, _ := h.e.Apply(ctx, parse(t, strings.Replace(diamond, "    - name: d\n", "    - name: d\n      destroy: true\n", 1)), engine.Options{Actor: "tester"})
	if st := res.Component("d").Status; st != engine.Destroyed || h.r.Applied("d") {
		t.Errorf("d: %q, still applied: %v", st, h.r.Applied("d"))
	}
	res, _ = h.e.Apply(ctx, parse(t, strings.Replace(diamond, "    - name: c\n", "    - name: c\n      destroy: true\n", 1)), engine.Options{Actor: "tester"})
	if st := res.Component("c").Status; st != engine.Refused || !h.r.Applied("c") {
		t.Errorf("c: %q (%s), want refused while d needs it", st, res.Component("c").Reason)
	}
}

func TestSensitiveValuesAreRedactedFromLogs(t *testing.T) {
	h := newHarness(t)
	h.r.Hook = func(ctx context.Context, op, comp string) error { return nil }
	env := parse(t, diamond)
	h.r.Fail = map[string]map[string]error{"d": {"apply": errors.New("tool said: token s3cr3t-token rejected")}}
	res, _ := h.e.Apply(context.Background(), env, engine.Options{Actor: "tester"})
	if r := res.Component("d").Reason; strings.Contains(r, "s3cr3t-token") || !strings.Contains(r, "(sensitive value)") {
		t.Errorf("reason not redacted: %q", r)
	}
	cr, err := h.st.LastComponentRun(context.Background(), "t/diamond", "d")
	if err != nil || strings.Contains(cr.Reason, "s3cr3t-token") {
		t.Errorf("stored reason %q (%v)", cr.Reason, err)
	}
}

func TestSelectedComponentsRunWithWhatTheyNeed(t *testing.T) {
	h := newHarness(t)
	res, err := h.e.Apply(context.Background(), parse(t, diamond), engine.Options{Actor: "tester", Components: []string{"b"}})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Applied, "b": engine.Applied})
	if _, err := h.e.Apply(context.Background(), parse(t, diamond), engine.Options{Actor: "tester", Components: []string{"nope"}}); err == nil {
		t.Error("unknown component accepted")
	}
}

func TestPlanOfNewEnvironmentUsesUpstreamPlannedOutputs(t *testing.T) {
	h := newHarness(t)
	// c's outputs are known only after it is applied; a's and b's plans know theirs.
	h.r.UnknownUntilApply = map[string]bool{"c": true}
	res, err := h.e.Plan(context.Background(), parse(t, diamond), engine.Options{Actor: "tester"})
	if err != nil {
		t.Fatal(err)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Planned, "b": engine.Planned, "c": engine.Planned, "d": engine.Deferred})
	if r := res.Component("d").Reason; !strings.Contains(r, "known only after c is applied") {
		t.Errorf("d: %q", r)
	}
	if d := res.Component("d"); d.ReasonCode != string(engine.ReasonKnownAfterApply) || len(d.Upstream) != 1 || !strings.HasPrefix(d.Upstream[0], "c.") {
		t.Errorf("d's cause %+v, want KnownAfterApply of an output of c", d.Cause)
	}
	// b was planned with the value a's plan knows.
	for _, c := range h.r.Calls("plan") {
		if c.Component == "b" && c.Inputs["parent"] != "a-1" {
			t.Errorf("b planned with parent %v", c.Inputs["parent"])
		}
	}
	if len(h.r.Calls("apply")) != 0 {
		t.Error("plan applied something")
	}
	if !res.HasChanges() {
		t.Error("plan of a new environment has no changes")
	}
	// Planned values are kept for this run only: nothing is stored as state.
	if states, _ := h.st.ComponentStates(context.Background(), "t/diamond"); len(states) != 0 {
		t.Errorf("a plan stored component states: %v", states)
	}
}

func TestApplyOfTeardownTrueDestroysInReverse(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.e.Apply(ctx, parse(t, diamond), engine.Options{Actor: "tester", Parallelism: 1}); err != nil {
		t.Fatal(err)
	}
	res, err := h.e.Apply(ctx, parse(t, strings.Replace(diamond, "  autoApprove: true\n", "  autoApprove: true\n  teardown: true\n", 1)), engine.Options{Actor: "tester", Parallelism: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != "teardown" {
		t.Errorf("run kind %q, want teardown", res.Kind)
	}
	wantStatuses(t, res, map[string]engine.Status{"a": engine.Destroyed, "b": engine.Destroyed, "c": engine.Destroyed, "d": engine.Destroyed})
	var order []string
	for _, c := range h.r.Calls("destroy") {
		order = append(order, c.Component)
	}
	if strings.Join(order, ",") != "d,b,c,a" {
		t.Errorf("destroy order %v", order)
	}
}
