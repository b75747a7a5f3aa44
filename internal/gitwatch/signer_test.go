package gitwatch_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/gitwatch"
	"knit.dev/knit/internal/testtools"
)

// sshKey makes an ed25519 key pair in dir and returns its private key's
// path and its public key ("ssh-ed25519 AAAA…").
func sshKey(t *testing.T, dir, name string) (string, string) {
	t.Helper()
	key := filepath.Join(dir, name)
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", key).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen: %v\n%s", err, out)
	}
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return key, strings.Join(strings.Fields(string(pub))[:2], " ")
}

// TestSignerIsOnlyATrustedKeysPrincipal: a commit signed by a key of the
// allowed signers file has that key's principal as Signer, whatever
// author it claims; one signed by another key, or not signed, has none;
// without an allowed signers file no commit has one.
func TestSignerIsOnlyATrustedKeysPrincipal(t *testing.T) {
	testtools.Git(t)
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Fatal("ssh-keygen is needed to sign commits")
	}
	keys := t.TempDir()
	bob, bobPub := sshKey(t, keys, "bob")
	eve, _ := sshKey(t, keys, "eve")
	allowed := filepath.Join(keys, "allowed_signers")
	if err := os.WriteFile(allowed, []byte("bob "+bobPub+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := newRemote(t, initialFiles)
	sign := func(key, msg string) string {
		testtools.WriteFiles(t, r.work, map[string]string{"envs/a.yaml": "name: " + msg + "\n"})
		testtools.RunGit(t, r.work, "add", "-A")
		testtools.RunGit(t, r.work, "-c", "gpg.format=ssh", "-c", "user.signingkey="+key, "commit", "-q", "-S",
			"--author=carol <carol@example.com>", "-m", msg)
		testtools.RunGit(t, r.work, "push", "-q", "-f", "origin", "HEAD:main")
		return testtools.RunGit(t, r.work, "rev-parse", "HEAD")
	}
	byBob, byEve, unsigned := sign(bob, "bob"), sign(eve, "eve"), r.commit("plain", map[string]string{"envs/a.yaml": "name: plain\n"})

	for _, tc := range []struct {
		allowed string
		want    map[string]string
	}{
		{allowed, map[string]string{byBob: "bob", byEve: "", unsigned: ""}},
		{"", map[string]string{byBob: "", byEve: "", unsigned: ""}},
	} {
		w := newWatcher(t, gitwatch.Config{URL: r.url, Path: "envs/", AllowedSigners: tc.allowed})
		poll(t, w, "")
		for hash, want := range tc.want {
			c, err := w.At(context.Background(), hash)
			if err != nil {
				t.Fatal(err)
			}
			if c.Signer != want {
				t.Errorf("allowed signers %q: commit %s has signer %q, want %q", tc.allowed, hash, c.Signer, want)
			}
			if c.Author != "carol" && hash != unsigned {
				t.Errorf("commit %s claims author %q, want carol", hash, c.Author)
			}
		}
	}
}
