package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loggingTofu makes the world's tofu a wrapper that logs each invocation as
// "<component> <arguments…>" (the component from the work dir's name)
// before running the real tofu.
func (w *world) loggingTofu() {
	w.t.Helper()
	w.write(map[string]string{
		"bin/tofu": fmt.Sprintf("#!/bin/sh\necho \"$(basename \"$(dirname \"$PWD\")\") $*\" >> %s\nexec %s \"$@\"\n",
			w.path("tools.log"), tofuBin),
	})
	if err := os.Chmod(w.path("bin/tofu"), 0o755); err != nil {
		w.t.Fatal(err)
	}
	w.env = append(w.env, "KNIT_TF_BINARY="+w.path("bin/tofu"), "KNIT_TF_CLI_CONFIG="+filepath.Join(repo, ".tools", "tofurc"))
}

// toolRuns returns the tool invocations logged since the last call, as
// "<component> <arguments…>", leaving out `version`.
func (w *world) toolRuns() []string {
	w.t.Helper()
	data, _ := os.ReadFile(w.path("tools.log"))
	_ = os.Truncate(w.path("tools.log"), 0) // kept: a sandboxed tool may write it, not create it
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[1] != "version" {
			out = append(out, line)
		}
	}
	return out
}

// onlyDestroys fails unless every tool run in runs destroys: a plan only
// with -destroy, an apply only of a saved destroy plan (an approval's copy
// of it is named …-destroy.tfplan), or a destroy. It returns the
// components each kind of run touched, as "destroy comp" and "apply comp".
func onlyDestroys(t *testing.T, runs []string) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	for _, run := range runs {
		f := strings.Fields(run)
		comp, cmd, args := f[0], f[1], f[2:]
		switch cmd {
		case "init", "output", "show":
		case "destroy":
			seen["destroy "+comp] = true
		case "plan":
			if !strings.Contains(run, " -destroy") {
				t.Errorf("a plan that is not a destroy: %s", run)
			}
		case "apply":
			if last := args[len(args)-1]; !strings.HasSuffix(last, "-destroy.tfplan") {
				t.Errorf("an apply of something but a destroy plan: %s", run)
			}
			seen["apply "+comp] = true
		default:
			t.Errorf("unexpected tool run: %s", run)
		}
	}
	return seen
}

// Issue 22 item 14: `git rm` of an environment's file tears it down, gated
// where autoApprove is false. `knit approve` of that destroy, through the
// server, destroys: the wrapper around tofu sees only destroys, and the
// environment ends torn down with its files gone.
func TestApprovingTheTeardownOfARemovedGitFileDestroys(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.loggingTofu()
	files := w.path("files")
	repo := newGitRepo(t, map[string]string{
		"envs/modules/file/main.tf": fileModule, // beside the file: paths resolve from its folder
		"envs/dev.yaml":             gitEnv("dev", files, "v1", "", true),
	})
	s := w.startServer("--git-url", "file://"+repo.bare, "--git-path", "envs/", "--git-poll", "200ms")
	remote := []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + s.token}
	approve := func(what string) {
		t.Helper()
		if r := w.knitWith(remote, "approve", "shop/dev", "web", "--reason", what); r.code != 0 {
			t.Fatalf("knit approve (%s): exit %d\n%s\n%s\nserver log:\n%s", what, r.code, r.stdout, r.stderr, s.log)
		}
	}
	s.eventually("dev waits for approval of web", func() bool { e, _ := s.env("shop/dev"); return e.Status == "awaiting-approval" })
	approve("first apply")
	s.eventually("dev provisioned", func() bool { e, _ := s.env("shop/dev"); return e.Status == "provisioned" })
	w.toolRuns()

	repo.commit("dev: gone", map[string]string{"envs/dev.yaml": ""})
	s.eventually("the teardown waits for approval of web", func() bool {
		e, _ := s.env("shop/dev")
		for _, c := range e.Components {
			if c.Name == "web" && c.Status == "awaiting-approval" {
				return e.Status == "awaiting-approval"
			}
		}
		return false
	})
	for _, f := range []string{"dev-net.txt", "dev-web.txt"} {
		if _, err := os.Stat(filepath.Join(files, f)); err != nil {
			t.Fatalf("%s was destroyed before the approval", f)
		}
	}
	// The waiting destroy says it comes from the removed file; net, which
	// web depends on, waits for its dependent, not for an upstream.
	var waiting struct {
		Components []struct{ Name, Code, Reason string }
	}
	s.do("GET", "/api/v1/environments/shop/dev", nil, &waiting)
	for _, c := range waiting.Components {
		switch {
		case c.Name == "web" && (!strings.Contains(c.Reason, "teardown (the file was removed (envs/dev.yaml)") || strings.Contains(c.Reason, "destroy: true")):
			t.Errorf("web waits with %q; want the removed file named as the cause", c.Reason)
		case c.Name == "net" && c.Code != "waiting: dependent web awaiting approval":
			t.Errorf("net waits with %q; want it waiting for its dependent web", c.Code)
		}
	}
	approve("decommission")
	s.eventually("dev torn down", func() bool { e, _ := s.env("shop/dev"); return e.Status == "torn-down" })
	for _, f := range []string{"dev-net.txt", "dev-web.txt"} {
		if _, err := os.Stat(filepath.Join(files, f)); err == nil {
			t.Errorf("%s survived the approved teardown", f)
		}
	}
	seen := onlyDestroys(t, w.toolRuns())
	if !seen["apply web"] || !seen["destroy net"] {
		t.Errorf("want web's approved destroy plan applied and net destroyed; saw %v", seen)
	}
	var audit struct {
		Items []struct{ Action, Component, Detail string }
	}
	s.do("GET", "/api/v1/audit?env=shop/dev&limit=1000", nil, &audit)
	for _, e := range audit.Items {
		if e.Action == "approval-stale" {
			t.Errorf("the approval went stale: %s %s", e.Component, e.Detail)
		}
	}
}

