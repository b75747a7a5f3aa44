package e2e

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/testtools/pgtest"
)

// goneModule is a resource that goes away once the file gone exists: a
// change in the world that a drift check finds, and whose reconcile is a
// destroy.
const goneModule = `
variable "name" { type = string }
variable "gone" { type = string }
resource "terraform_data" "this" {
  count = fileexists(var.gone) ? 0 : 1
  input = var.name
}
`

// doorComp is a component of goneModule, gone once MARKS/<name>.gone exists.
func doorComp(name, extra string) string {
	return fmt.Sprintf(`    - name: %[1]s
      type: terraform
      module: {source: ./modules/gone}
      variables:
        - {name: name, value: %[1]s}
        - {name: gone, value: MARKS/%[1]s.gone}
%[2]s`, name, extra)
}

// door is one row's world: a server following a repository whose
// policies/ denies destroys in prod, and qa/prod applied from it.
type door struct {
	t    *testing.T
	w    *world
	s    *server
	repo *gitRepo
	// env renders qa/prod's file of components (doorComp); file is its
	// path in the repository.
	env  func(comps ...string) string
	file string
	// args are the server's, to start it again.
	args []string
}

// doorRow is one way a run starts: act makes it try a destroy in qa/prod;
// kind is the run's kind.
type doorRow struct {
	name string
	kind string
	// reason is the denied component's reason code (default
	// PolicyDenied; a denied reconcile reports the drift it leaves).
	reason string
	// spec changes the environment file (a schedule, a ttl); args are
	// the server's beyond GitOps'.
	spec func(doc string) string
	args []string
	// file is qa/prod's file in the repository (default envs/prod.yaml,
	// which GitOps follows); files are more files of the first commit.
	file  string
	files func(d *door) map[string]string
	// postgres: the world's store is a PostgreSQL database of its own.
	postgres bool
	act      func(d *door)
	// other, for an entry point a person's token goes through, tries the
	// same with another team's operator token tok; it reports whether the
	// attempt was refused.
	other func(d *door, tok string) bool
}

// newDoor starts row's world: qa/prod applied by GitOps from its first
// commit, with components a and b.
func newDoor(t *testing.T, row doorRow) *door {
	w := newWorld(t)
	w.countingTofu()
	// The wrapper names each call's environment with its component: only
	// prod's calls count (a pipeline's dev stage may destroy).
	// A plan waits while marks/hold exists (marks/held says it waits):
	// a run to kill mid-plan.
	w.write(map[string]string{"bin/tofu": fmt.Sprintf("#!/bin/sh\necho \"$1 $(basename \"$(dirname \"$(dirname \"$PWD\")\")\")/$(basename \"$(dirname \"$PWD\")\")\" >> %[1]s\n"+
		"if [ \"$1\" = plan ] && [ -f %[3]s/hold ]; then echo held >> %[3]s/held; while [ -f %[3]s/hold ]; do sleep 0.1; done; fi\nexec %[2]s \"$@\"\n",
		w.path("calls.log"), tofuBin, w.path("marks"))})
	rule, err := os.ReadFile(filepath.Join(repo, "policies", "examples", "no_prod_destroy.rego"))
	if err != nil {
		t.Fatal(err)
	}
	marks := w.path("marks")
	if err := os.MkdirAll(marks, 0o755); err != nil {
		t.Fatal(err)
	}
	d := &door{t: t, w: w}
	d.env = func(comps ...string) string {
		doc := strings.ReplaceAll(prodEnv(comps...), "MARKS", marks)
		if row.spec != nil {
			doc = row.spec(doc)
		}
		return doc
	}
	if d.file = row.file; d.file == "" {
		d.file = "envs/prod.yaml"
	}
	files := map[string]string{
		"envs/modules/gone/main.tf":     goneModule,
		d.file:                          d.env(doorComp("a", ""), doorComp("b", "")),
		"policies/no_prod_destroy.rego": string(rule),
	}
	if row.files != nil {
		maps.Copy(files, row.files(d))
	}
	d.repo = newGitRepo(t, files)
	if row.postgres {
		w.env = append(without(w.env, "KNIT_STORE_DSN="), "KNIT_STORE_DSN="+pgtest.Start(t).DB(t))
	}
	d.args = append(gitServerArgs(d.repo), row.args...)
	d.s = w.startServer(d.args...)
	d.s.eventually("prod applied, its run over", func() bool {
		var e struct {
			Status string
			Lock   any
		}
		d.s.do("GET", "/api/v1/environments/qa/prod", nil, &e)
		return e.Status == "provisioned" && e.Lock == nil
	})
	return d
}

