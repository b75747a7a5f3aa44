package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// appVersion is version N of a module: a release bumps it.
func appVersion(n int) string {
	return fmt.Sprintf(`variable "stage" { type = string }
resource "terraform_data" "app" { input = "${var.stage}-v%d" }
output "version" { value = "%d" }
`, n, n)
}

// pipelineTemplate builds every stage: the module version is the
// promote: true parameter; the stage and its health endpoint stay each
// environment's own.
const pipelineTemplate = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: web}
spec:
  parameters:
    - {name: version, type: string, promote: true}
    - {name: stage, type: string}
    - {name: health, type: string}
  components:
    - name: app
      type: terraform
      module: {source: "../modules/app-${param.version}"}
      variables:
        - {name: stage, value: "${param.stage}"}
      outputs: [{name: version}]
      health:
        - name: http-ok
          http: {url: "${param.health}?v=${param.version}", expectStatus: 200}
          count: 1
          interval: 10ms
`

func stageEnv(stage, version, health string) string {
	return stageEnvWith(stage, version, health, "")
}

// stageEnvWith is stageEnv with extra spec lines (a rollout policy).
func stageEnvWith(stage, version, health, extra string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: ` + stage + `
  autoApprove: true
` + extra + `  template: {path: ../templates/web.yaml}
  parameters: {version: "` + version + `", stage: ` + stage + `, health: "` + health + `"}
`
}

const webPipeline = `apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: shop
  stages:
    - {name: dev, file: ../stages/dev.yaml, soak: 3s}
    - {name: staging, file: ../stages/staging.yaml, soak: 1s}
    - name: prod
      file: ../stages/prod.yaml
      approval: {required: 1, requireOtherApprover: true}
`

type pipelineStatus struct {
	Stages []struct {
		Name      string
		EnvStatus string
		Current   *struct{ Release, RunID string }
		Last      *struct{ Release, State, Reason, RunID, Message string }
		Waiting   *struct{ Release, Reason, Message string }
	}
}