// Approving a gated destroy made from the CLI (teardown: true, a component
// removed from the file) runs no tool but destroys, and ends with the
// components gone.
func TestApprovingAGatedDestroyAppliesNothing(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.loggingTofu()
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	w.writeFileEnv(fileEnv("", netComp, appComp, webComp))
	w.ok("apply", "-f", "env.yaml", "--auto-approve")

	// app (autoApprove: false) and web removed from the file.
	w.writeFileEnv(fileEnv("", netComp))
	w.toolRuns()
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 || !w.exists("files/app.txt") {
		t.Fatalf("removing a gated component: exit %d, app.txt exists %v\n%s", r.code, w.exists("files/app.txt"), r.stdout)
	}
	w.ok("approve", "qa/gates", "app")
	if w.exists("files/app.txt") || w.exists("files/web.txt") || !w.exists("files/net.txt") {
		t.Errorf("after the approval: app %v web %v net %v; want only net", w.exists("files/app.txt"), w.exists("files/web.txt"), w.exists("files/net.txt"))
	}
	if seen := onlyDestroys(t, w.toolRuns()); !seen["apply app"] {
		t.Errorf("app's approved destroy plan was not applied: %v", seen)
	}

	// teardown: true of what is left, with app back and gated.
	w.writeFileEnv(fileEnv("", netComp, appComp))
	w.ok("apply", "-f", "env.yaml", "--auto-approve")
	w.writeFileEnv(fileEnv("  teardown: true\n", netComp, appComp))
	w.toolRuns()
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("teardown: true: exit %d\n%s", r.code, r.stdout)
	}
	w.ok("approve", "qa/gates", "app")
	if w.exists("files/app.txt") || w.exists("files/net.txt") {
		t.Error("the approved teardown left files")
	}
	if seen := onlyDestroys(t, w.toolRuns()); !seen["apply app"] || !seen["destroy net"] {
		t.Errorf("want app's approved destroy plan applied and net destroyed; saw %v", seen)
	}
}

// Issue 22 item 17: a read-only `knit plan -f` of an edited file, between a
// gated apply and its approval, plans the waiting component from other
// inputs. Approving is then refused as stale, saying why; nothing runs and
// the environment stays as it was. Planned again, it is approved and applied.
func TestAPlanOfAnEditedFileMakesTheWaitingApprovalStale(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/file/main.tf": fileModule})
	env := func(app string) string {
		return fileEnv("", netComp, fileComp("app", app, "      autoApprove: false\n      dependsOn: [net]\n"))
	}
	w.writeFileEnv(env("v1"))
	w.ok("apply", "-f", "env.yaml", "--auto-approve")
	w.writeFileEnv(env("v2"))
	if r := w.knit("apply", "-f", "env.yaml"); r.code != 3 {
		t.Fatalf("gated apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	w.writeFileEnv(env("v3"))
	w.ok("plan", "-f", "env.yaml")

	r := w.knit("approve", "qa/gates", "app")
	if r.code == 0 || !strings.Contains(r.stderr, "stale") || !strings.Contains(r.stderr, "planned app from another spec") {
		t.Fatalf("approve after a plan of an edited file: exit %d, want non-zero and why it is stale\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var st struct {
		Status          string `json:"status"`
		AppliedRevision int    `json:"appliedRevision"`
	}
	if err := json.Unmarshal([]byte(w.ok("status", "qa/gates", "-o", "json").stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.Status != "awaiting-approval" || st.AppliedRevision != 2 || w.read("files/app.txt") != "v1" {
		t.Fatalf("the refused approval moved the environment: %+v, app.txt %q", st, w.read("files/app.txt"))
	}

	// Planned again (what ENV is applied at: v2), approved, applied.
	if r := w.knit("apply", "qa/gates"); r.code != 3 {
		t.Fatalf("re-plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	w.ok("approve", "qa/gates", "app")
	if got := w.read("files/app.txt"); got != "v2" {
		t.Fatalf("app.txt = %q after the fresh approval, want v2", got)
	}
}
