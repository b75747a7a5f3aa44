package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestAReleaseThatFailedInAStageIsPromotedAgain (issue 37): prod's health
// endpoint is down once, so R0 fails verification there; once it is up,
// an operator's knit promote of the same release starts it in prod again
// and it is verified, with no new commit and no dummy change. Torn down
// outside the pipeline, prod's status in it says so.
func TestAReleaseThatFailedInAStageIsPromotedAgain(t *testing.T) {
	t.Parallel()
	requireTofu(t)
	w := newWorld(t)
	var down atomic.Bool
	down.Store(true)
	probe := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/prod" && down.Load() {
			rw.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(rw, "ok")
	}))
	defer probe.Close()
	_, s := webTrain(t, w, probe.URL, []string{"dev", "prod"}, "    - {name: dev, file: ../stages/dev.yaml}\n    - {name: prod, file: ../stages/prod.yaml}\n", nil)
	admin := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	var r0 string
	s.eventually("R0 fails verification in prod", func() bool {
		_, last, waiting, reason := w.pipelineStatus(admin).stage("prod")
		r0 = waiting
		return strings.HasSuffix(last, " failed") && reason == "VerificationFailed"
	})

	down.Store(false)
	op := strings.TrimSpace(w.ok("token", "create", "carol", "--role", "operator", "--team", "shop").stdout)
	r := w.knitWith([]string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + op}, "promote", "web", "--release", r0, "--to", "prod", "--reason", "the endpoint is back")
	if r.code != 0 {
		t.Fatalf("knit promote of the release that failed in prod: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.eventually("R0 verified in prod", func() bool {
		cur, _, _, _ := w.pipelineStatus(admin).stage("prod")
		return cur == r0
	})
	why := w.knitWith(admin, "releases", "web", "--stage", "prod").stdout
	if !strings.Contains(why, "retry by carol (the endpoint is back)") {
		t.Errorf("knit releases web --stage prod does not tell of carol's retry:\n%s", why)
	}

	// Torn down outside the pipeline: its status says so (it said succeeded).
	w.ok("teardown", "shop/prod", "--auto-approve")
	for _, st := range w.pipelineStatus(admin).Stages {
		if st.Name == "prod" && st.EnvStatus != "torn-down" {
			t.Errorf("prod's environment status in the pipeline after its teardown: %q, want torn-down", st.EnvStatus)
		}
	}
	if out := w.knitWith(admin, "pipeline", "status", "web").stdout; !strings.Contains(out, "torn-down") {
		t.Errorf("knit pipeline status does not say prod is torn down:\n%s", out)
	}
}

// webTrain is a repository of pipeline web of team shop: stageLines are
// the pipeline file's stage list (YAML lines under stages:), one stage
// file per stage named in stages (release 1 of pipelineTemplate, its
// health checked at probe/STAGE), modules v1 and v2, and files beside.
// The server started on it follows the pipeline every 100ms.
func webTrain(t *testing.T, w *world, probe string, stages []string, stageLines string, files map[string]string, args ...string) (*gitRepo, *server) {
	t.Helper()
	all := map[string]string{
		"modules/app-1/main.tf": appVersion(1),
		"modules/app-2/main.tf": appVersion(2),
		"templates/web.yaml":    pipelineTemplate,
		"pipelines/web.yaml":    "apiVersion: knit.dev/v1\nkind: Pipeline\nmetadata: {name: web}\nspec:\n  teamName: shop\n  stages:\n" + stageLines,
	}
	for _, st := range stages {
		all["stages/"+st+".yaml"] = stageEnv(st, "1", probe+"/"+st)
	}
	for k, v := range files {
		all[k] = v
	}
	repo := newGitRepo(t, all)
	return repo, w.startServer(append(gitServerArgs(repo, "--pipeline", "pipelines/web.yaml", "--pipeline-tick", "100ms"), args...)...)
}
