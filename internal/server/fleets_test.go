package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/fleet"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/view"
)

// seedRollout records a rollout of set team/fleet over its environments
// (first, labelled upgrade_testing, then the rest), as GitOps would.
func (h *harness) seedRollout(team string, envs ...string) {
	h.t.Helper()
	w := &spec.SetWaves{Steps: []spec.WaveStep{{Selector: &spec.Selector{MatchLabels: map[string]string{"upgrade_testing": "true"}}}, {Percent: 100}}}
	var ms []spec.WaveMember
	for i, e := range envs {
		m := spec.WaveMember{ID: e}
		if i == 0 {
			m.Labels = map[string]string{"upgrade_testing": "true"}
		}
		ms = append(ms, m)
	}
	r := fleet.New(team+"/fleet", team, "envs/fleet.yaml", "c0ffee1234", "commit c0ffee1234: bump", w, ms, time.Now())
	if err := h.k.State().PutWaveRollout(context.Background(), r, 0, nil); err != nil {
		h.t.Fatal(err)
	}
}

// The fleet endpoints: a set's rollout with each environment's release,
// filtered by labels; an operator's actions, team-checked and audited.
func TestFleetEndpoints(t *testing.T) {
	h := newHarness(t)
	viewer := h.token("watcher", "viewer")
	op := h.token("ci", "operator")
	payOp := h.token("pay-ci", "operator", "pay")
	h.seed("pay", "prod", envOpts{}, "seed")
	h.seedRollout("pay", "pay/prod", "pay/qa")
	h.seedRollout("ops", "ops/a", "ops/b")

	var list struct{ Items []string }
	h.do(call{method: "GET", path: "/api/v1/fleets", token: payOp}, 200).decode(t, &list)
	if strings.Join(list.Items, ",") != "pay/fleet" {
		t.Errorf("pay's operator lists %v", list.Items)
	}
	h.do(call{method: "GET", path: "/api/v1/fleets", invalid: true}, 401)

	var f view.Fleet
	h.do(call{method: "GET", path: "/api/v1/fleets/pay/fleet", token: viewer}, 200).decode(t, &f)
	if len(f.Envs) != 2 || f.Envs[0].ID != "pay/prod" || f.Envs[0].Revision != 1 || f.Envs[0].Wave != 1 || f.Rollout == nil ||
		!strings.Contains(f.Rollout.Why, "wave 1 of 2 (upgrade_testing=true)") {
		t.Fatalf("fleet %+v", f)
	}
	f = view.Fleet{}
	h.do(call{method: "GET", path: "/api/v1/fleets/pay/fleet?selector=upgrade_testing=true", token: viewer}, 200).decode(t, &f)
	if len(f.Envs) != 1 || f.Envs[0].ID != "pay/prod" {
		t.Errorf("selected %+v", f.Envs)
	}
	h.do(call{method: "GET", path: "/api/v1/fleets/pay/fleet?selector=upgrade_testing", token: viewer}, 400)
	h.do(call{method: "GET", path: "/api/v1/fleets/ops/fleet", token: payOp}, 403)
	h.do(call{method: "GET", path: "/api/v1/fleets/pay/nope", token: viewer}, 404)
	h.do(call{method: "GET", path: "/api/v1/fleets/pay/fleet", invalid: true}, 401)

	act := func(token, set, action string, want int, invalid bool) response {
		return h.do(call{method: "POST", path: "/api/v1/fleets/" + set + "/actions", token: token,
			body: map[string]any{"action": action, "reason": "test"}, invalid: invalid}, want)
	}
	// Another team's operator skipping a wave of ops' set: refused, nothing changes.
	act(payOp, "ops/fleet", "skip", 403, false)
	if r, _, _ := h.k.State().WaveRollout(context.Background(), "ops/fleet"); r.Waves[0].Skipped {
		t.Error("a refused skip skipped the wave")
	}
	act(viewer, "pay/fleet", "skip", 403, false)
	act(op, "pay/fleet", "rewind", 400, true)
	act(op, "pay/nope", "skip", 404, false)
	act(op, "pay/fleet", "resume", 409, false) // it is not halted
	act("", "pay/fleet", "skip", 401, true)
	f = view.Fleet{}
	act(payOp, "pay/fleet", "skip", 200, false).decode(t, &f)
	if !f.Rollout.Waves[0].Skipped || f.Envs[0].State != view.WaveEnvSkipped {
		t.Fatalf("after skip: %+v", f)
	}
	page, err := knit.NewRecords(h.k).Audit(context.Background(), knit.AuditFilter{Actor: "pay-ci"})
	if err != nil {
		t.Fatal(err)
	}
	audit := page.Items
	if len(audit) != 1 || audit[0].Action != "fleet-skip" || audit[0].Actor != "pay-ci" || !strings.Contains(audit[0].Detail, "skipped wave 1") {
		t.Errorf("audit %+v", audit)
	}
}
