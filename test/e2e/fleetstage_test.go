package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The acceptance of issue 41 item 3's pipeline half: a stage that names a
// selector instead of a file rolls each release across the live
// environments it matches, in waves.

// fleetTemplate is waveTemplate whose release is the promote: true
// parameter a pipeline carries from stage to stage.
var fleetTemplate = strings.Replace(waveTemplate, "{name: release, type: string, required: true}",
	"{name: release, type: string, required: true, promote: true}", 1)

// fleetEnv is environment shop/name labelled ring at release.
func fleetEnv(name, ring, release string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {labels: {ring: ` + ring + `}}
spec:
  teamName: shop
  envName: ` + name + `
  autoApprove: true
  rollout: {onFailure: rollback}
  template: {path: ../templates/app.yaml}
  parameters: {name: ` + name + `, release: "` + release + `"}
`
}

const fleetPipeline = `apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: shop
  stages:
    - {name: dev, file: ../stages/dev.yaml}
    - name: fleet
      selector: {matchLabels: {ring: main}}
      waves: {maxParallel: 2, maxFailed: 1, soakEach: 1s}
`

// Six environments labelled ring: main (and f07, ring: other) are live at
// release 1 before the server starts. Release 2 enters dev, verifies, and
// rolls across the fleet stage two at a time: f01 and f02 verify; f03
// and f04 fail their health checks and roll back (their onFailure), and
// two failures are more than maxFailed 1 allows: the rollout halts and
// the stage says so. The counting wrapper saw exactly f01, f02, and f03
// and f04 twice (release 2, then the rollback); f05, f06 and f07 keep
// release 1 and their one revision. Another team's operator cannot act
// on the rollout; the pipeline's operator aborts it, audited, and the
// stage fails.
func TestAFleetStageRollsAReleaseInWavesAndHaltsAfterMaxFailed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.waveTofu()
	url, broken := endpoint(t)
	files := map[string]string{
		"modules/app/main.tf": waveModule,
		"templates/app.yaml":  strings.ReplaceAll(fleetTemplate, "URL", url),
		"stages/dev.yaml":     fleetEnv("dev", "dev", "1"),
		"pipelines/web.yaml":  fleetPipeline,
		"envs/README.md":      "nothing here: the pipeline applies",
	}
	for i := 1; i <= 7; i++ {
		ring := "main"
		if i == 7 {
			ring = "other"
		}
		files[fmt.Sprintf("fleet/f%02d.yaml", i)] = fleetEnv(fmt.Sprintf("f%02d", i), ring, "1")
	}
	// The fleet goes live before the server starts, applied from a local
	// copy (a local file's template stays inside its folder).
	local := map[string]string{"local/modules/app/main.tf": files["modules/app/main.tf"], "local/templates/app.yaml": files["templates/app.yaml"]}
	for i := 1; i <= 7; i++ {
		name := fmt.Sprintf("f%02d", i)
		local["local/"+name+".yaml"] = strings.Replace(files["fleet/"+name+".yaml"], "../templates/", "templates/", 1)
	}
	w.write(local)
	for i := 1; i <= 7; i++ {
		w.ok("apply", "-f", fmt.Sprintf("local/f%02d.yaml", i), "--auto-approve")
	}
	repo := newGitRepo(t, files)
	s := w.startServer(gitServerArgs(repo, "--pipeline", "pipelines/web.yaml", "--pipeline-tick", "100ms")...)
	admin := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	var p pipelineStatus
	s.eventually("release 1 is through the fleet stage", func() bool {
		p = w.pipelineStatus(admin)
		cur, _, _, _ := p.stage("fleet")
		return cur != ""
	})
	r1, _, _, _ := p.stage("fleet")
	revs := map[string]int{}
	for i := 1; i <= 7; i++ {
		env := fmt.Sprintf("shop/f%02d", i)
		revs[env] = len(s.revisions(env))
	}
	w.applies()

	broken.set("2-f03", "2-f04")
	repo.commit("release 2", map[string]string{"stages/dev.yaml": fleetEnv("dev", "dev", "2")})
	var f fleetJSON
	s.eventually("the fleet rollout of release 2 halts", func() bool {
		f = w.fleetOf(s, "web.fleet")
		return f.Rollout != nil && f.Rollout.Status == "halted"
	})
	s.eventually("f03 and f04 rolled back", func() bool { return w.appRelease("f03") == "1" && w.appRelease("f04") == "1" })
	if !strings.Contains(f.Rollout.Why, "halted: 2 environments failed") || len(f.Rollout.Waves) != 3 {
		t.Errorf("rollout: why %q, %d waves (6 environments, 2 at a time)", f.Rollout.Why, len(f.Rollout.Waves))
	}
	for env, want := range map[string]string{"f01": "verified", "f02": "verified", "f03": "failed", "f04": "failed", "f05": "waiting", "f06": "waiting", "f07": ""} {
		if got := f.state(env); got != want {
			t.Errorf("%s is %q in the rollout, want %q", env, got, want)
		}
	}
	applied := w.applies()
	slices.Sort(applied)
	if want := []string{"dev", "f01", "f02", "f03", "f03", "f04", "f04"}; !slices.Equal(applied, want) {
		t.Errorf("tofu applied %v, want exactly %v", applied, want)
	}
	for env, rel := range map[string]string{"f01": "2", "f02": "2", "f05": "1", "f06": "1", "f07": "1", "dev": "2"} {
		if got := w.appRelease(env); got != rel {
			t.Errorf("%s runs release %s, want %s", env, got, rel)
		}
	}
	for _, env := range []string{"shop/f05", "shop/f06", "shop/f07"} {
		if got := len(s.revisions(env)); got != revs[env] {
			t.Errorf("%s, which no wave reached, has %d revisions, had %d", env, got, revs[env])
		}
	}
	p = w.pipelineStatus(admin)
	cur, _, waiting, reason := p.stage("fleet")
	if cur != r1 || waiting == r1 || reason != "Paused" {
		t.Errorf("fleet stage: current %s (want %s), waiting %s %s (want release 2 Paused)", cur, r1, waiting, reason)
	}

	other := strings.TrimSpace(w.ok("token", "create", "pay-ci", "--role", "operator", "--team", "pay").stdout)
	if res := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + other}, "fleet", "abort", "shop/web.fleet"); res.code == 0 || !strings.Contains(res.stderr, "another team") {
		t.Errorf("another team's abort: code %d, %s", res.code, res.stderr)
	}
	out := w.knitWith(admin, "fleet", "abort", "web.fleet", "--reason", "bad release")
	if out.code != 0 || !strings.Contains(out.stdout, "aborted") {
		t.Fatalf("abort: %d %s %s", out.code, out.stdout, out.stderr)
	}
	s.eventually("the stage fails", func() bool {
		p = w.pipelineStatus(admin)
		_, last, _, _ := p.stage("fleet")
		return strings.HasSuffix(last, " failed")
	})
	var audit struct {
		Items []struct{ Action, Reason, Detail string }
	}
	s.do("GET", "/api/v1/audit?actor=root", nil, &audit)
	found := false
	for _, e := range audit.Items {
		found = found || e.Action == "fleet-abort" && e.Reason == "bad release" && strings.Contains(e.Detail, "2 environments keep their release")
	}
	if !found {
		t.Errorf("no fleet-abort in the audit trail: %+v", audit.Items)
	}
	if got := w.applies(); len(got) != 0 {
		t.Errorf("after the abort tofu applied %v", got)
	}
}
