package e2e

import (
	"regexp"
	"strings"
	"testing"
)

// otherTeamStage is stage's environment file of team team.
func otherTeamStage(stage, team string) string {
	return strings.Replace(stageEnv(stage, "1", "http://127.0.0.1:1/"+stage), "teamName: shop", "teamName: "+team, 1)
}

// TestPipelineStageOfAnotherTeamIsRefused: a pipeline of team shop whose
// prod stage file names team ops is invalid at that file's teamName line,
// both for knit validate and for the server's promotion controller, which
// records no pipeline and applies nothing; once the file names shop, the
// server reads the pipeline.
func TestPipelineStageOfAnotherTeamIsRefused(t *testing.T) {
	t.Parallel()
	requireTofu(t)
	w := newWorld(t)
	files := map[string]string{
		"modules/app-1/main.tf": appVersion(1),
		"templates/web.yaml":    pipelineTemplate,
		"stages/dev.yaml":       stageEnv("dev", "1", "http://127.0.0.1:1/dev"),
		"stages/staging.yaml":   stageEnv("staging", "1", "http://127.0.0.1:1/staging"),
		"stages/prod.yaml":      otherTeamStage("prod", "ops"),
		"pipelines/web.yaml":    webPipeline,
	}
	w.write(files)
	git(t, w.dir, "init", "-q") // a pipeline's files live in a repository: templates resolve inside it
	r := w.knit("validate", "-f", "pipelines/web.yaml")
	want := "stages/prod.yaml:4:3: spec.teamName: stage prod of pipeline web is an environment of team \"ops\", not of the pipeline's team \"shop\""
	if r.code != 1 || !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "pipelines/web.yaml: invalid: 1 error") {
		t.Fatalf("knit validate of a pipeline with another team's stage: exit %d, want 1 and\n%s\n%s%s", r.code, want, r.stdout, r.stderr)
	}
	w.write(map[string]string{"stages/prod.yaml": stageEnv("prod", "1", "http://127.0.0.1:1/prod")})
	if r := w.knit("validate", "-f", "pipelines/web.yaml"); r.code != 0 || !strings.Contains(r.stdout, "valid: pipeline web of team shop, 3 stages") {
		t.Fatalf("knit validate of the fixed pipeline: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	repo := newGitRepo(t, files)
	s := w.startServer(gitServerArgs(repo, "--pipeline", "pipelines/web.yaml", "--pipeline-tick", "100ms")...)
	admin := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	s.logged("the server refuses the pipeline", regexp.MustCompile(`stages/prod\.yaml:4:3: spec\.teamName: stage prod of pipeline web is an environment of team`))
	if p := w.pipelineStatus(admin); len(p.Stages) != 0 {
		t.Fatalf("the server recorded the pipeline with another team's stage: %+v", p)
	}
	for _, env := range []string{"shop/dev", "ops/prod"} {
		if r := w.knit("status", env); r.code == 0 {
			t.Fatalf("%s, a stage of the refused pipeline, was applied:\n%s", env, r.stdout)
		}
	}
	repo.commit("prod is shop's", map[string]string{"stages/prod.yaml": stageEnv("prod", "1", "http://127.0.0.1:1/prod")})
	s.eventually("the server reads the fixed pipeline", func() bool { return len(w.pipelineStatus(admin).Stages) == 3 })
}