// pipelineStatus is knit pipeline status web -o json through the
// server (empty until the server read the pipeline).
func (w *world) pipelineStatus(env []string) pipelineStatus {
	w.t.Helper()
	var p pipelineStatus
	r := w.knitWith(env, "pipeline", "status", "web", "-o", "json")
	if r.code != 0 && strings.Contains(r.stderr, "pipeline web: not found") {
		return p
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &p) != nil {
		w.t.Fatalf("knit pipeline status: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return p
}

func (p pipelineStatus) stage(name string) (cur, lastState, waiting, reason string) {
	for _, s := range p.Stages {
		if s.Name != name {
			continue
		}
		if s.Current != nil {
			cur = s.Current.Release
		}
		if s.Last != nil {
			lastState = s.Last.Release + " " + s.Last.State
		}
		if s.Waiting != nil {
			waiting, reason = s.Waiting.Release, s.Waiting.Reason
		}
	}
	return
}

// TestPipelinePromotesThroughStages: dev → staging → prod over real
// tofu, a real git repository and knit serve. R0 (module v1) passes dev
// and staging (it waits for prod's approval, never given). R1 (v2) passes
// dev, soaks, then fails its health check in staging, whose rollout
// policy is onFailure: rollback: it is marked VerificationFailed there,
// staging is rolled back to R0 by a rollback run the stage's history
// names, and prod runs no tool process. R2 (v3) passes dev and staging
// and waits for prod's approval: its commit is unsigned, so the claimed
// author's token counts as one of two distinct approvers, another
// operator's makes two and prod runs v3; knit releases --stage prod says
// why prod is on it.
func TestPipelinePromotesThroughStages(t *testing.T) {
	t.Parallel()
	requireTofu(t)
	w := newWorld(t)
	w.write(map[string]string{
		"bin/tofu": fmt.Sprintf("#!/bin/sh\necho \"$1 $PWD\" >> %s\nexec %s \"$@\"\n", w.path("calls.log"), tofuBin),
	})
	if err := os.Chmod(w.path("bin/tofu"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "KNIT_TF_BINARY="+w.path("bin/tofu"))

	// Staging is broken by v2 only (the check URL names the version).
	probe := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/staging" && r.URL.Query().Get("v") == "2" {
			rw.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(rw, "ok")
	}))
	defer probe.Close()
	repo := newGitRepo(t, map[string]string{
		"modules/app-1/main.tf": appVersion(1),
		"modules/app-2/main.tf": appVersion(2),
		"modules/app-3/main.tf": appVersion(3),
		"templates/web.yaml":    pipelineTemplate,
		"stages/dev.yaml":       stageEnv("dev", "1", probe.URL+"/dev"),
		"stages/staging.yaml":   stageEnvWith("staging", "1", probe.URL+"/staging", "  rollout: {onFailure: rollback}\n"),
		"stages/prod.yaml":      stageEnv("prod", "1", probe.URL+"/prod"),
		"pipelines/web.yaml":    webPipeline,
	})
	s := w.startServer(gitServerArgs(repo, "--pipeline", "pipelines/web.yaml", "--pipeline-tick", "100ms")...)
	admin := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}

	// R0 passes dev and staging: staging has a release to go back to.
	var p pipelineStatus
	s.eventually("R0 awaits prod's approval", func() bool {
		p = w.pipelineStatus(admin)
		_, _, _, reason := p.stage("prod")
		return reason == "AwaitingApproval"
	})
	r0, _, _, _ := p.stage("staging")
	if o := w.ok("output", "shop/staging", "app", "version"); strings.TrimSpace(o.stdout) != "1" {
		t.Fatalf("staging's app version output with R0: %q", o.stdout)
	}

	// R1 passes dev, soaks, fails verification in staging; staging rolls back.
	repo.commit("app v2", map[string]string{"stages/dev.yaml": stageEnv("dev", "2", probe.URL+"/dev")})
	var rollbackRun string
	s.eventually("R1 fails verification in staging, which rolls back", func() bool {
		p = w.pipelineStatus(admin)
		for _, st := range p.Stages {
			if st.Name == "staging" && st.Last != nil && strings.Contains(st.Last.Message, "rolls back (run ") {
				rollbackRun = st.Last.RunID
			}
		}
		return rollbackRun != ""
	})
	r1, _, _, _ := p.stage("dev")
	cur, last, waiting, reason := p.stage("staging")
	if r1 == r0 || last != r1+" failed" || reason != "VerificationFailed" || waiting != r1 || cur != r0 {
		t.Fatalf("staging: current %q, last %q, waiting %q %q; want current %s, last and waiting %s failed, VerificationFailed", cur, last, waiting, reason, r0, r1)
	}
	var run struct{ Kind, Status, Source string }
	s.eventually("the rollback run ends", func() bool {
		s.do("GET", "/api/v1/runs/"+rollbackRun, nil, &run)
		return run.Status == "succeeded" || run.Status == "failed"
	})
	if run.Kind != "rollback" || run.Status != "succeeded" || run.Source != "rollout" {
		t.Fatalf("staging's rollback run %s: %+v", rollbackRun, run)
	}
	if o := w.ok("output", "shop/staging", "app", "version"); strings.TrimSpace(o.stdout) != "1" {
		t.Fatalf("staging's app version output after the rollback: %q, want R0's 1", o.stdout)
	}
	// The successful rollback run is not R1 verified in staging.
	p = w.pipelineStatus(admin)
	if cur, last, _, reason := p.stage("staging"); cur != r0 || last != r1+" failed" || reason != "VerificationFailed" {
		t.Fatalf("staging after its rollback: current %q, last %q, %s", cur, last, reason)
	}
	if r := w.knitWith(admin, "pipeline", "status", "web"); !strings.Contains(r.stdout, "VerificationFailed") {
		t.Fatalf("knit pipeline status:\n%s", r.stdout)
	}
	// R1 entered staging after dev's soak of 3s, counted from its
	// verification; staging's history names the rollback run.
	var rels []struct {
		ID      string
		History []struct {
			Stage, State, Reason, RunID string
			At                          time.Time
		}
	}
	if err := json.Unmarshal([]byte(w.ok(append([]string{}, "releases", "web", "-o", "json")...).stdout), &rels); err != nil {
		t.Fatal(err)
	}
	// (read through the local store: the same records)
	var verified, entered time.Time
	var rolledBack bool
	for _, rel := range rels {
		if rel.ID != r1 {
			continue
		}
		for _, e := range rel.History {
			if e.Stage == "dev" && e.State == "succeeded" {
				verified = e.At
			}
			if e.Stage == "staging" && e.State == "applying" {
				entered = e.At
			}
			rolledBack = rolledBack || e.Stage == "staging" && e.State == "failed" && e.Reason == "VerificationFailed" && e.RunID == rollbackRun
		}
	}
	if verified.IsZero() || entered.Before(verified.Add(3*time.Second)) {
		t.Fatalf("R1 entered staging at %s, dev verified it at %s: before its 3s soak", entered, verified)
	}
	if !rolledBack {
		t.Fatalf("R1's history does not name staging's rollback run %s:\n%+v", rollbackRun, rels)
	}
	calls, _ := os.ReadFile(w.path("calls.log"))
	if strings.Contains(string(calls), "/work/shop/prod/") {
		t.Fatalf("prod ran tool processes:\n%s", calls)
	}
	if !strings.Contains(string(calls), "/work/shop/staging/") {
		t.Fatalf("staging ran no tool process:\n%s", calls)
	}

	// R2 bumps the module again: it passes dev and staging and waits for prod's approval.
	repo.commit("app v3", map[string]string{"stages/dev.yaml": stageEnv("dev", "3", probe.URL+"/dev")})
	s.eventually("R2 awaits prod's approval", func() bool {
		p = w.pipelineStatus(admin)
		_, _, waiting, reason := p.stage("prod")
		return reason == "AwaitingApproval" && waiting != r0
	})
	_, _, r2, _ := p.stage("prod")
	if cur, _, _, _ := p.stage("staging"); r2 == r1 || cur != r2 {
		t.Fatalf("prod waits for %s, staging holds %s; R1 was %s", r2, cur, r1)
	}
	if strings.Contains(string(mustRead(t, w.path("calls.log"))), "/work/shop/prod/") {
		t.Fatal("prod ran tool processes before its approval")
	}
	author := strings.TrimSpace(w.ok("token", "create", "t", "--role", "operator", "--team", "shop").stdout)
	bob := strings.TrimSpace(w.ok("token", "create", "bob", "--role", "operator", "--team", "shop").stdout)
	// The commit is unsigned: its author t is a claimed name, so t's
	// token approving is one approval of the two distinct tokens prod
	// then takes (TestAPipelineReleaseIsItsSignersOnly has the signed case).
	r := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + author}, "promote", "web", "--release", r2, "--to", "prod")
	if r.code != 3 || !strings.Contains(r.stdout, "1 of 2 approvals by distinct tokens") {
		t.Fatalf("the claimed author's own approval: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + bob}, "promote", "web", "--release", r2, "--to", "prod")
	if r.code != 0 {
		t.Fatalf("bob's approval: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.eventually("prod runs R2", func() bool {
		cur, _, _, _ := w.pipelineStatus(admin).stage("prod")
		return cur == r2
	})
	if o := w.ok("output", "shop/prod", "app", "version"); strings.TrimSpace(o.stdout) != "3" {
		t.Fatalf("prod's app version output: %q", o.stdout)
	}

	// Why is prod on R2: one command.
	why := w.knitWith(admin, "releases", "web", "--stage", "prod")
	for _, want := range []string{r2, "commit ", "by t (unverified", "app v3", "prod     succeeded", "prod     approved by t", "prod     approved by bob"} {
		if !strings.Contains(why.stdout, want) {
			t.Fatalf("knit releases web --stage prod lacks %q:\n%s", want, why.stdout)
		}
	}
	if strings.Contains(why.stdout, r1) || strings.Contains(why.stdout, r0) {
		t.Fatalf("R0 and R1 never reached prod, yet one is listed:\n%s", why.stdout)
	}

	// An operator rolls dev back to R1, the release it verified before
	// R2: the server applies it again (module v2), through the queue.
	if r := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + bob}, "pipeline", "rollback", "web", "dev", "--reason", "v3 misbehaves"); r.code != 0 {
		t.Fatalf("knit pipeline rollback: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.eventually("dev runs R1 again", func() bool {
		cur, _, waiting, _ := w.pipelineStatus(admin).stage("dev")
		return cur == r1 && waiting == ""
	})
	if o := w.ok("output", "shop/dev", "app", "version"); strings.TrimSpace(o.stdout) != "2" {
		t.Fatalf("dev's app version output after the rollback: %q", o.stdout)
	}
	if cur, _, _, _ := w.pipelineStatus(admin).stage("prod"); cur != r2 {
		t.Fatalf("prod moved to %s after dev's rollback", cur)
	}

	// A person rolls staging back outside the pipeline (knit rollback,
	// run kind rollback): to its last good revision, R0's (R1 failed
	// there). The pipeline follows: staging holds R0 again, by that run.
	r = w.knitWith(admin, "rollback", "shop/staging", "--reason", "v3 misbehaves in staging")
	if r.code != 0 {
		t.Fatalf("knit rollback shop/staging: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var by string
	s.eventually("staging holds R0 again", func() bool {
		for _, st := range w.pipelineStatus(admin).Stages {
			if st.Name == "staging" && st.Current != nil && st.Current.Release == r0 {
				by = st.Current.RunID
				return true
			}
		}
		return false
	})
	s.do("GET", "/api/v1/runs/"+by, nil, &run)
	if run.Kind != "rollback" || run.Status != "succeeded" {
		t.Fatalf("staging holds R0 by run %s: %+v, want the rollback", by, run)
	}
	if o := w.ok("output", "shop/staging", "app", "version"); strings.TrimSpace(o.stdout) != "1" {
		t.Fatalf("staging's app version output after knit rollback: %q", o.stdout)
	}
}

// TestPromotionWaitsForItsWindow: prod's only window opens at the start
// of a minute some seconds away; the release verified in dev waits,
// WindowClosed, and enters prod once the window opens, not before.
func TestPromotionWaitsForItsWindow(t *testing.T) {
	t.Parallel()
	requireTofu(t)
	w := newWorld(t)
	probe := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) { fmt.Fprint(rw, "ok") }))
	defer probe.Close()
	// The window opens at the next minute, or the one after when the next
	// is too close for dev to apply and verify first.
	opens := time.Now().UTC().Truncate(time.Minute).Add(time.Minute)
	if time.Until(opens) < 40*time.Second {
		opens = opens.Add(time.Minute)
	}
	pipeline := fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: shop
  stages:
    - {name: dev, file: ../stages/dev.yaml}
    - name: prod
      file: ../stages/prod.yaml
      windows:
        allow: [{schedule: "%d %d * * *", duration: 10m}]
