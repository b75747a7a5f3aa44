package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// previewEnv is an environment of one counted component whose extra
// variable a branch changes (terraform_data's input: an update in place).
func previewEnv(team, name, extra string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: %[1]s-%[2]s}
spec:
  teamName: %[1]s
  envName: %[2]s
  autoApprove: true
  components:
    - name: app
      type: terraform
      module: {source: ./modules/counted}
      variables:
        - {name: name, value: %[2]s}
        - {name: extra, value: "%[3]s"}
`, team, name, extra)
}

type apiPreview struct {
	Branch, Commit, Env, Team, Change, Status, Checksum, Error string
	Components                                                 []struct {
		Name                 string
		Status               string
		Add, Change, Destroy int
		Digest               string
		PlannedAhead         []string
	}
}

// previews reads GET /api/v1/previews?branch=B with token ("" : the admin's).
func (s *server) previews(branch, token string) ([]apiPreview, int) {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.url+"/api/v1/previews?branch="+url.QueryEscape(branch), nil)
	if token == "" {
		token = s.token
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var ps []apiPreview
	if resp.StatusCode == 200 {
		if err := json.NewDecoder(resp.Body).Decode(&ps); err != nil {
			s.t.Fatal(err)
		}
	}
	return ps, resp.StatusCode
}

// pushBranch commits files on a new branch of r's clone, pushes it, and
// comes back to main; it returns the branch's head.
func (r *gitRepo) pushBranch(branch string, files map[string]string) string {
	r.t.Helper()
	git(r.t, r.work, "checkout", "-q", "-b", branch, "main")
	for name, content := range files {
		p := filepath.Join(r.work, name)
		if content == "" {
			git(r.t, r.work, "rm", "-q", name)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
		git(r.t, r.work, "add", name)
	}
	git(r.t, r.work, "commit", "-q", "--allow-empty", "-m", "on "+branch)
	git(r.t, r.work, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	head := git(r.t, r.work, "rev-parse", "HEAD")
	git(r.t, r.work, "checkout", "-q", "main")
	return head
}

// TestABranchIsPreviewedAndItsMergeAppliesThePreviewedPlan is issue 26's
// preview acceptance: a branch that changes one variable is previewed as
// one component ~1, with no tool process that applies, a signed
// preview.ready notification carrying Markdown; the merge commit is
// applied by GitOps with the previewed checksum, and the audit trail links
// the two. A branch that adds another team's environment shows it only to
// that team's token; a branch named with shell metacharacters is
// previewed, running nothing of its name.
func TestABranchIsPreviewedAndItsMergeAppliesThePreviewedPlan(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.loggingTofu()
	w.sandboxReachable() // the previews' tofu runs as nobody
	hook := newHookReceiver(t)
	repo := newGitRepo(t, map[string]string{
		"envs/modules/counted/main.tf": countedModule,
		"envs/app.yaml":                previewEnv("shop", "app", "v1"),
	})
	first := git(t, repo.work, "rev-parse", "HEAD")
	w.write(map[string]string{"webhook-secret": "hook\n"})
	shopTok := strings.TrimSpace(w.ok("token", "create", "shop-ci", "--role", "viewer", "--team", "shop").stdout)
	payTok := strings.TrimSpace(w.ok("token", "create", "pay-ci", "--role", "viewer", "--team", "pay").stdout)
	s := w.startServer(gitServerArgs(repo, "--preview-branches", "feature/*", "--webhook-secret-file", w.path("webhook-secret"),
		"--config", w.notifyConfig("notify.yaml", hook.url))...)
	s.eventually("shop/app applied from the first commit", func() bool { return s.appliedFrom("shop/app", first) })
	w.toolRuns() // forget the first apply

	// The branch changes one variable: a preview, planned and never applied.
	head := repo.pushBranch("feature/bigger", map[string]string{"envs/app.yaml": previewEnv("shop", "app", "v2")})
	body := `{"ref":"refs/heads/feature/bigger"}`
	mac := hmac.New(sha256.New, []byte("hook"))
	mac.Write([]byte(body))
	req, _ := http.NewRequest("POST", s.url+"/api/v1/webhooks/git", strings.NewReader(body))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var answer struct{ Status, Branch string }
	_ = json.NewDecoder(resp.Body).Decode(&answer)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || answer.Status != "previewing" || answer.Branch != "feature/bigger" {
		t.Fatalf("push webhook of feature/bigger: %d %+v, want 202 previewing", resp.StatusCode, answer)
	}
	var p apiPreview
	s.eventually("the branch's preview", func() bool {
		ps, _ := s.previews("feature/bigger", "")
		if len(ps) == 1 && ps[0].Commit == head {
			p = ps[0]
		}
		return p.Commit != ""
	})
	if p.Env != "shop/app" || p.Status != "planned" || p.Change != "update" || len(p.Components) != 1 || p.Checksum == "" {
		t.Fatalf("preview = %+v, want shop/app planned, one component, a checksum", p)
	}
	if c := p.Components[0]; c.Name != "app" || c.Change != 1 || c.Add != 0 || c.Destroy != 0 {
		t.Errorf("app previews %+v, want ~1 +0 -0", c)
	}
	s.eventually("preview.ready of the branch", func() bool { return len(hook.of("preview.ready")) > 0 })
	ev := hook.of("preview.ready")[0]
	if !ev.Signed || ev.Branch != "feature/bigger" || ev.Commit != head {
		t.Errorf("preview.ready = %+v, want signed, of feature/bigger at %s", ev, head)
	}
	for _, want := range []string{"`shop/app` (update): planned", "| app | planned | ~1 +0 -0 |", p.Checksum} {
		if !strings.Contains(ev.Markdown, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, ev.Markdown)
		}
	}
	// The CLI reads it through the server, as the token may see it.
	asShop := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + shopTok}
	if r := w.knitWith(asShop, "previews", "--branch", "feature/bigger"); r.code != 0 ||
		!regexp.MustCompile(`shop/app: update at \w+, planned[^\n]*\n\s+app\s+planned\s+~1 \+0 -0`).MatchString(r.stdout) {
		t.Errorf("knit previews: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	var cli []apiPreview
	if r := w.knitWith(asShop, "previews", "--branch", "feature/bigger", "-o", "json"); r.code != 0 ||
		json.Unmarshal([]byte(r.stdout), &cli) != nil || len(cli) != 1 || cli[0].Checksum != p.Checksum {
		t.Errorf("knit previews -o json: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	runs := w.toolRuns()
	planned := false
	for _, run := range runs {
		f := strings.Fields(run)
		if f[1] == "apply" || f[1] == "destroy" {
			t.Errorf("the preview ran a tool that changes things: %s", run)
		}
		planned = planned || f[1] == "plan"
	}
	if !planned {
		t.Errorf("the preview ran no plan: %v", runs)
	}
	if revs := s.revisions("shop/app"); len(revs) != 1 {
		t.Errorf("the preview recorded a revision: %+v", revs)
	}
	if got := w.read(".knit/work/shop/app/app/module/knit.auto.tfvars.json"); !strings.Contains(got, `"v1"`) {
		t.Errorf("the applied work dir's inputs changed with the preview: %s", got)
	}

	// Another team's environment, added by a branch: only that team sees it.
	repo.pushBranch("feature/evil", map[string]string{"envs/evil.yaml": previewEnv("pay", "evil", "x")})
	s.eventually("the other team's preview", func() bool { ps, _ := s.previews("feature/evil", ""); return len(ps) == 1 })
	if ps, _ := s.previews("feature/evil", shopTok); len(ps) != 0 {
		t.Errorf("shop's token sees the preview of another team's environment: %+v", ps)
	}
	if ps, _ := s.previews("feature/evil", payTok); len(ps) != 1 || ps[0].Env != "pay/evil" || ps[0].Change != "create" || ps[0].Components[0].Add != 1 {
		t.Errorf("pay's token sees %+v, want pay/evil created", ps)
	}
	if ps, _ := s.previews("feature/bigger", payTok); len(ps) != 0 {
		t.Errorf("pay's token sees shop's preview: %+v", ps)
	}
	if e, code := s.env("pay/evil"); code != 404 {
		t.Errorf("previewing a new environment recorded it: %d %+v", code, e)
	}

	// A branch named with shell metacharacters is fetched and previewed
	// as a name, never run; one with ".." is refused.
	odd := "feature/$(touch${IFS}pwned);`touch${IFS}pwned2`|x"
	oddHead := repo.pushBranch(odd, map[string]string{"envs/app.yaml": previewEnv("shop", "app", "v3")})
	s.eventually("the odd branch's preview", func() bool {
		ps, _ := s.previews(odd, shopTok)
		return len(ps) == 1 && ps[0].Commit == oddHead && ps[0].Status == "planned"
	})
	for _, dir := range []string{w.dir, repo.work} {
		for _, f := range []string{"pwned", "pwned2"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				t.Errorf("a branch name ran a command: %s exists", filepath.Join(dir, f))
			}
		}
	}
	if _, code := s.previews("feature/../main", ""); code != 400 {
		t.Errorf("?branch=feature/../main answered %d, want 400", code)
	}

	// The merge is applied as usual, with the plan the preview showed.
	git(t, repo.work, "merge", "-q", "--no-ff", "-m", "merge feature/bigger", "feature/bigger")
	git(t, repo.work, "push", "-q", "origin", "main")
	merge := git(t, repo.work, "rev-parse", "HEAD")
	s.eventually("the merge applied", func() bool { return s.appliedFrom("shop/app", merge) })
	var audit struct {
		Items []struct{ Action, Detail, RunID string }
	}
	s.do("GET", "/api/v1/audit?env=shop/app&limit=1000", nil, &audit)
	linked := false
	for _, a := range audit.Items {
		linked = linked || a.Action == "preview-applied" && strings.Contains(a.Detail, "feature/bigger") &&
			strings.Contains(a.Detail, head) && strings.Contains(a.Detail, p.Checksum) && a.RunID != ""
	}
	if !linked {
		t.Errorf("no preview-applied entry naming feature/bigger, %s and checksum %s: %+v", head, p.Checksum, audit.Items)
	}
	if got := w.read(".knit/work/shop/app/app/module/knit.auto.tfvars.json"); !strings.Contains(got, `"v2"`) {
		t.Errorf("the merge did not apply v2: %s", got)
	}
}

// TestManyBranchesArePreviewedAFewPerPoll: a push of many matching
// branches at once is previewed at most DefaultPreviewsPerPoll (4) heads
// per poll, the others at the next polls, until every one is.
func TestManyBranchesArePreviewedAFewPerPoll(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	hook := newHookReceiver(t)
	repo := newGitRepo(t, map[string]string{"envs/README.md": "no environments\n"})
	s := w.startServer(gitServerArgs(repo, "--preview-branches", "many/*", "--config", w.notifyConfig("notify.yaml", hook.url))...)
	var refs []string
	for i := range 30 {
		refs = append(refs, fmt.Sprintf("HEAD:refs/heads/many/b%02d", i))
	}
	refs = append(refs, "HEAD:refs/heads/other/ignored")
	git(t, repo.work, append([]string{"push", "-q", "origin"}, refs...)...)
	s.eventually("every branch previewed", func() bool { return len(hook.of("preview.ready")) >= 30 })
	if n := len(regexp.MustCompile(`"msg":"git: more branches to preview than one poll does; the rest wait","previewing":4,`).
		FindAllString(s.logText(), -1)); n == 0 {
		t.Errorf("no poll was bounded to 4 branches:\n%s", s.logText())
	}
	for _, ev := range hook.of("preview.ready") {
		if !strings.HasPrefix(ev.Branch, "many/") {
			t.Errorf("a branch not matching the pattern was previewed: %s", ev.Branch)
		}
	}
	if n := len(hook.of("preview.ready")); n != 30 {
		t.Errorf("%d preview.ready notifications, want one per branch (30)", n)
	}
}

// previewTemplate is a template of one counted component; its default
// extra is what a branch changes.
const previewTemplate = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: counted}
spec:
  parameters:
    - {name: name, type: string, required: true}
    - {name: extra, type: string, default: EXTRA}
  components:
    - name: app
      type: terraform
      module: {source: ../envs/modules/counted}
      variables:
        - {name: name, value: "${param.name}"}
        - {name: extra, value: "${param.extra}"}
`

