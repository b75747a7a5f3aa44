package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// watchedPolicy is the watched branch's policy: its warning carries HTML,
// an image, a link, a code span and a mention, which the preview.ready
// Markdown must show as text.
const watchedPolicy = "package knit\n\nwarn contains msg if {\n\tmsg := \"WATCHED <img src=x onerror=alert(1)> ![x](http://h/x.png) [a](http://evil.example) `tick` @here &amp;\"\n}\n"

// branchPolicy is what a branch adds: were its warn ever evaluated, its
// marker would show in the preview, the audit trail or the Markdown, and
// the file it writes would exist.
func branchPolicy(marker string) string {
	return "package knit\n\nwarn contains msg if {\n\tmsg := \"" + marker + "\"\n}\n"
}

// TestAPreviewIsJudgedByTheWatchedBranchsPoliciesOnly is issue 35's
// policy attack on previews: a branch adds policies/leak.rego and a
// spec.policies folder of its own whose warns return a marker; neither is
// ever evaluated: the marker is nowhere (the preview, the run, the audit
// trail, the Markdown, the server's log), while the watched branch's
// policy judges the preview, and its message, full of HTML and Markdown,
// arrives in the preview.ready Markdown as text.
func TestAPreviewIsJudgedByTheWatchedBranchsPoliciesOnly(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	hook := newHookReceiver(t)
	repo := newGitRepo(t, map[string]string{
		"envs/modules/counted/main.tf": countedModule,
		"envs/app.yaml":                previewEnv("shop", "app", "v1"),
		"policies/watched.rego":        watchedPolicy,
	})
	first := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(gitServerArgs(repo, "--preview-branches", "feature/*", "--config", w.notifyConfig("notify.yaml", hook.url))...)
	s.eventually("shop/app applied from the first commit", func() bool { return s.appliedFrom("shop/app", first) })

	own := strings.Replace(previewEnv("shop", "app", "v2"), "  autoApprove: true\n", "  autoApprove: true\n  policies: [./branchpolicies]\n", 1)
	head := repo.pushBranch("feature/leak", map[string]string{
		"envs/app.yaml":                own,
		"policies/leak.rego":           branchPolicy("BRANCH-POLICY-RAN"),
		"policies/watched.rego":        "package knit\n", // the branch empties the watched one: no effect
		"envs/branchpolicies/own.rego": branchPolicy("BRANCH-SPEC-POLICY-RAN"),
	})
	md := s.previewMarkdown(hook, head)
	ps, _ := s.previews("feature/leak", "")
	if len(ps) != 1 || ps[0].Status != "planned" {
		var logs json.RawMessage
		s.do("GET", "/api/v1/environments/shop/app/components/app/logs", nil, &logs)
		t.Fatalf("previews = %+v, want shop/app planned\n%s", ps, logs)
	}
	var raw []map[string]any
	s.do("GET", "/api/v1/previews?branch=feature/leak", nil, &raw)
	record, _ := json.Marshal(raw)
	var audit json.RawMessage
	s.do("GET", "/api/v1/audit?limit=1000", nil, &audit)
	var runs json.RawMessage
	s.do("GET", "/api/v1/environments/shop/app/runs", nil, &runs)
	for _, marker := range []string{"BRANCH-POLICY-RAN", "BRANCH-SPEC-POLICY-RAN"} {
		for what, text := range map[string]string{"the preview": string(record), "the audit trail": string(audit),
			"the runs": string(runs), "the Markdown": md, "the server's log": s.logText()} {
			if strings.Contains(text, marker) {
				t.Errorf("a branch's policy was evaluated: %s holds %s:\n%s", what, marker, text)
			}
		}
	}
	if !strings.Contains(string(record), "WATCHED") {
		t.Errorf("the watched branch's policy did not judge the preview: %s", record)
	}
	// The watched policy's message is text: nothing of it renders.
	for _, bad := range []string{"<img", "![x](", "[a](", "`tick`", " @here"} {
		if strings.Contains(md, bad) {
			t.Errorf("the Markdown carries %q unescaped:\n%s", bad, md)
		}
	}
	for _, want := range []string{`WATCHED &lt;img src\=x onerror\=alert\(1\)&gt; \!\[x\]\(http\:`, `\[a\]\(http\:`, "\\`tick\\`", "&#64;here", "&amp;amp;"} {
		if !strings.Contains(md, want) {
			t.Errorf("the Markdown lacks the escaped %q:\n%s", want, md)
		}
	}
}