`, opens.Minute(), opens.Hour())
	repo := newGitRepo(t, map[string]string{
		"modules/app-1/main.tf": appVersion(1),
		"templates/web.yaml":    pipelineTemplate,
		"stages/dev.yaml":       stageEnv("dev", "1", probe.URL+"/dev"),
		"stages/prod.yaml":      stageEnv("prod", "1", probe.URL+"/prod"),
		"pipelines/web.yaml":    pipeline,
	})
	s := w.startServer(gitServerArgs(repo, "--pipeline", "pipelines/web.yaml", "--pipeline-tick", "100ms")...)
	admin := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	s.eventually("the release waits for prod's window", func() bool {
		_, _, _, reason := w.pipelineStatus(admin).stage("prod")
		return reason == "WindowClosed"
	})
	if time.Now().After(opens) {
		t.Fatalf("prod's window (%s) opened before the release reached it: the machine is too busy for this test", opens)
	}
	s.eventually("the release enters prod once its window opens", func() bool {
		cur, _, _, _ := w.pipelineStatus(admin).stage("prod")
		return cur != ""
	})
	var rels []struct {
		History []struct {
			Stage, State string
			At           time.Time
		}
	}
	if err := json.Unmarshal([]byte(w.ok("releases", "web", "-o", "json").stdout), &rels); err != nil {
		t.Fatal(err)
	}
	for _, e := range rels[0].History {
		if e.Stage == "prod" && e.State == "applying" && e.At.Before(opens) {
			t.Fatalf("the release entered prod at %s, before its window opened at %s", e.At, opens)
		}
	}
}