// remote is the environment of a knit command through the server, with
// token tok.
func (d *door) remote(tok string) []string {
	return []string{"KNIT_SERVER=" + d.s.url, "KNIT_TOKEN=" + tok}
}

type doorRun struct {
	ID, Kind, Status, Error string
}

// runs is qa/prod's runs, newest first.
func (d *door) runs() []doorRun {
	var runs struct{ Items []doorRun }
	d.s.do("GET", "/api/v1/environments/qa/prod/runs", nil, &runs)
	return runs.Items
}

// deniedRun waits for a run of kind, not among before, to end, and
// checks it ended PolicyDenied with a policy-deny audit entry.
func (d *door) deniedRun(kind, reason string, before []doorRun) doorRun {
	d.t.Helper()
	var got doorRun
	d.s.eventually("a "+kind+" run of qa/prod ends", func() bool {
		for _, r := range d.runs() {
			if r.Kind == kind && !slices.Contains(before, r) && (r.Status == "failed" || r.Status == "succeeded") {
				got = r
				return true
			}
		}
		return false
	})
	if got.Status != "failed" || !strings.Contains(got.Error, "denied by policy: policies/no_prod_destroy.rego:5 deny") {
		d.t.Errorf("%s run %s: %s, %q; want failed, denied by policies/no_prod_destroy.rego:5", kind, got.ID, got.Status, got.Error)
	}
	var rec struct {
		Components []struct{ Component, ReasonCode string }
	}
	d.s.do("GET", "/api/v1/runs/"+got.ID, nil, &rec)
	if reason == "" {
		reason = "PolicyDenied"
	}
	denied := false
	for _, c := range rec.Components {
		denied = denied || c.ReasonCode == reason
	}
	if !denied {
		d.t.Errorf("run %s: no component %s: %+v", got.ID, reason, rec.Components)
	}
	var audit struct {
		Items []struct{ Action, RunID, Detail string }
	}
	d.s.do("GET", "/api/v1/audit?env=qa/prod", nil, &audit)
	found := false
	for _, e := range audit.Items {
		found = found || (e.Action == "policy-deny" && e.RunID == got.ID && strings.Contains(e.Detail, "policies/no_prod_destroy.rego:5 deny"))
	}
	if !found {
		d.t.Errorf("run %s: no policy-deny audit entry naming the rule: %+v", got.ID, audit.Items)
	}
	return got
}

// teardownResumedAfterKill: a teardown through the API, its plan held,
// knit serve killed -9 mid-plan and started again: the run it resumes is
// the one that must meet the policy.
func (d *door) teardownResumedAfterKill() {
	d.t.Helper()
	hold := d.w.path("marks/hold")
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		d.t.Fatal(err)
	}
	if code := d.postAs(d.s.token, "/api/v1/environments/qa/prod/runs", `{"kind":"teardown","autoApprove":true}`); code != 202 {
		d.t.Fatalf("POST a teardown: %d", code)
	}
	waitFor(d.t, 2*time.Minute, func() bool { return len(lines(d.t, d.w.path("marks/held"))) > 0 })
	if err := d.s.cmd.Process.Kill(); err != nil { // kill -9, mid-plan
		d.t.Fatal(err)
	}
	_ = d.s.cmd.Wait()
	if err := os.Remove(hold); err != nil {
		d.t.Fatal(err)
	}
	d.s = d.w.startServerWithToken(d.s.token, d.args...)
	d.s.eventually("the killed teardown resumed", func() bool {
		for _, r := range d.runs() {
			if r.Kind == "teardown" && r.Status == "interrupted" {
				return true
			}
		}
		return false
	})
}

