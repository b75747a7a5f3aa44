package engine_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/health"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
)

// rolled is an app checked over HTTP, under a rollout policy; EXTRA is
// where a revision adds a component. Neither is autoApprove: applies say
// so (Options.AutoApprove), and a rollback re-applies app without asking
// while extra's destroy waits.
const rolled = `
apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: t
  envName: rolled
  rollout: {onFailure: POLICY}
  components:
    - name: app
      type: script
      script: {apply: "true"}
      variables: [{name: version, value: VERSION}]
      outputs: [{name: url}]
      health:
        - name: http-ok
          http: {url: {valueFrom: app.url}, expectStatus: 200}
EXTRA`

const extra = `    - name: extra
      type: script
      script: {apply: "true"}
`

func rolledSpec(policy, version, more string) string {
	return strings.NewReplacer("POLICY", policy, "VERSION", version, "EXTRA", more).Replace(rolled)
}

// checkedHarness is a harness whose app's url output is a loopback
// endpoint answering with status's code.
func checkedHarness(t *testing.T) (*harness, *atomic.Int32) {
	var status atomic.Int32
	status.Store(200)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(srv.Close)
	h := newHarness(t)
	h.r.OutputsFor = func(string, runner.Inputs) runner.Outputs { return runner.Outputs{"url": {Value: srv.URL}} }
	h.e.Verifier = health.Runner{Clock: &instantClock{}}
	return h, &status
}

func verificationOf(t *testing.T, h *harness, n int) string {
	t.Helper()
	r, err := h.st.Revision(context.Background(), "t/rolled", n)
	if err != nil {
		t.Fatal(err)
	}
	return r.Verification
}

// A failed verification with onFailure rollback asks for a rollback whose
// reason names the check and the status it saw; the rollback re-applies
// the good revision's inputs, waits for approval before destroying what
// the failed revision added, and a rollback that fails verification asks
// for nothing more.
func TestFailedRolloutRollsBack(t *testing.T) {
	h, status := checkedHarness(t)
	ctx := context.Background()
	good := parse(t, rolledSpec("rollback", "1", ""))
	res, err := h.e.Apply(ctx, good, engine.Options{Actor: "tester", AutoApprove: true})
	if err != nil || res.Rollout != engine.RolloutNone {
		t.Fatalf("good apply: %v, rollout %q", err, res.Rollout)
	}
	if v := verificationOf(t, h, 1); v != store.VerificationSuccessful {
		t.Errorf("revision 1's verification %q", v)
	}

	status.Store(503)
	res, err = h.e.Apply(ctx, parse(t, rolledSpec("rollback", "2", extra)), engine.Options{Actor: "tester", AutoApprove: true})
	if err == nil || res.Rollout != engine.RolloutRollback {
		t.Fatalf("failing apply: %v, rollout %q", err, res.Rollout)
	}
	if v := verificationOf(t, h, 2); v != store.VerificationFailed {
		t.Errorf("revision 2's verification %q", v)
	}
	why := engine.RollbackReason(res)
	for _, want := range []string{"revision 2", "app/http-ok", "status 503"} {
		if !strings.Contains(why, want) {
			t.Errorf("rollback reason %q does not say %q", why, want)
		}
	}
	env, _ := h.st.Environment(ctx, "t/rolled")
	if env.Status != engine.EnvFailed {
		t.Errorf("environment after the failed rollout: %q", env.Status)
	}

	// The rollback: app goes back to version 1 without asking; extra's
	// destroy waits for a person.
	status.Store(200)
	applies := len(h.r.Calls("apply"))
	res, err = h.e.Do(ctx, engine.KindRollback, good, engine.Options{Actor: "knit-serve", Reason: why})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != engine.KindRollback || statuses(res)["app"] != engine.Applied || statuses(res)["extra"] != engine.Awaiting {
		t.Fatalf("rollback: %s %v", res.Status, statuses(res))
	}
	calls := h.r.Calls("apply")[applies:]
	if len(calls) != 1 || calls[0].Component != "app" || fmt.Sprint(calls[0].Inputs["version"]) != "1" {
		t.Errorf("the rollback applied %+v, want app at version 1", calls)
	}
	runs, _ := h.st.Runs(ctx, "t/rolled", store.RunFilter{Limit: 1})
	if runs[0].Kind != store.KindRollback || runs[0].Reason != why {
		t.Errorf("rollback run recorded %s, %q", runs[0].Kind, runs[0].Reason)
	}
	audit, _ := h.st.Audit(ctx, store.AuditFilter{Env: "t/rolled"})
	if last := audit[len(audit)-1]; last.Action != "rollback" || !strings.Contains(last.Reason, "status 503") {
		t.Errorf("audit: %+v", last)
	}

	// With rollout.autoApprove (Options.AutoApprove) the destroy goes on.
	res, err = h.e.Do(ctx, engine.KindRollback, good, engine.Options{Actor: "knit-serve", AutoApprove: true})
	if err != nil || statuses(res)["extra"] != engine.Destroyed || res.Status != store.StatusSucceeded {
		t.Fatalf("rollback with autoApprove: %v %s %v", err, res.Status, statuses(res))
	}
	if v := verificationOf(t, h, res.Revision); v != store.VerificationSuccessful {
		t.Errorf("the rollback's revision's verification %q", v)
	}

	// A rollback whose own verification fails does not roll back again.
	status.Store(500)
	if _, err := h.e.Apply(ctx, parse(t, rolledSpec("rollback", "3", "")), engine.Options{Actor: "tester", AutoApprove: true}); err == nil {
		t.Fatal("apply against a failing endpoint succeeded")
	}
	res, err = h.e.Do(ctx, engine.KindRollback, good, engine.Options{Actor: "knit-serve"})
	if err == nil || res.Status != store.StatusFailed || res.Rollout != engine.RolloutNone {
		t.Errorf("a rollback that fails verification: %v %s, rollout %q", err, res.Status, res.Rollout)
	}
}

