package server_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/controller"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/notify"
	"knit.dev/knit/internal/server"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// canaryTemplate is an environment rolled out by a canary strategy:
// NAME-db (marked) behind NAME-router, steps 10 → pause → 50.
const canaryTemplate = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: NAME}
spec:
  teamName: TEAM
  envName: NAME
  autoApprove: true
  rollout:
    strategy:
      canary:
        traffic: {component: NAME-router, weightInput: canary_weight}
        steps:
          - setWeight: 10
          - pause: {}
          - setWeight: 50
  components:
    - name: NAME-db
      type: script
      canary: true
      script: {apply: "true"}
      variables: [{name: release, value: "VERSION"}]
      outputs: [{name: host}]
    - name: NAME-router
      type: script
      script: {apply: "true"}
      variables:
        - {name: canary_weight, value: 0}
        - {name: stable, valueFrom: NAME-db.host}
        - {name: canary, valueFrom: NAME-db-canary.host}
`

// rolloutView is the part of GET …/rollout these tests read.
type rolloutView struct {
	ID, State, Strategy, Reason, RunID string
	Step, Steps, Weight                int
	Plan                               []struct{ Kind string }
	Evidence                           []struct {
		Phase, RunID, Status string
		Weight               int
	}
}

// rollTo applies team/name at version through the library as alice (the
// first time plainly; after, a rollout) and carries it on as the CLI's
// foreground does, until it pauses or ends.
func (h *harness) rollTo(team, name, version string) {
	h.t.Helper()
	ctx := context.Background()
	text := strings.NewReplacer("TEAM", team, "NAME", name, "VERSION", version).Replace(canaryTemplate)
	env, diags := spec.Parse("env.yaml", h.t.TempDir(), []byte(text))
	if diags.HasErrors() {
		h.t.Fatal(diags)
	}
	req := knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: "alice", Source: "cli"}
	for {
		res, err := knit.NewRun(h.k, req).Run(ctx)
		if err != nil || res.Status != store.StatusSucceeded {
			h.t.Fatalf("apply %s at %s: %v %v", name, version, res, err)
		}
		a, err := knit.NewRollouts(h.k).Next(ctx, req, res)
		if err != nil {
			h.t.Fatal(err)
		}
		if a.Run == nil {
			return
		}
		req = *a.Run
	}
}

// rollout reads GET …/rollout as token.
func (h *harness) rollout(env, token string) rolloutView {
	h.t.Helper()
	var v rolloutView
	h.do(call{method: "GET", path: "/api/v1/environments/" + env + "/rollout", token: token}, 200).decode(h.t, &v)
	return v
}

// steer POSTs …/rollout/ACTION as token, wanting status want.
func (h *harness) steer(env, action, token, reason string, want int) response {
	h.t.Helper()
	return h.do(call{method: "POST", path: "/api/v1/environments/" + env + "/rollout/" + action, token: token,
		body: map[string]any{"reason": reason}}, want)
}

// waitRollout waits until env's rollout is in state.
func (h *harness) waitRollout(env, token, state string) rolloutView {
	h.t.Helper()
	var v rolloutView
	waitUntil(h.t, env+"'s rollout "+state, func() bool { v = h.rollout(env, token); return v.State == state })
	return v
}

// routerWeights are the canary weights the router of env was applied with, in order.
func (h *harness) routerWeights(name string) []any {
	var out []any
	for _, c := range h.runner.Calls("apply") {
		if c.Component == name+"-router" {
			out = append(out, c.Inputs["canary_weight"])
		}
	}
	return out
}

// The rollout API: a viewer reads where a rollout stands (steps, weight,
// strategy, evidence with run IDs), an operator promotes, aborts (with a
// reason) and retries it, each audited and told to the notification
// sinks; the server carries the rest on. Another team's token, a viewer
// writing, no token, a bad body, an unknown environment and a rollout in
// no state for the action are refused, changing nothing.
func TestRolloutAPIShowsAndSteersARollout(t *testing.T) {
	rc := &receiver{}
	sink := httptest.NewServer(rc)
	defer sink.Close()
	h := newHarnessKnit(t, server.Config{}, knit.Config{}, controller.Config{Notify: []notify.Sink{{Name: "hook", Kind: notify.SinkWebhook, URL: sink.URL, Secret: "s3cret",
		Events: []string{string(notify.KindRolloutStep), string(notify.KindRolloutAborted), string(notify.KindRolloutPromoted)}}}})
	alice, vic, eve := h.token("alice", "operator", "shop"), h.token("vic", "viewer", "shop"), h.token("eve", "operator", "other")
	h.rollTo("shop", "web", "1")
	h.do(call{method: "GET", path: "/api/v1/environments/shop/web/rollout", token: vic}, 404) // none yet
	h.rollTo("shop", "web", "2")

	v := h.rollout("shop/web", vic)
	if v.State != knit.RolloutPaused || v.Step != 1 || v.Steps != 3 || v.Weight != 10 || v.Strategy != "canary" || len(v.Plan) != 3 || v.Plan[1].Kind != "pause" {
		t.Fatalf("paused rollout: %+v", v)
	}
	if len(v.Evidence) != 2 || v.Evidence[1].Weight != 10 || v.Evidence[1].RunID == "" || v.Evidence[1].Status != "succeeded" {
		t.Fatalf("evidence: %+v", v.Evidence)
	}
	h.do(call{method: "GET", path: "/api/v1/environments/shop/web/rollout", token: eve}, 403)
	h.do(call{method: "GET", path: "/api/v1/environments/shop/web/rollout", invalid: true}, 401)
	for _, action := range []string{"promote", "abort", "retry"} {
		h.steer("shop/web", action, vic, "", 403)
		h.steer("shop/web", action, eve, "", 403)
		h.steer("shop/nope", action, alice, "", 404)
		h.do(call{method: "POST", path: "/api/v1/environments/shop/web/rollout/" + action, token: alice, body: map[string]any{"why": "x"}, invalid: true}, 400)
		h.do(call{method: "POST", path: "/api/v1/environments/shop/web/rollout/" + action, invalid: true, body: map[string]any{}}, 401)
	}
	h.steer("shop/web", "retry", alice, "", 409) // paused: nothing failed
	if now := h.rollout("shop/web", vic); now.State != knit.RolloutPaused || now.Weight != 10 {
		t.Fatalf("a refused call changed the rollout: %+v", now)
	}

	var acc struct {
		Rollout rolloutView
		RunID   string
	}
	h.steer("shop/web", "promote", alice, "looks good", 202).decode(t, &acc)
	if acc.RunID == "" || acc.Rollout.Step != 2 || acc.Rollout.Weight != 50 {
		t.Fatalf("promote answered %+v", acc)
	}
	done := h.waitRollout("shop/web", vic, knit.RolloutSucceeded)
	if done.Evidence[2].RunID != acc.RunID || done.Evidence[2].Weight != 50 {
		t.Fatalf("the promoted step's evidence: %+v", done.Evidence)
	}
	h.steer("shop/web", "promote", alice, "", 409)
	h.steer("shop/web", "abort", alice, "", 409)
	h.steer("shop/web", "retry", alice, "", 409)

	// Abort with a reason, then retry: the same revision from its first step.
	h.rollTo("shop", "web", "3")
	h.steer("shop/web", "abort", alice, "error budget", 202).decode(t, &acc)
	aborted := h.waitRollout("shop/web", vic, knit.RolloutAborted)
	if !strings.Contains(aborted.Reason, "aborted by alice") || !strings.Contains(aborted.Reason, "error budget") {
		t.Fatalf("aborted: %+v", aborted)
	}
	h.steer("shop/web", "retry", alice, "fixed the dashboard", 202).decode(t, &acc)
	again := h.waitRollout("shop/web", vic, knit.RolloutPaused)
	if again.ID == aborted.ID || again.Step != 1 || again.Weight != 10 || len(again.Evidence) != 2 {
		t.Fatalf("retried after the abort: %+v (aborted %s)", again, aborted.ID)
	}

	// Aborted again, then another run applies the environment: a retry
	// would roll the older revision out over it, and is refused.
	h.steer("shop/web", "abort", alice, "", 202)
	h.waitRollout("shop/web", vic, knit.RolloutAborted)
	var started struct{ RunID string }
	h.do(call{method: "POST", path: "/api/v1/environments/shop/web/runs", token: alice, body: map[string]any{"kind": "apply"}}, 202).decode(t, &started)
	h.waitRun(started.RunID, alice)
	if msg := string(h.steer("shop/web", "retry", alice, "", 409).body); !strings.Contains(msg, "changed after rollout") {
		t.Fatalf("a retry over a later apply: %s", msg)
	}

	// Each person's action is audited as that person.
	var page struct {
		Items []struct{ Actor, Action, Detail, Reason string }
	}
	h.do(call{method: "GET", path: "/api/v1/audit?env=shop/web&limit=200", token: vic}, 200).decode(t, &page)
	seen := map[string]bool{}
	for _, e := range page.Items {
		if e.Actor == "alice" {
			seen[e.Action+" "+e.Reason] = true
		}
	}
	for _, want := range []string{"rollout-step looks good", "rollout-step error budget", "rollout-start fixed the dashboard"} {
		if !seen[want] {
			t.Errorf("no audit entry %q by alice in %+v", want, page.Items)
		}
	}
	waitUntil(t, "rollout.step, rollout.promoted and rollout.aborted told", func() bool {
		k := strings.Join(rc.kinds(), " ")
		return strings.Contains(k, "rollout.step") && strings.Contains(k, "rollout.promoted") && strings.Contains(k, "rollout.aborted")
	})
}

// denyMallory is a policy denying every run of a rollout mallory leads to.
const denyMallory = `package knit

