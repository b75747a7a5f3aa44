package gitwatch

import (
	"context"
	"knit.dev/knit/internal/testtools"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFetchKeepsTheTokenOutOfArgv(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte("tok3n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := readToken(p)
	if err != nil {
		t.Fatal(err)
	}
	args := fetchArgs("https://example.com/r.git", "main")
	if want := []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--", "https://example.com/r.git", "+refs/heads/main:refs/heads/main"}; !slices.Equal(args, want) {
		t.Errorf("fetchArgs = %q, want %q", args, want)
	}
	env := strings.Join(tok.env(), "\n")
	if !strings.Contains(env, "GIT_CONFIG_KEY_0=http.extraHeader") ||
		!strings.Contains(env, "GIT_CONFIG_VALUE_0=Authorization: Basic eC1hY2Nlc3MtdG9rZW46dG9rM24=") {
		t.Errorf("token env = %q", env)
	}
	for _, s := range tok.secrets {
		if strings.Contains(strings.Join(args, " "), s) {
			t.Errorf("argv holds a secret: %q", args)
		}
	}
}

func TestBaseEnv(t *testing.T) {
	t.Parallel()
	env := baseEnv([]string{
		"PATH=/bin", "HOME=/h", "GIT_DIR=/elsewhere", "GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=x",
		"GIT_SSH_COMMAND=ssh -v", "GIT_TERMINAL_PROMPT=1", "KNIT_TOKEN=k", "SECRET=s",
	}, "ssh -i 'k'")
	// exec keeps the last value of a repeated name.
	last := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		last[k] = v
	}
	want := map[string]string{
		"PATH": "/bin", "HOME": "/h", "GIT_TERMINAL_PROMPT": "0", "GIT_SSH_COMMAND": "ssh -i 'k'",
		"GIT_LITERAL_PATHSPECS": "1", "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C",
	}
	for k, v := range want {
		if last[k] != v {
			t.Errorf("%s = %q, want %q", k, last[k], v)
		}
	}
	for _, k := range []string{"GIT_DIR", "GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "KNIT_TOKEN", "SECRET"} {
		if _, ok := last[k]; ok {
			t.Errorf("%s passed to git", k)
		}
	}
}

// TestSSHKeyReachesSSH runs a fetch of an ssh URL with a fake ssh first on
// PATH, which records its arguments and fails.
func TestSSHKeyReachesSSH(t *testing.T) {
	testtools.Git(t) // fails under CI when git is missing; locally skips naming the package
	bin := t.TempDir()
	record := filepath.Join(bin, "args")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + record + "\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	key := filepath.Join(t.TempDir(), "it's a key")
	if err := os.WriteFile(key, []byte("not really"), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := New(Config{URL: "ssh://git@example.invalid/r.git", SSHKeyFile: key, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Poll(context.Background(), ""); err == nil {
		t.Fatal("fetch through a failing ssh succeeded")
	}
	b, err := os.ReadFile(record)
	if err != nil {
		t.Fatalf("ssh was not run: %v", err)
	}
	// One argument a line; each option must be followed by its value.
	args := "\n" + string(b)
	for _, want := range []string{
		"-i\n" + key, "-o\nIdentitiesOnly=yes", "-o\nStrictHostKeyChecking=accept-new", "-o\nBatchMode=yes",
	} {
		if !strings.Contains(args, "\n"+want+"\n") {
			t.Errorf("ssh args %q lack %q", args, want)
		}
	}
}

func TestValidBranchAndCleanPath(t *testing.T) {
	t.Parallel()
	for b, ok := range map[string]bool{
		"main": true, "release/1.2": true, "feat-x": true,
		"": false, "-x": false, "a b": false, "a..b": false, "a:b": false, "a~1": false, "x.lock": false, "a/": false,
	} {
		if validBranch(b) != ok {
			t.Errorf("validBranch(%q) = %v, want %v", b, !ok, ok)
		}
	}
	for in, want := range map[string]string{"": "", "/": "", "envs/": "envs", "./envs": "envs", "/envs/prod/": "envs/prod"} {
		if got, err := cleanPath(in); err != nil || got != want {
			t.Errorf("cleanPath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := cleanPath("envs/../../x"); err == nil {
		t.Error("cleanPath accepted a path leaving the repository")
	}
}

func TestParseLog(t *testing.T) {
	t.Parallel()
	out := "aaa\x00p1 p2\x00Ada\x00ada@x\x002026-01-02T03:04:05+02:00\x00G\x00ada\x00subject\n\nbody\n\x00" +
		"bbb\x00aaa\x00Bob\x00bob@x\x002026-01-03T00:00:00Z\x00U\x00bob\x00second\n\x00"
	infos, err := parseLog([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 || infos[0].firstParent() != "p1" || infos[0].message != "subject\n\nbody" ||
		infos[1].hash != "bbb" || infos[1].author != "Bob" || infos[0].time.Hour() != 3 ||
		infos[0].signer != "ada" || infos[1].signer != "" { // only a good signature (G) names its signer
		t.Errorf("parseLog = %+v", infos)
	}
	if _, err := parseLog([]byte("a\x00b\x00")); err == nil {
		t.Error("parseLog accepted a short record")
	}
}
