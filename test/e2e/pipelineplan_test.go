package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// releasePlan is knit pipeline plan -o json, as the test reads it.
type releasePlan struct {
	Release string
	Stages  []struct {
		Stage, Env, Current, Status, Error string
		Components                         []struct {
			Name                 string
			Add, Change, Destroy int
		}
	}
}

func (p releasePlan) counts(stage string) (status string, add, change, destroy int) {
	for _, s := range p.Stages {
		if s.Stage == stage {
			for _, c := range s.Components {
				add, change, destroy = add+c.Add, change+c.Change, destroy+c.Destroy
			}
			return s.Status, add, change, destroy
		}
	}
	return "", 0, 0, 0
}

// TestPipelinePlanShowsWhatAReleaseChangesInEachStage (issue 37): R0
// (module v1) passes dev and waits for prod's approval; R1 (v2) replaces
// it in dev. knit pipeline plan web --release R0 plans each stage as the
// server would apply R0 there: dev's app changes back from v2 to
// v1, prod, never applied, creates the app; nothing is applied
// (dev keeps v2, prod has no revision). A viewer, another team's operator
// and the local CLI (which has no repository) are refused; an unknown
// release is named.
func TestPipelinePlanShowsWhatAReleaseChangesInEachStage(t *testing.T) {
	t.Parallel()
	requireTofu(t)
	w := newWorld(t)
	probe := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprint(rw, "ok") }))
	defer probe.Close()
	repo, s := webTrain(t, w, probe.URL, []string{"dev", "prod"},
		"    - {name: dev, file: ../stages/dev.yaml}\n    - {name: prod, file: ../stages/prod.yaml, approval: {required: 1}}\n", nil)
	admin := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	var r0 string
	s.eventually("R0 waits for prod's approval", func() bool {
		_, _, waiting, reason := w.pipelineStatus(admin).stage("prod")
		r0 = waiting
		return reason == "AwaitingApproval"
	})
	repo.commit("release v2", map[string]string{"stages/dev.yaml": stageEnv("dev", "2", probe.URL+"/dev")})
	var r1 string
	s.eventually("R1 holds dev", func() bool {
		cur, _, _, _ := w.pipelineStatus(admin).stage("dev")
		r1 = cur
		return cur != "" && cur != r0
	})
	devBefore := w.ok("status", "shop/dev", "-o", "json").stdout

	op := strings.TrimSpace(w.ok("token", "create", "carol", "--role", "operator", "--team", "shop").stdout)
	asOp := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + op}
	r := w.knitWith(asOp, "pipeline", "plan", "web", "--release", r0, "-o", "json")
	if r.code != 0 {
		t.Fatalf("knit pipeline plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var p releasePlan
	if err := json.Unmarshal([]byte(r.stdout), &p); err != nil {
		t.Fatalf("knit pipeline plan -o json: %v\n%s", err, r.stdout)
	}
	if st, add, change, destroy := p.counts("dev"); st != "planned" || add != 0 || change != 1 || destroy != 0 {
		t.Errorf("dev's plan of R0: %s, ~%d +%d -%d; want planned, the app changed back to v1 (~1 +0 -0)\n%s", st, change, add, destroy, r.stdout)
	}
	if st, add, change, destroy := p.counts("prod"); st != "planned" || add != 1 || change != 0 || destroy != 0 {
		t.Errorf("prod's plan of R0: %s, ~%d +%d -%d; want planned, the app created (~0 +1 -0)\n%s", st, change, add, destroy, r.stdout)
	}
	if len(p.Stages) != 2 || p.Stages[0].Current != r1 || p.Stages[1].Current != "" {
		t.Errorf("the stages' current releases: %+v; want dev on %s, prod on none", p.Stages, r1)
	}
	if after := w.ok("status", "shop/dev", "-o", "json").stdout; after != devBefore {
		t.Errorf("planning R0 changed dev:\nbefore %s\nafter  %s", devBefore, after)
	}
	if out := w.knitWith(admin, "status", "shop/prod"); out.code == 0 && strings.Contains(out.stdout, "revision 1") {
		t.Errorf("planning R0 applied prod:\n%s", out.stdout)
	}

	text := w.knitWith(asOp, "pipeline", "plan", "web", "--release", r0, "--stage", "prod").stdout
	if !strings.Contains(text, "stage prod (shop/prod, holds no release): planned, ~0 +1 -0") || strings.Contains(text, "stage dev") {
		t.Errorf("knit pipeline plan --stage prod:\n%s", text)
	}
	viewer := strings.TrimSpace(w.ok("token", "create", "vic", "--role", "viewer", "--team", "shop").stdout)
	other := strings.TrimSpace(w.ok("token", "create", "olga", "--role", "operator", "--team", "data").stdout)
	for who, env := range map[string][]string{"a viewer": {"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + viewer},
		"another team's operator": {"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + other}} {
		if r := w.knitWith(env, "pipeline", "plan", "web", "--release", r0); r.code == 0 || !strings.Contains(r.stderr, "forbidden") {
			t.Errorf("knit pipeline plan as %s: exit %d, want forbidden\n%s%s", who, r.code, r.stdout, r.stderr)
		}
	}
	if r := w.knitWith(asOp, "pipeline", "plan", "web", "--release", "r-nope"); r.code == 0 || !strings.Contains(r.stderr, `no release "r-nope"`) {
		t.Errorf("knit pipeline plan of an unknown release: exit %d\n%s", r.code, r.stderr)
	}
	if r := w.knit("pipeline", "plan", "web", "--release", r0); r.code == 0 || !strings.Contains(r.stderr, "--server") {
		t.Errorf("knit pipeline plan without a server: exit %d, want a pointer to --server\n%s", r.code, r.stderr)
	}
}
