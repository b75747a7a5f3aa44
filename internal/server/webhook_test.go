package server_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/controller"
	"knit.dev/knit/internal/controller/gitops"
	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/server"
)

// gitRepo is a real repository on disk that a test commits to.
type gitRepo struct {
	t   *testing.T
	dir string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed: make tools")
	}
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=carol", "GIT_AUTHOR_EMAIL=carol@example.com",
		"GIT_COMMITTER_NAME=carol", "GIT_COMMITTER_EMAIL=carol@example.com", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// commit writes a file and commits it, returning the commit hash.
func (r *gitRepo) commit(path, content, message string) string {
	r.t.Helper()
	full := filepath.Join(r.dir, path)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
	r.git("add", path)
	r.git("commit", "-q", "-m", message)
	return r.git("rev-parse", "HEAD")
}

// TestSignedWebhookFetchesAtOnce: with GitOps on and a poll interval no
// test waits for, a signed push notification makes the server fetch, and
// the new commit's environment is applied with the commit on its revision.
func TestSignedWebhookFetchesAtOnce(t *testing.T) {
	repo := newGitRepo(t)
	repo.commit("envs/one.yaml", envDoc("pay", "one", envOpts{}), "add one")
	h := newHarnessOn(t, server.Config{}, nil, controller.Config{Git: &gitops.Config{Poll: time.Hour, Config: gitwatch.Config{
		URL: "file://" + repo.dir, Branch: "main", Path: "envs/", CacheDir: t.TempDir()}}})
	viewer := h.token("watcher", "viewer")
	h.waitProvisioned("pay/one", viewer)

	hash := repo.commit("envs/two.yaml", envDoc("pay", "two", envOpts{}), "add two\n\nbody")
	body := `{"ref":"refs/heads/main","after":"` + hash + `"}`
	var out struct{ Status string }
	h.do(call{method: "POST", path: "/api/v1/webhooks/git", body: body, header: signed(webhookSecret, body)}, 202).decode(t, &out)
	if out.Status != "fetching" {
		t.Fatalf("webhook: %+v", out)
	}
	h.waitProvisioned("pay/two", viewer)
	var revs struct {
		Items []struct {
			Number                          int
			Commit, Author, Message, Source string
		}
	}
	h.do(call{method: "GET", path: "/api/v1/environments/pay/two/revisions", token: viewer}, 200).decode(t, &revs)
	if len(revs.Items) != 1 || revs.Items[0].Commit != hash || revs.Items[0].Author != "carol" ||
		!strings.HasPrefix(revs.Items[0].Message, "add two") || !strings.Contains(revs.Items[0].Source, hash) {
		t.Fatalf("revisions of pay/two: %+v", revs.Items)
	}
}

// waitProvisioned polls GET /environments/{id} until it is provisioned.
func (h *harness) waitProvisioned(id, token string) {
	h.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		var page struct{ Items []struct{ ID, Status string } }
		team, _, _ := strings.Cut(id, "/")
		h.do(call{method: "GET", path: "/api/v1/environments?team=" + team, token: token}, 200).decode(h.t, &page)
		for _, e := range page.Items {
			if e.ID == id && e.Status == "provisioned" {
				return
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("hang guard: %s is not provisioned: %+v", id, page.Items)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
