package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// commitAs writes files and commits them with git options opts (-c
// settings: a signing key) and commit arguments args (an --author), then
// pushes; it returns the hash.
func (r *gitRepo) commitAs(msg string, opts, args []string, files map[string]string) string {
	for name, content := range files {
		p := filepath.Join(r.work, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
		git(r.t, r.work, "add", name)
	}
	git(r.t, r.work, append(append(append([]string{}, opts...), "commit", "-q", "-m", msg), args...)...)
	git(r.t, r.work, "push", "-q", "origin", "main")
	return git(r.t, r.work, "rev-parse", "HEAD")
}

// trustedKey makes an SSH signing key for principal and writes the
// world's allowed_signers file trusting it (only it); it returns the
// private key's path.
func (w *world) trustedKey(principal string) string {
	w.t.Helper()
	key := w.path(principal + ".key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", principal, "-f", key).CombinedOutput(); err != nil {
		w.t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		w.t.Fatal(err)
	}
	w.write(map[string]string{"allowed_signers": principal + " " + strings.Join(strings.Fields(string(pub))[:2], " ") + "\n"})
	return key
}

// TestTheTwoPersonRuleTrustsOnlySignedAuthors: shop/prod requires another
// approver. A commit that claims bob as its author but is not signed does
// not let bob's token approve it alone (the server records his approval
// and applies nothing), nor alice's: a second distinct token's approval
// applies it. A commit signed with bob's SSH key, trusted by the server's
// allowed signers file, is bob's whatever author it claims: bob may not
// approve it, alice alone may.
func TestTheTwoPersonRuleTrustsOnlySignedAuthors(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	files := w.path("files")
	key := w.trustedKey("bob")
	prod := func(v string) string {
		return gitEnv("prod", files, v, "  approval: {requireOtherApprover: true}\n", true)
	}
	repo := newGitRepo(t, map[string]string{"envs/modules/file/main.tf": fileModule})
	s := w.startServer(gitServerArgs(repo, "--git-allowed-signers", w.path("allowed_signers"))...)
	as := func(name string) []string {
		tok := strings.TrimSpace(w.ok("token", "create", name, "--role", "operator", "--team", "shop").stdout)
		return []string{"KNIT_SERVER=" + s.url, "KNIT_TOKEN=" + tok}
	}
	alice, bob := as("alice"), as("bob")
	webAwaits := func() bool {
		e, _ := s.env("shop/prod")
		for _, c := range e.Components {
			if c.Name == "web" && c.Status == "awaiting-approval" {
				return true
			}
		}
		return false
	}

	// Unsigned, authored as bob: bob alone is not enough, nor bob twice; alice then applies it.
	repo.commitAs("prod v1", nil, []string{"--author", "bob <bob@example.com>"}, map[string]string{"envs/prod.yaml": prod("v1")})
	s.eventually("web awaits approval of v1", webAwaits)
	for range 2 {
		r := w.knitWith(bob, "approve", "shop/prod", "web", "--reason", "mine")
		if r.code != 1 || !strings.Contains(r.stderr, "two distinct tokens") {
			t.Fatalf("bob approving the unsigned commit claiming him: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	if w.exists("files/prod-web.txt") {
		t.Fatal("one approver applied web")
	}
	if r := w.knitWith(alice, "approve", "shop/prod", "web", "--reason", "reviewed"); r.code != 0 {
		t.Fatalf("alice, the second approver: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.eventually("web applied at v1", func() bool { return w.exists("files/prod-web.txt") && w.read("files/prod-web.txt") == "v1" })

	// Signed by bob's trusted key, claiming carol: bob is refused, alice alone applies it.
	repo.commitAs("prod v2", []string{"-c", "gpg.format=ssh", "-c", "user.signingkey=" + key}, []string{"-S", "--author", "carol <carol@example.com>"},
		map[string]string{"envs/prod.yaml": prod("v2")})
	s.eventually("web awaits approval of v2", webAwaits)
	var runs struct {
		Items []struct{ Actor, Source string }
	}
	s.do("GET", "/api/v1/environments/shop/prod/runs", nil, &runs)
	if len(runs.Items) == 0 || runs.Items[0].Actor != "bob" || runs.Items[0].Source != "git-signed" {
		t.Fatalf("the signed commit's run: %+v, want actor bob, source git-signed", runs.Items)
	}
	if r := w.knitWith(bob, "approve", "shop/prod", "web"); r.code != 1 || !strings.Contains(r.stderr, "requires another approver") {
		t.Fatalf("bob approving his signed commit: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.knitWith(alice, "approve", "shop/prod", "web", "--reason", "reviewed"); r.code != 0 {
		t.Fatalf("alice alone approving bob's signed commit: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	s.eventually("web applied at v2", func() bool { return w.read("files/prod-web.txt") == "v2" })
}
