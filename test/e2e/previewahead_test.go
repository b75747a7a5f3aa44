package e2e

import (
	"fmt"
	"strings"
	"testing"
)

// aheadModule's id is a terraform_data's: a new rev replaces it, so its
// new id is known only after apply; a new upstream updates it in place.
const aheadModule = `
variable "upstream" { type = string }
variable "rev" {
  type    = string
  default = "1"
}
resource "terraform_data" "d" {
  input            = var.upstream
  triggers_replace = var.rev
}
output "id" { value = terraform_data.d.id }
`

// aheadEnv is net and two components taking net's id (app, web); rev
// is net's, upstream what web takes when it is not net's id.
func aheadEnv(rev, webUpstream string) string {
	web := "{name: upstream, valueFrom: net.id}"
	if webUpstream != "" {
		web = fmt.Sprintf("{name: upstream, value: %q}", webUpstream)
	}
	return `apiVersion: knit.dev/v1
kind: Environment
spec:
  teamName: shop
  envName: ids
  autoApprove: true
  components:
    - name: net
      type: terraform
      module: {source: ./modules/ahead}
      outputs: [{name: id}]
      variables:
        - {name: upstream, value: net}
        - {name: rev, value: "` + rev + `"}
    - name: app
      type: terraform
      module: {source: ./modules/ahead}
      outputs: [{name: id}]
      dependsOn: [net]
      variables:
        - {name: upstream, valueFrom: net.id}
    - name: web
      type: terraform
      module: {source: ./modules/ahead}
      dependsOn: [net]
      variables:
        - ` + web + `
`
}

// auditOf is env's audit entries of action.
func (s *server) auditOf(env, action string) []struct{ Action, Detail, RunID string } {
	s.t.Helper()
	var audit struct {
		Items []struct{ Action, Detail, RunID string }
	}
	s.do("GET", "/api/v1/audit?env="+env+"&limit=1000", nil, &audit)
	var out []struct{ Action, Detail, RunID string }
	for _, a := range audit.Items {
		if a.Action == action {
			out = append(out, a)
		}
	}
	return out
}