// previewSet is a list set of previewTemplate with the named elements.
func previewSet(names ...string) string {
	var els []string
	for _, n := range names {
		els = append(els, "{name: "+n+", parameters: {name: "+n+"}}")
	}
	return `apiVersion: knit.dev/v1
kind: EnvironmentSet
metadata: {name: prs}
spec:
  teamName: shop
  envName: "pr-{{ .name }}"
  autoApprove: true
  template: {path: ../templates/counted.yaml}
  parameters: {}
  generators:
    - list: {elements: [` + strings.Join(els, ", ") + `]}
`
}

// TestABranchChangingATemplateASetOrRemovingAFileIsPreviewed: a branch
// that changes only a template previews every environment built from it
// as an update (~1); a branch changing a set file previews its elements
// (a new one: create; a gone one: destroy; an unchanged one is left
// out); a branch removing a file
// previews a destroy whose checksum the teardown after the merge has, and
// the audit trail links the two.
func TestABranchChangingATemplateASetOrRemovingAFileIsPreviewed(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.loggingTofu()
	w.sandboxReachable() // the previews' tofu runs as nobody
	repo := newGitRepo(t, map[string]string{
		"envs/modules/counted/main.tf": countedModule,
		"templates/counted.yaml":       strings.Replace(previewTemplate, "EXTRA", "v1", 1),
		"envs/app.yaml": `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: app
  autoApprove: true
  template: {path: ../templates/counted.yaml}
  parameters: {name: app}
`,
		"envs/set.yaml":  previewSet("a", "b"),
		"envs/gone.yaml": previewEnv("shop", "gone", "v1"),
	})
	first := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(gitServerArgs(repo, "--preview-branches", "feature/*")...)
	for _, id := range []string{"shop/app", "shop/pr-a", "shop/pr-b", "shop/gone"} {
		s.eventually(id+" applied from the first commit", func() bool { return s.appliedFrom(id, first) })
	}
	w.toolRuns()

	// Only the template changes: every environment built from it is updated.
	head := repo.pushBranch("feature/template", map[string]string{"templates/counted.yaml": strings.Replace(previewTemplate, "EXTRA", "v2", 1)})
	var ps []apiPreview
	s.eventually("the template branch's previews", func() bool {
		ps, _ = s.previews("feature/template", "")
		return len(ps) == 3 && ps[0].Commit == head
	})
	for _, p := range ps {
		if p.Change != "update" || p.Status != "planned" || len(p.Components) != 1 {
			t.Errorf("%s previews %+v, want a planned update of one component", p.Env, p)
			continue
		}
		if c := p.Components[0]; c.Change != 1 || c.Add != 0 || c.Destroy != 0 {
			t.Errorf("%s's app previews %+v, want ~1 +0 -0", p.Env, c)
		}
	}

	// The set loses b and gains c.
	repo.pushBranch("feature/set", map[string]string{"envs/set.yaml": previewSet("a", "c")})
	changes := map[string]string{}
	s.eventually("the set branch's previews", func() bool {
		ps, _ = s.previews("feature/set", "")
		for _, p := range ps {
			changes[p.Env] = p.Change + " " + p.Status
		}
		return len(ps) == 2
	})
	if changes["shop/pr-b"] != "destroy planned" || changes["shop/pr-c"] != "create planned" || changes["shop/pr-a"] != "" {
		t.Errorf("the set branch previews %v, want pr-b destroyed and pr-c created, unchanged pr-a left out", changes)
	}

	// A removed file previews a destroy; its merge tears down with the
	// previewed checksum, linked in the audit trail.
	rmHead := repo.pushBranch("feature/rm", map[string]string{"envs/gone.yaml": ""})
	var rm apiPreview
	s.eventually("the removal's preview", func() bool {
		ps, _ = s.previews("feature/rm", "")
		if len(ps) == 1 && ps[0].Commit == rmHead {
			rm = ps[0]
		}
		return rm.Commit != ""
	})
	if rm.Env != "shop/gone" || rm.Change != "destroy" || rm.Status != "planned" || rm.Checksum == "" ||
		len(rm.Components) != 1 || rm.Components[0].Destroy != 1 {
		t.Fatalf("the removal previews %+v, want shop/gone destroyed (-1) with a checksum", rm)
	}
	for _, run := range w.toolRuns() {
		if f := strings.Fields(run); f[1] == "apply" || f[1] == "destroy" {
			t.Errorf("a preview ran a tool that changes things: %s", run)
		}
	}
	git(t, repo.work, "merge", "-q", "--no-ff", "-m", "merge feature/rm", "feature/rm")
	git(t, repo.work, "push", "-q", "origin", "main")
	s.eventually("shop/gone torn down", func() bool { e, _ := s.env("shop/gone"); return e.Status == "torn-down" })
	var audit struct {
		Items []struct{ Action, Detail, RunID string }
	}
	s.do("GET", "/api/v1/audit?env=shop/gone&limit=1000", nil, &audit)
	linked := false
	for _, a := range audit.Items {
		linked = linked || a.Action == "preview-applied" && strings.Contains(a.Detail, "feature/rm") &&
			strings.Contains(a.Detail, rmHead) && strings.Contains(a.Detail, rm.Checksum) && a.RunID != ""
	}
	if !linked {
		t.Errorf("no preview-applied entry naming feature/rm, %s and checksum %s: %+v", rmHead, rm.Checksum, audit.Items)
	}
}