// TestAPreviewThatSleepsForeverNeverHoldsTheWatchedBranch is issue 35's
// loop acceptance: a branch whose script plan sleeps for ever is being
// previewed while a commit of the watched branch is applied (the preview
// still runs, and has recorded nothing, when the apply is done: it never
// waited for it), and so is a commit of the environment the preview
// holds (the preview gives way); at the preview's deadline its tool is
// stopped and the preview recorded as timed out.
func TestAPreviewThatSleepsForeverNeverHoldsTheWatchedBranch(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	hook := newHookReceiver(t)
	repo := newGitRepo(t, map[string]string{
		"envs/modules/counted/main.tf": countedModule,
		"envs/app.yaml":                previewEnv("shop", "app", "v1"),
		"envs/other.yaml":              previewEnv("ops", "other", "v1"),
	})
	first := git(t, repo.work, "rev-parse", "HEAD")
	started := filepath.Join(marksDir(t), "started")
	s := w.startServer(gitServerArgs(repo, "--preview-branches", "feature/*", "--preview-scripts", "--preview-timeout", "40s",
		"--config", w.notifyConfig("notify.yaml", hook.url))...)
	s.eventually("both applied from the first commit", func() bool {
		return s.appliedFrom("shop/app", first) && s.appliedFrom("ops/other", first)
	})
	sleeper := previewEnv("shop", "app", "v1") + `    - name: sleeper
      type: script
      script: {plan: "echo $$ > ` + started + `; exec sleep infinity", apply: "echo '{}'"}
`
	repo.pushBranch("feature/sleep", map[string]string{"envs/app.yaml": sleeper})
	s.eventually("the sleeping preview started", func() bool { _, err := os.Stat(started); return err == nil })

	next := repo.commit("bump other", map[string]string{"envs/other.yaml": previewEnv("ops", "other", "v2")})
	s.eventually("the watched branch's commit applied", func() bool { return s.appliedFrom("ops/other", next) })
	if ps, _ := s.previews("feature/sleep", ""); len(ps) != 0 {
		t.Fatalf("the preview ended before the watched commit was applied: %+v", ps)
	}
	// A commit to the very environment the preview holds goes first: the
	// preview gives way (its tool stopped) and is planned again later.
	same := repo.commit("bump app", map[string]string{"envs/app.yaml": previewEnv("shop", "app", "v2")})
	s.eventually("the watched branch's commit of the previewed environment applied", func() bool { return s.appliedFrom("shop/app", same) })
	if p := previewOf(s, "feature/sleep", "shop/app"); p.Status != "" {
		t.Fatalf("the preview ended before the watched commit of its environment was applied: %+v\n%s", p, s.logText())
	}
	if !strings.Contains(s.logText(), "a preview gave way to the watched branch's run of the environment") {
		t.Errorf("the preview did not give way:\n%s", s.logText())
	}
	var p apiPreview
	s.eventually("the preview recorded as timed out", func() bool {
		p = previewOf(s, "feature/sleep", "shop/app")
		return p.Status != ""
	})
	if p.Status != "timed-out" || !strings.Contains(p.Error, "did not end within 40s") {
		t.Errorf("preview = %+v, want timed-out after 40s", p)
	}
	pid, _ := os.ReadFile(started)
	if _, err := os.Stat("/proc/" + strings.TrimSpace(string(pid))); err == nil {
		t.Errorf("the preview's sleeping tool (pid %s) still runs after its deadline", strings.TrimSpace(string(pid)))
	}
	s.eventually("preview.ready of the timed-out branch", func() bool { return len(hook.of("preview.ready")) > 0 })
	if md := hook.of("preview.ready")[0].Markdown; !strings.Contains(md, `timed\-out`) {
		t.Errorf("the Markdown does not say the preview timed out:\n%s", md)
	}
}

// previewOf is branch's preview of env (zero: none yet).
func previewOf(s *server, branch, env string) apiPreview {
	ps, _ := s.previews(branch, "")
	for _, p := range ps {
		if p.Env == env {
			return p
		}
	}
	return apiPreview{}
}