// onFailure pause, and any Inconclusive verification, pause the
// environment instead of failing it.
func TestRolloutPauses(t *testing.T) {
	h, status := checkedHarness(t)
	ctx := context.Background()
	if _, err := h.e.Apply(ctx, parse(t, rolledSpec("pause", "1", "")), engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	status.Store(503)
	res, _ := h.e.Apply(ctx, parse(t, rolledSpec("pause", "2", "")), engine.Options{Actor: "tester", AutoApprove: true})
	env, _ := h.st.Environment(ctx, "t/rolled")
	if res.Rollout != engine.RolloutPaused || env.Status != engine.EnvPaused {
		t.Errorf("onFailure pause: rollout %q, environment %q", res.Rollout, env.Status)
	}

	// An endpoint nobody answers: every measurement an error, so
	// Inconclusive, which pauses even with onFailure rollback.
	h2 := newHarness(t)
	dead := httptest.NewServer(http.NotFoundHandler())
	dead.Close()
	h2.r.OutputsFor = func(string, runner.Inputs) runner.Outputs { return runner.Outputs{"url": {Value: dead.URL}} }
	h2.e.Verifier = health.Runner{Clock: &instantClock{}}
	res, err := h2.e.Apply(ctx, parse(t, rolledSpec("rollback", "1", "")), engine.Options{Actor: "tester", AutoApprove: true})
	if err == nil || res.Verification.Verdict != health.Inconclusive || res.Rollout != engine.RolloutPaused {
		t.Fatalf("inconclusive: %v, rollout %q, %+v", err, res.Rollout, res.Verification)
	}
	env, _ = h2.st.Environment(ctx, "t/rolled")
	r, _ := h2.st.Revision(ctx, "t/rolled", 1)
	if env.Status != engine.EnvPaused || r.Verification != store.VerificationInconclusive {
		t.Errorf("inconclusive: environment %q, revision verification %q", env.Status, r.Verification)
	}
}

// noRollback denies any rollback run: policies see the run's kind.
const noRollback = `package knit

deny contains {"msg": "rollbacks need a change ticket"} if input.run.kind == "rollback"
`

// A rollback run is judged by policy like any run: a denial stops it
// before anything applies.
func TestARollbackIsJudgedByPolicy(t *testing.T) {
	h, status := checkedHarness(t)
	ctx := context.Background()
	good := parse(t, rolledSpec("rollback", "1", ""))
	if _, err := h.e.Apply(ctx, good, engine.Options{Actor: "tester", AutoApprove: true}); err != nil {
		t.Fatal(err)
	}
	status.Store(503)
	if _, err := h.e.Apply(ctx, parse(t, rolledSpec("rollback", "2", "")), engine.Options{Actor: "tester", AutoApprove: true}); err == nil {
		t.Fatal("the failing apply succeeded")
	}
	applies := len(h.r.Calls("apply"))
	res, err := h.e.Do(ctx, engine.KindRollback, good, engine.Options{Actor: "knit-serve", Judge: judge(t, noRollback)})
	var denied *engine.PolicyDeniedError
	if !errors.As(err, &denied) || res.Status != store.StatusFailed || !res.Policy.Denied() {
		t.Fatalf("rollback under a policy that denies it: %v, %s", err, res.Status)
	}
	if n := len(h.r.Calls("apply")) - applies; n != 0 {
		t.Errorf("%d applies ran despite the denial", n)
	}
}
