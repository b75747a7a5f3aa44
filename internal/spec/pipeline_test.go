package spec

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const goodPipeline = `apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: shop
  stages:
    - {name: dev, file: stages/dev.yaml, soak: 3s}
    - name: staging
      file: stages/staging.yaml
      soak: 1h
    - name: prod
      file: stages/prod.yaml
      windows:
        allow: [{schedule: "0 9 * * 1-5", duration: 8h}]
        deny: [{schedule: "0 12 * * *", duration: 1h}]
      approval: {required: 1, requireOtherApprover: true}
`

func TestPipelineParses(t *testing.T) {
	p, ds := ParsePipeline("web.yaml", []byte(goodPipeline))
	if len(ds) != 0 {
		t.Fatal(ds)
	}
	var names []string
	for _, s := range p.Spec.Stages {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"dev", "staging", "prod"}) || p.Spec.Stages[0].SoakDuration() != 3*time.Second ||
		!p.Spec.Stages[2].Approval.RequireOtherApprover {
		t.Fatalf("pipeline: %+v", p)
	}
}

// TestPipelineMistakesAreReportedWhereWritten: every mistake at once, at
// its line and column.
func TestPipelineMistakesAreReportedWhereWritten(t *testing.T) {
	src := `apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: shop
  stages:
    - {name: dev, file: dev.yaml, windows: {}}
    - {name: dev, file: /etc/prod.yaml, soak: soon}
    - name: prod
      windows:
        allow: [{schedule: "61 * * * *", duration: 1h}]
        deny: [{schedule: "@every 5m", duration: "-1h"}]
      approval: {required: 11}
      sok: 1h
`
	_, ds := ParsePipeline("web.yaml", []byte(src))
	got := render(ds)
	want := []string{
		"7:7 spec.stages[0]: a release enters the first stage from a commit: it has no windows or approvals",
		`8:8 spec.stages[1].name: stage "dev" is listed twice`,
		`8:19 spec.stages[1].file: "/etc/prod.yaml" is an absolute path`,
		`8:41 spec.stages[1].soak: "soon" is not a duration`,
		"9:7 spec.stages[2].file: missing required field",
		`11:18 spec.stages[2].windows.allow[0].schedule: schedule "61 * * * *": minute field: 61 is out of range 0-59`,
		`12:17 spec.stages[2].windows.deny[0].schedule: a window opens at cron times; @every has none`,
		`12:40 spec.stages[2].windows.deny[0].duration: "-1h" is not a positive duration`,
		"13:18 spec.stages[2].approval.required: 11 is out of range",
		`14:7 spec.stages[2].sok: unknown field "sok"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("diagnostics:\n  got  %s\n  want %s", strings.Join(got, "\n       "), strings.Join(want, "\n       "))
	}
	for _, d := range ds {
		if d.Pos.File != "web.yaml" {
			t.Errorf("%s: file %q", d.Message, d.Pos.File)
		}
	}
}

// TestWindowsDenyWins: a window is open from each cron start for its
// duration; deny wins over allow.
func TestWindowsDenyWins(t *testing.T) {
	ws := &Windows{Allow: []Window{{Schedule: "0 9 * * *", Duration: "8h"}}, Deny: []Window{{Schedule: "0 12 * * *", Duration: "1h"}}}
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		at   string
		open bool
	}{{"08:59", false}, {"09:00", true}, {"11:59", true}, {"12:00", false}, {"12:59", false}, {"13:00", true}, {"16:59", true}, {"17:00", false}} {
		h, _ := time.Parse("15:04", c.at)
		at := day.Add(time.Duration(h.Hour())*time.Hour + time.Duration(h.Minute())*time.Minute)
		if got := ws.Open(at); got != c.open {
			t.Errorf("open at %s = %v, want %v", c.at, got, c.open)
		}
	}
	if next := ws.NextChange(day.Add(10 * time.Hour)); !next.Equal(day.Add(12 * time.Hour)) {
		t.Errorf("next change after 10:00 = %s, want 12:00", next)
	}
	var none *Windows
	if !none.Open(day) {
		t.Error("a stage without windows is closed")
	}
}

// TestReleaseIsTheTemplateAndItsPromoteParameters: the release of an
// environment names its template and its promote: true values only; a
// release's values replace the environment's own, other parameters stay;
// a release naming a parameter not marked promote is refused.
func TestReleaseIsTheTemplateAndItsPromoteParameters(t *testing.T) {
	tmpl := strings.Replace(webStack, "- {name: size, type: number, default: 1}", "- {name: size, type: number, default: 1, promote: true}", 1)
	dir := repo(t, map[string]string{
		"templates/web-stack.yaml": tmpl,
		"modules/app/main.tf":      modApp,
		"envs/dev.yaml":            devEnv("{tier: dev, size: 2}", ""),
		"envs/prod.yaml":           strings.Replace(devEnv("{tier: prod, size: 9}", ""), "envName: dev", "envName: prod", 1),
	})
	dev, ds := loadIn(t, dir, "envs/dev.yaml")
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	r, err := ReleaseOf(dev)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Template, "../templates/web-stack.yaml@sha256:") || len(r.Params) != 1 || r.Params["size"] != int64(2) {
		t.Fatalf("release: %+v", r)
	}
	prod, ds := LoadWith("envs/prod.yaml", Options{RepoRoot: true, Promote: r.Params})
	if ds.HasErrors() {
		t.Fatal(ds)
	}
	pr, _ := ReleaseOf(prod)
	if pr.ID() != r.ID() {
		t.Errorf("prod with dev's release is %s, want %s", pr.ID(), r.ID())
	}
	for _, v := range prod.Spec.Components[0].Variables {
		if v.Name == "label" && v.Value != "app-prod" {
			t.Errorf("prod's own parameter tier became %v", v.Value)
		}
	}
	own, _ := LoadWith("envs/prod.yaml", Options{RepoRoot: true})
	if o, _ := ReleaseOf(own); o.ID() == r.ID() {
		t.Error("prod with its own size has dev's release ID")
	}
	_, ds = LoadWith("envs/prod.yaml", Options{RepoRoot: true, Promote: map[string]any{"tier": "dev"}})
	if !strings.Contains(ds.String(), `the release sets parameter "tier", which the template`) {
		t.Errorf("a release setting a parameter not marked promote: %s", ds)
	}
}

// TestPipelineStageOfAnotherTeamIsAnError: a pipeline promotes only inside
// its team; a stage file naming another team is an error at that file's
// teamName, and a stage file that is missing is one at the stage's file.
func TestPipelineStageOfAnotherTeamIsAnError(t *testing.T) {
	dir := t.TempDir()
	stage := func(team, name string) string {
		return "apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  teamName: " + team + "\n  envName: " + name +
			"\n  components:\n    - {name: a, type: script, script: {apply: 'true'}}\n"
	}
	writeFiles(t, dir, map[string]string{
		"pipelines/web.yaml": "apiVersion: knit.dev/v1\nkind: Pipeline\nmetadata: {name: web}\nspec:\n  teamName: shop\n  stages:\n    - {name: dev, file: ../stages/dev.yaml}\n    - {name: prod, file: ../stages/prod.yaml}\n    - {name: dr, file: ../stages/dr.yaml}\n",
		"stages/dev.yaml":    stage("shop", "dev"),
		"stages/prod.yaml":   stage("ops", "prod"),
	})
	_, ds := LoadPipeline(dir+"/pipelines/web.yaml", Options{})
	var got []string
	for _, d := range ds {
		got = append(got, strings.TrimPrefix(d.String(), dir+"/"))
	}
	want := []string{
		"pipelines/web.yaml:9:18: spec.stages[2].file: stage dr: cannot read \"../stages/dr.yaml\"\n    hint: name the stage's environment file relative to the pipeline file's folder",
		"stages/prod.yaml:4:3: spec.teamName: stage prod of pipeline web is an environment of team \"ops\", not of the pipeline's team \"shop\"\n" +
			"    hint: a pipeline promotes only inside its team (" + dir + "/pipelines/web.yaml:5:3): set teamName: shop here, or give the stage to a pipeline of team ops",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("diagnostics:\n  got  %q\n  want %q", got, want)
	}
}

// TestStageChangesWaitOnlyInTheLastStageUnlessSaid (issue 37 item 3): a
// change of a stage's own file applies at once, but waits in the last
// stage; applyStageChanges says otherwise, and a misspelt value is an
// error at its line with a did-you-mean.
func TestStageChangesWaitOnlyInTheLastStageUnlessSaid(t *testing.T) {
	p, ds := ParsePipeline("web.yaml", []byte(goodPipeline))
	if len(ds) != 0 {
		t.Fatal(ds)
	}
	if p.StageChangesWait(0) || p.StageChangesWait(1) || !p.StageChangesWait(2) {
		t.Errorf("defaults: dev %v staging %v prod %v, want only prod to wait", p.StageChangesWait(0), p.StageChangesWait(1), p.StageChangesWait(2))
	}
	src := strings.Replace(goodPipeline, "      soak: 1h\n", "      soak: 1h\n      applyStageChanges: pending\n", 1)
	src = strings.Replace(src, "      file: stages/prod.yaml\n", "      file: stages/prod.yaml\n      applyStageChanges: immediate\n", 1)
	if p, ds = ParsePipeline("web.yaml", []byte(src)); len(ds) != 0 {
		t.Fatal(ds)
	}
	if p.StageChangesWait(0) || !p.StageChangesWait(1) || p.StageChangesWait(2) {
		t.Errorf("as written: dev %v staging %v prod %v, want only staging to wait", p.StageChangesWait(0), p.StageChangesWait(1), p.StageChangesWait(2))
	}
	bad := strings.Replace(goodPipeline, "      soak: 1h\n", "      soak: 1h\n      applyStageChanges: pendng\n", 1)
	_, ds = ParsePipeline("web.yaml", []byte(bad))
	if got := ds.String(); !strings.Contains(got, "web.yaml:11:7") || !strings.Contains(got, `did you mean "pending"?`) {
		t.Errorf("a misspelt applyStageChanges:\n%s", got)
	}
}