// Issue 37 item 7: a branch that replaces net (its id known only after
// apply) previews app and web, which take that id, planned ahead with
// placeholders (~1 each, in the total) instead of "known after apply"
// ~0 +0 -0; the preview applies nothing; the merge's apply does what the
// preview showed, and the audit trail links the two (preview-applied).
// A real value that reads as the placeholder (web's literal input, then
// net's id again) is never taken for it: web still previews ~1.
func TestAPreviewPlansDownstreamOfAChangedOutputWithPlaceholders(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.loggingTofu()
	w.sandboxReachable() // the previews' tofu runs as nobody
	hook := newHookReceiver(t)
	repo := newGitRepo(t, map[string]string{
		"envs/modules/ahead/main.tf": aheadModule,
		"envs/ids.yaml":              aheadEnv("1", ""),
	})
	first := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(gitServerArgs(repo, "--preview-branches", "feature/*", "--config", w.notifyConfig("notify.yaml", hook.url))...)
	s.eventually("shop/ids applied from the first commit", func() bool { return s.appliedFrom("shop/ids", first) })
	w.toolRuns()
	netID := w.ok("output", "shop/ids", "net", "id").stdout

	head := repo.pushBranch("feature/net", map[string]string{"envs/ids.yaml": aheadEnv("2", "")})
	var p apiPreview
	s.eventually("the branch's preview", func() bool {
		ps, _ := s.previews("feature/net", "")
		if len(ps) == 1 && ps[0].Commit == head {
			p = ps[0]
		}
		return p.Commit != ""
	})
	if p.Status != "planned" || p.Checksum == "" || len(p.Components) != 3 {
		t.Fatalf("preview = %+v, want planned, three components, a checksum", p)
	}
	counts := map[string]string{}
	for _, c := range p.Components {
		counts[c.Name] = fmt.Sprintf("%s ~%d +%d -%d", c.Status, c.Change, c.Add, c.Destroy)
	}
	want := map[string]string{"net": "planned ~0 +1 -1", "app": "planned ~1 +0 -0", "web": "planned ~1 +0 -0"}
	for name, c := range want {
		if counts[name] != c {
			t.Errorf("%s previews %q, want %q (all: %v)", name, counts[name], c, counts)
		}
	}
	s.eventually("preview.ready of the branch", func() bool { return len(hook.of("preview.ready")) > 0 })
	md := hook.of("preview.ready")[0].Markdown
	for _, want := range []string{"| app | planned | ~1 +0 -0 |", "| web | planned | ~1 +0 -0 |", "| **total** | | ~2 +1 -1 |",
		"app planned ahead with placeholders for inputs known only after apply: upstream"} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "knit-known-after-apply") || strings.Contains(md, "known after apply: upstream") {
		t.Errorf("the Markdown shows a placeholder or a component not planned:\n%s", md)
	}
	for _, run := range w.toolRuns() {
		if f := strings.Fields(run); f[1] == "apply" || f[1] == "destroy" {
			t.Errorf("the preview ran a tool that changes things: %s", run)
		}
	}
	if revs := s.revisions("shop/ids"); len(revs) != 1 {
		t.Errorf("the preview recorded a revision: %+v", revs)
	}
	if now := w.ok("output", "shop/ids", "net", "id").stdout; now != netID {
		t.Errorf("net's id changed with the preview: %q, was %q", now, netID)
	}
	if got := w.read(".knit/work/shop/ids/app/module/knit.auto.tfvars.json"); strings.Contains(got, "knit-known-after-apply") {
		t.Errorf("a placeholder reached app's applied inputs: %s", got)
	}

	git(t, repo.work, "merge", "-q", "--no-ff", "-m", "merge feature/net", "feature/net")
	git(t, repo.work, "push", "-q", "origin", "main")
	merge := git(t, repo.work, "rev-parse", "HEAD")
	s.eventually("the merge applied", func() bool { return s.appliedFrom("shop/ids", merge) })
	linked := false
	for _, a := range s.auditOf("shop/ids", "preview-applied") {
		linked = linked || strings.Contains(a.Detail, "feature/net") && strings.Contains(a.Detail, head) &&
			strings.Contains(a.Detail, p.Checksum) && a.RunID != ""
	}
	if !linked {
		t.Errorf("no preview-applied entry naming feature/net, %s and checksum %s: %+v", head, p.Checksum, s.auditOf("shop/ids", "preview-differed"))
	}

	// web takes a literal equal to what the placeholder of its input would
	// be; the next branch gives it net's id again and replaces net: the
	// placeholder plan sees no change of web, the real plan one.
	collide := "knit-known-after-apply-upstream"
	repo.commit("web takes a literal", map[string]string{"envs/ids.yaml": aheadEnv("2", collide)})
	lit := git(t, repo.work, "rev-parse", "HEAD")
	s.eventually("web's literal applied", func() bool { return s.appliedFrom("shop/ids", lit) })
	head = repo.pushBranch("feature/collide", map[string]string{"envs/ids.yaml": aheadEnv("3", "")})
	p = apiPreview{}
	s.eventually("the colliding branch's preview", func() bool {
		ps, _ := s.previews("feature/collide", "")
		if len(ps) == 1 && ps[0].Commit == head {
			p = ps[0]
		}
		return p.Commit != ""
	})
	for _, c := range p.Components {
		if c.Name == "web" && (c.Change != 1 || len(c.PlannedAhead) != 1) {
			t.Errorf("web previews %+v, want ~1 planned ahead: its real input will change", c)
		}
	}
	git(t, repo.work, "merge", "-q", "--no-ff", "-m", "merge feature/collide", "feature/collide")
	git(t, repo.work, "push", "-q", "origin", "main")
	merge = git(t, repo.work, "rev-parse", "HEAD")
	s.eventually("the second merge applied", func() bool { return s.appliedFrom("shop/ids", merge) })
	linked = false
	for _, a := range s.auditOf("shop/ids", "preview-applied") {
		linked = linked || strings.Contains(a.Detail, "feature/collide") && strings.Contains(a.Detail, p.Checksum)
	}
	if !linked {
		t.Errorf("the colliding branch's merge is not linked to its preview: %+v", s.auditOf("shop/ids", "preview-differed"))
	}
	w.noPlaceholderIn(".knit")
}
