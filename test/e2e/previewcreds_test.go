package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/regsource/regtest"
	"knit.dev/knit/internal/testtools"
)

// TestAPreviewFetchesModulesWithNoCredentials: the server holds a
// registry token (a credentials block in its CLI config) and reaches a
// private git repository through its own git configuration; a branch
// nobody reviewed is previewed with none of that:
//   - the watched branch applies the private registry module (~> 1.1:
//     1.1.3, with the token);
//   - a branch asking for 2.0.0 of it is refused, saying why, and 2.0.0's
//     content never reaches the server;
//   - the same module under another name of the registry's host
//     (127.0.0.1 for registry.localhost) is refused too;
//   - a public registry whose download is the private git repository (a
//     redirect from public to private) is refused;
//   - a branch keeping ~> 1.1 is previewed with the copy the server
//     fetched for the watched branch;
//   - the preview's tofu gets a CLI config without the credentials block.
func TestAPreviewFetchesModulesWithNoCredentials(t *testing.T) {
	w := newWorld(t)
	w.sandboxReachable()
	marks := marksDir(t)
	hook := newHookReceiver(t)
	reg := regtest.Start(t)
	addr := publishVPC(t, reg)
	token := "tok-" + testtools.RandomHex(t)
	reg.RequireToken(token)
	mirror, err := os.ReadFile(filepath.Join(repo, ".tools", "tofurc"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "tofurc")
	if err := os.WriteFile(cfg, []byte(string(mirror)+fmt.Sprintf("\ncredentials %q {\n  token = %q\n}\n", reg.Host, token)), 0o600); err != nil {
		t.Fatal(err)
	}
	// A private git repository the server reaches only through its own
	// ~/.gitconfig (where a credential helper would live), and a public
	// registry whose download points at it.
	private := newGitRepo(t, map[string]string{"main.tf": ociModule("private git")["main.tf"]})
	git(t, private.work, "tag", "v1")
	git(t, private.work, "push", "-q", "origin", "v1")
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[url \"file://"+private.bare+"\"]\n\tinsteadOf = https://git.private.invalid/mod.git\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	public := regtest.Start(t)
	public.AddLocation("acme/redirect/local", "1.0.0", "git::https://git.private.invalid/mod.git?ref=v1")
	w.env = append(w.env, "KNIT_TF_CLI_CONFIG="+cfg, "HOME="+home)

	env := func(source, version, file string) string {
		return envFile("private", fmt.Sprintf(`    - name: app
      type: terraform
      module: {source: %q, version: %q}
      variables:
        - {name: path, value: %q}
      outputs: [{name: content}]
`, source, version, w.path(file)))
	}
	repo := newGitRepo(t, map[string]string{"envs/private.yaml": env(addr, "~> 1.1", "private.txt")})
	first := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(gitServerArgs(repo, "--preview-branches", "feature/*", "--preview-dir", filepath.Join(marks, "sandbox"),
		"--config", w.notifyConfig("notify.yaml", hook.url))...)
	s.eventually("qa/private applied from the first commit", func() bool { return s.appliedFrom("qa/private", first) })
	if got := w.read("private.txt"); got != "vpc 1.1.3" {
		t.Fatalf("the watched branch applied %q, want vpc 1.1.3", got)
	}

	preview := func(branch, yaml string) (apiPreview, string) {
		t.Helper()
		head := repo.pushBranch(branch, map[string]string{"envs/private.yaml": yaml})
		md := s.previewMarkdown(hook, head)
		ps, _ := s.previews(branch, "")
		for _, p := range ps {
			if p.Env == "qa/private" && p.Commit == head {
				return p, md
			}
		}
		t.Fatalf("no preview of qa/private at %s: %+v", head, ps)
		return apiPreview{}, ""
	}
	const why = "needs the server's registry credentials; previews of unreviewed branches run without them"
	for _, c := range []struct{ branch, source, version, want string }{
		{"feature/newer", addr, "2.0.0", why},
		{"feature/alias", strings.Replace(addr, "registry.localhost", "127.0.0.1", 1), "1.1.3", why},
		{"feature/redirect", public.Host + "/acme/redirect/local", "1.0.0", "without the server's git credentials"},
	} {
		p, md := preview(c.branch, env(c.source, c.version, "private.txt"))
		var raw json.RawMessage
		s.do("GET", "/api/v1/previews?branch="+c.branch, nil, &raw)
		t.Logf("%s: %s", c.branch, p.Error)
		if p.Status != "failed" || !strings.Contains(p.Error, c.want) || !strings.Contains(md, c.want) || !strings.Contains(string(raw), c.want) {
			t.Errorf("%s: preview %s, want failed saying %q:\n%s\n%s", c.branch, p.Status, c.want, raw, md)
		}
	}
	// The branch kept ~> 1.1: the copy the watched branch fetched serves.
	if p, md := preview("feature/same", env(addr, "~> 1.1", "private2.txt")); p.Status != "planned" {
		t.Errorf("feature/same: preview %s, want planned with the watched branch's 1.1.3:\n%+v\n%s", p.Status, p, md)
	}
	holding, _ := testtools.FilesHolding(t, w.dir, "vpc 2.0.0", "private git", token)
	for _, s := range []string{"vpc 2.0.0", "private git", token} {
		if len(holding[s]) > 0 {
			t.Errorf("%q reached the server: %v", s, holding[s])
		}
	}
	if strings.Contains(s.logText(), token) {
		t.Error("the token is in the server's log")
	}
}