// postAs POSTs body to the API with token tok and returns the status.
func (d *door) postAs(tok, path, body string) int {
	d.t.Helper()
	req, _ := http.NewRequest("POST", d.s.url+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatalf("POST %s: %v", path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// noDestroy checks the wrapper around tofu saw no destroy and no apply
// since its last reset.
func (d *door) noDestroy() {
	d.t.Helper()
	seen := false
	for comp, cmds := range d.w.calls() {
		if !strings.HasPrefix(comp, "prod/") {
			continue
		}
		seen = true
		for _, c := range cmds {
			if c == "destroy" || c == "apply" {
				d.t.Errorf("%s: tofu %s ran although the policy denies destroys in prod", comp, c)
			}
		}
	}
	if !seen {
		d.t.Error("the wrapper around tofu saw no call in prod: the policy judged no plan")
	}
}

// doorPipeline moves releases from qa/dev to qa/prod.
const doorPipeline = `apiVersion: knit.dev/v1
kind: Pipeline
metadata: {name: web}
spec:
  teamName: qa
  stages:
    - {name: dev, file: ../stages/dev.yaml}
    - {name: prod, file: ../stages/prod.yaml}
`

// doorTemplate builds both stages of doorPipeline: version 2 of the app
// has no resource, so promoting it destroys one.
const doorTemplate = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: web}
spec:
  parameters:
    - {name: version, type: string, promote: true}
  components:
    - name: a
      type: terraform
      module: {source: "../modules/app-${param.version}"}
      variables:
        - {name: name, value: a}
`

// doorStage is a stage's environment (prod labelled env=prod).
func doorStage(stage, version string) string {
	labels := ""
	if stage == "prod" {
		labels = ", labels: {env: prod}"
	}
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ` + stage + labels + `}
spec:
  teamName: qa
  envName: ` + stage + `
  autoApprove: true
  template: {path: ../templates/web.yaml}
  parameters: {version: "` + version + `"}
`
}

// doorRows are the entry points of a run; a new one is one more row.
func doorRows() []doorRow {
	teardown := func(d *door, extra []string, args ...string) {
		r := d.w.knitWith(extra, append([]string{"teardown", "qa/prod", "--auto-approve"}, args...)...)
		if r.code == 0 {
			d.t.Errorf("knit teardown: exit 0, want a failure\n%s\n%s", r.stdout, r.stderr)
		}
	}
	return []doorRow{
		{name: "GitOpsCommit", kind: "apply", act: func(d *door) {
			d.repo.commit("drop b", map[string]string{d.file: d.env(doorComp("a", ""))})
		}},
		{name: "FileRemoval", kind: "teardown", act: func(d *door) {
			d.repo.commit("remove prod", map[string]string{"envs/prod.yaml": ""})
		}},
		{name: "APIRun", kind: "teardown", act: func(d *door) {
			if code := d.postAs(d.s.token, "/api/v1/environments/qa/prod/runs", `{"kind":"teardown","autoApprove":true}`); code != 202 {
				d.t.Fatalf("POST a teardown: %d", code)
			}
		}, other: func(d *door, tok string) bool {
			code := d.postAs(tok, "/api/v1/environments/qa/prod/runs", `{"kind":"teardown","autoApprove":true}`)
			return code == 403 || code == 404
		}},
		{name: "CLILocal", kind: "teardown", act: func(d *door) { teardown(d, nil) }},
		{name: "CLIServer", kind: "teardown", act: func(d *door) { teardown(d, d.remote(d.s.token)) },
			other: func(d *door, tok string) bool {
				return d.w.knitWith(d.remote(tok), "teardown", "qa/prod", "--auto-approve").code != 0
			}},
		{name: "DashboardButton", kind: "teardown", act: func(d *door) { d.dashboardTeardown() },
			other: func(d *door, tok string) bool { return d.dashboardRefuses(tok) }},
		{name: "DriftReconcile", kind: "drift", reason: "Drifted",
			spec: func(doc string) string {
				doc = strings.Replace(doc, "  autoApprove: true\n", "  autoApprove: true\n  drift: {schedule: \"@every 1s\"}\n", 1)
				return strings.ReplaceAll(doc, "      type: terraform\n", "      type: terraform\n      drift: {policy: reconcile}\n")
			},
			args: []string{"--drift-min-every", "100ms", "--drift-tick", "100ms"},
			act: func(d *door) {
				d.w.write(map[string]string{"marks/b.gone": "out of band"})
			}},
		{name: "KnitController", kind: "apply", act: (*door).controllerAdopts},
		{name: "ResumeAfterKillSQLite", kind: "teardown", act: (*door).teardownResumedAfterKill},
		{name: "ResumeAfterKillPostgres", kind: "teardown", postgres: true, act: (*door).teardownResumedAfterKill,
			args: []string{"--lock-lease", "3s", "--leader-lease", "3s"}},
		{name: "TTLExpiry", kind: "teardown",
			spec: func(doc string) string {
				return strings.Replace(doc, "  autoApprove: true\n", "  autoApprove: true\n  ttl: 3s\n", 1)
			},
			args: []string{"--ttl-tick", "100ms"},
			act:  func(*door) {}},
		{name: "PipelinePromote", kind: "apply", file: "stages/prod.yaml",
			spec: func(string) string { return doorStage("prod", "1") },
			args: []string{"--pipeline", "pipelines/web.yaml", "--pipeline-tick", "100ms"},
			files: func(d *door) map[string]string {
				return map[string]string{"stages/dev.yaml": doorStage("dev", "1"), "templates/web.yaml": doorTemplate,
					"modules/app-1/main.tf": "variable \"name\" { type = string }\nresource \"terraform_data\" \"this\" { input = var.name }\n",
					"modules/app-2/main.tf": "variable \"name\" { type = string }\n", // the resource is gone
					"pipelines/web.yaml":    doorPipeline}
			},
			act: func(d *door) { // release 2 passes dev and is promoted to prod, where it destroys
				d.repo.commit("app v2", map[string]string{"stages/dev.yaml": doorStage("dev", "2")})
			}},
		{name: "Rollback", kind: "rollback", act: func(d *door) {
			d.repo.commit("add c", map[string]string{"envs/prod.yaml": d.env(doorComp("a", ""), doorComp("b", ""), doorComp("c", ""))})
			d.s.eventually("c applied, its run over", func() bool {
				var e struct {
					AppliedRevision int
					Status          string
					Lock            any
					Components      []struct{ Name, Status string }
				}
				d.s.do("GET", "/api/v1/environments/qa/prod", nil, &e)
				c := slices.IndexFunc(e.Components, func(c struct{ Name, Status string }) bool { return c.Name == "c" && c.Status == "applied" })
				return e.AppliedRevision == 2 && e.Status == "provisioned" && e.Lock == nil && c >= 0
			})
			d.w.calls()
			r := d.w.knitWith(d.remote(d.s.token), "rollback", "qa/prod", "--to", "1")
			if r.code == 0 {
				d.t.Errorf("knit rollback --to 1: exit 0, want a failure\n%s\n%s", r.stdout, r.stderr)
			}
		}, other: func(d *door, tok string) bool {
			return d.w.knitWith(d.remote(tok), "rollback", "qa/prod", "--to", "1").code != 0
		}},
	}
}

// TestEveryDoorIsJudgedByTheRepositoryPolicies is the matrix of issue 35:
// whatever starts a run of qa/prod, which GitOps manages, the
// repository's policy denying destroys in prod stops the destroy (the
// wrapper around tofu sees none), the run ends PolicyDenied, and the
// audit trail records a policy-deny. Where a person's token goes through
// (the API, --server), another team's operator is refused first, and
// nothing runs.
func TestEveryDoorIsJudgedByTheRepositoryPolicies(t *testing.T) {
	t.Parallel()
	for _, row := range doorRows() {
		t.Run(row.name, func(t *testing.T) {
			d := newDoor(t, row)
			before := d.runs()
			d.w.calls()
			if row.other != nil {
				tok := strings.TrimSpace(d.w.ok("token", "create", "pay-op", "--role", "operator", "--team", "pay").stdout)
				if !row.other(d, tok) {
					t.Errorf("another team's operator was not refused")
				}
				if after := d.runs(); len(after) != len(before) {
					t.Errorf("another team's operator started a run: %+v", after[0])
				}
			}
			row.act(d)
			d.deniedRun(row.kind, row.reason, before)
			d.noDestroy()
		})
	}
}

// rolloutRow is one way an apply starts whose verification fails: act
// makes it apply the broken release.
type rolloutRow struct {
	name string
	act  func(d *door, url string, broken *releases)
}

// TestEveryDoorFollowsAFailedVerificationWithARollback: whatever starts
// the apply of shop/rolled (rollout.onFailure: rollback), a failed
// verification is followed by a rollback that brings the good release
// back.
func TestEveryDoorFollowsAFailedVerificationWithARollback(t *testing.T) {
	t.Parallel()
	rows := []rolloutRow{
		{name: "GitOpsCommit", act: func(d *door, url string, broken *releases) {
			broken.set("3")
			d.repo.commit("release 3", map[string]string{"envs/rolled.yaml": rolloutEnv(url, "3", "rollback", d.w.path("marks"), "")})
		}},
		{name: "APIRun", act: func(d *door, url string, broken *releases) {
			broken.set("2") // the applied release breaks: its apply again fails verification
			if code := d.postAs(d.s.token, "/api/v1/environments/shop/rolled/runs", `{"kind":"apply"}`); code != 202 {
				d.t.Fatalf("POST an apply: %d", code)
			}
		}},
		{name: "CLILocal", act: func(d *door, url string, broken *releases) {
			broken.set("3")
			d.w.write(map[string]string{"app/main.tf": releaseModule, "env.yaml": rolloutEnv(url, "3", "rollback", d.w.path("marks"), "")})
			if r := d.w.knit("apply", "-f", "env.yaml"); r.code != 1 || !strings.Contains(r.stderr, "rolling shop/rolled back") {
				d.t.Errorf("knit apply of a broken release: exit %d, want 1 and a rollback\n%s", r.code, r.stderr)
			}
		}},
	}
	rows = append(rows,
		rolloutRow{name: "CLIServer", act: func(d *door, url string, broken *releases) {
			broken.set("2") // the applied release breaks: its apply again fails verification
			if r := d.w.knitWith(d.remote(d.s.token), "apply", "shop/rolled"); r.code == 0 {
				d.t.Errorf("knit apply --server of a broken release: exit 0, want a failure\n%s", r.stderr)
			}
		}},
	)
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			w := newWorld(t)
			url, broken := endpoint(t)
			d := &door{t: t, w: w}
			d.repo = newGitRepo(t, map[string]string{
				"envs/app/main.tf": releaseModule,
				"envs/rolled.yaml": rolloutEnv(url, "1", "rollback", w.path("marks"), ""),
			})
			d.s = w.startServer(gitServerArgs(d.repo)...)
			d.s.eventually("release 1 applied", func() bool { e, _ := d.s.env("shop/rolled"); return e.Status == "provisioned" })
			d.repo.commit("release 2", map[string]string{"envs/rolled.yaml": rolloutEnv(url, "2", "rollback", w.path("marks"), "")})
			d.s.eventually("release 2 applied, its run over", func() bool {
				var e struct {
					AppliedRevision int
					Status          string
					Lock            any
				}
				d.s.do("GET", "/api/v1/environments/shop/rolled", nil, &e)
				return e.AppliedRevision == 2 && e.Status == "provisioned" && e.Lock == nil
			})
			good := map[string]string{"GitOpsCommit": "2", "APIRun": "1", "CLILocal": "2", "CLIServer": "1"}[row.name]
			var before struct{ Items []doorRun }
			d.s.do("GET", "/api/v1/environments/shop/rolled/runs", nil, &before)
			row.act(d, url, broken)
			d.s.eventually("a rollback of shop/rolled succeeds", func() bool {
				var runs struct{ Items []doorRun }
				d.s.do("GET", "/api/v1/environments/shop/rolled/runs", nil, &runs)
				for _, r := range runs.Items {
					if r.Kind == "rollback" && r.Status == "succeeded" && !slices.Contains(before.Items, r) {
						return true
					}
				}
				return false
			})
			if got := w.release(); got != good {
				t.Errorf("release after the rollback: %q, want %s", got, good)
			}
		})
	}
}