deny contains "mallory may not move rollouts" if {
	input.run.source == "rollout"
	input.run.actor == "mallory"
}
`

// A promote is judged by policy like any change: the step it leads to is
// a run through the one door, as the person who promoted. A policy that
// denies it refuses it: the router never takes the next weight, the
// rollout waits (failed, at the weight it had) for a retry or an abort;
// once someone the policy allows retries, the step runs.
func TestRolloutPromoteDeniedByPolicyIsRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deny.rego"), []byte(denyMallory), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarnessKnit(t, server.Config{}, knit.Config{Policies: []string{dir}}, controller.Config{})
	alice, mallory := h.token("alice", "operator", "shop"), h.token("mallory", "operator", "shop")
	h.rollTo("shop", "gated", "1")
	h.rollTo("shop", "gated", "2")

	var acc struct{ RunID string }
	h.steer("shop/gated", "promote", mallory, "", 202).decode(t, &acc)
	if run := h.waitRun(acc.RunID, alice); run["status"] != "failed" || !strings.Contains(dumpAny(run), "mallory may not move rollouts") {
		t.Fatalf("the promoted step's run: %s", dumpAny(run))
	}
	v := h.waitRollout("shop/gated", alice, knit.RolloutFailed)
	if v.Weight != 10 || !strings.Contains(v.Reason, "denied by policy") {
		t.Fatalf("after the denied promote: %+v", v)
	}
	if w := h.routerWeights("gated"); dumpAny(w) != "[0,10]" {
		t.Fatalf("the router was applied with weights %v, want [0 10] (never 50)", w)
	}
	h.steer("shop/gated", "retry", mallory, "", 202).decode(t, &acc)
	h.waitRun(acc.RunID, alice)
	h.waitRollout("shop/gated", alice, knit.RolloutFailed)
	h.steer("shop/gated", "retry", alice, "", 202)
	h.waitRollout("shop/gated", alice, knit.RolloutSucceeded)
	// The last step is 50: the canary takes everything (100) before the
	// stable instance is replaced, then the weight returns to 0.
	if w := h.routerWeights("gated"); dumpAny(w) != "[0,10,50,100,0]" {
		t.Fatalf("the router was applied with weights %v, want [0 10 50 100 0]", w)
	}
}
