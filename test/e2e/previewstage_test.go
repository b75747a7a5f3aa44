package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
)

// Issue 37 item 7: a branch changing the template every stage is built
// from previews each stage of the pipeline (not only GitOps's
// environments), planned with the branch's release; a branch changing
// only stages/prod.yaml previews prod alone; neither applies anything.
func TestABranchChangingATemplateOrAStageFilePreviewsThePipelinesStages(t *testing.T) {
	t.Parallel()
	requireTofu(t)
	w := newWorld(t)
	w.loggingTofu()
	w.sandboxReachable() // the previews' tofu runs as nobody
	probe := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) { fmt.Fprint(rw, "ok") }))
	defer probe.Close()
	repo := newGitRepo(t, map[string]string{
		"modules/app-1/main.tf": appVersion(1),
		"templates/web.yaml":    pipelineTemplate,
		"stages/dev.yaml":       stageEnv("dev", "1", probe.URL+"/dev"),
		"stages/staging.yaml":   stageEnv("staging", "1", probe.URL+"/staging"),
		"stages/prod.yaml":      stageEnv("prod", "1", probe.URL+"/prod"),
		"pipelines/web.yaml":    webPipeline,
	})
	hook := newHookReceiver(t)
	s := w.startServer(gitServerArgs(repo, "--pipeline", "pipelines/web.yaml", "--pipeline-tick", "100ms", "--preview-branches", "feature/*",
		"--config", w.notifyConfig("notify.yaml", hook.url))...)
	admin := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	s.eventually("R0 awaits prod's approval", func() bool {
		_, _, _, reason := w.pipelineStatus(admin).stage("prod")
		return reason == "AwaitingApproval"
	})
	w.toolRuns()

	previewed := func(branch, head string) map[string]apiPreview {
		t.Helper()
		out := map[string]apiPreview{}
		s.eventually("preview.ready of "+branch, func() bool {
			for _, ev := range hook.of("preview.ready") {
				if ev.Branch == branch && ev.Commit == head {
					return true
				}
			}
			return false
		})
		ps, _ := s.previews(branch, "")
		for _, p := range ps {
			if p.Commit == head {
				out[p.Env] = p
			}
		}
		return out
	}
	tpl := strings.Replace(pipelineTemplate, `value: "${param.stage}"`, `value: "${param.stage}-b"`, 1)
	head := repo.pushBranch("feature/tpl", map[string]string{"templates/web.yaml": tpl})
	ps := previewed("feature/tpl", head)
	if got := keysOf(ps); got != "shop/dev,shop/prod,shop/staging" {
		t.Fatalf("a template change previews %s, want every stage", got)
	}
	for id, want := range map[string]string{"shop/dev": "~1 +0 -0", "shop/staging": "~1 +0 -0", "shop/prod": "~0 +1 -0"} {
		p := ps[id]
		if p.Status != "planned" || len(p.Components) != 1 || fmt.Sprintf("~%d +%d -%d", p.Components[0].Change, p.Components[0].Add, p.Components[0].Destroy) != want {
			t.Errorf("%s previews %+v, want planned %s", id, p, want)
		}
	}

	head = repo.pushBranch("feature/prod", map[string]string{"stages/prod.yaml": stageEnvWith("prod", "1", probe.URL+"/prod", "  rollout: {onFailure: rollback}\n")})
	if got := keysOf(previewed("feature/prod", head)); got != "shop/prod" {
		t.Errorf("a change of stages/prod.yaml previews %s, want shop/prod alone", got)
	}
	for _, run := range w.toolRuns() {
		if f := strings.Fields(run); f[1] == "apply" || f[1] == "destroy" {
			t.Errorf("a preview ran a tool that changes things: %s", run)
		}
	}
}

func keysOf(m map[string]apiPreview) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}
