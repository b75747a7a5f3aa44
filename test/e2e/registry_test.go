package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/regsource/regtest"
	"knit.dev/knit/internal/testtools"
)

// registryEnv is an environment whose one component takes module addr at
// version and writes its content into name.txt.
func registryEnv(w *world, name, addr, version, extra string) string {
	return envFile(name, fmt.Sprintf(`    - name: app
      type: terraform
      module: {source: %q, version: %q}
      variables:
        - {name: path, value: %q}%s
      outputs: [{name: content}]
`, addr, version, w.path(name+".txt"), extra))
}

func publishVPC(t *testing.T, reg *regtest.Server) string {
	for _, v := range []string{"1.0.0", "1.1.3", "2.0.0"} {
		reg.AddArchive(t, "acme/vpc/local", v, ociModule("vpc "+v))
	}
	return reg.Host + "/acme/vpc/local"
}

// TestModuleFromRegistry: a registry module (service discovery, versions,
// download of a .tar.gz) applies at the highest version its constraint
// allows, the plan says which, validation reads the fetched module, and a
// constraint nothing satisfies fails naming the versions there are.
func TestModuleFromRegistry(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	reg := regtest.Start(t)
	addr := publishVPC(t, reg)

	w.writeEnv(registryEnv(w, "vpc", addr, "~> 1.1", ""))
	r := w.ok("plan", "-f", "env.yaml")
	t.Logf("plan:\n%s", r.stdout)
	if !strings.Contains(r.stdout, "module "+addr+" 1.1.3") {
		t.Fatalf("the plan does not name the version:\n%s", r.stdout)
	}
	w.ok("apply", "-f", "env.yaml")
	if got := w.read("vpc.txt"); got != "vpc 1.1.3" {
		t.Fatalf("applied %q, want version 1.1.3's module", got)
	}
	if r := w.ok("apply", "-f", "env.yaml"); !strings.Contains(r.stdout, "up to date") {
		t.Fatalf("an unchanged registry module was not skipped:\n%s", r.stdout)
	}

	// Another constraint resolves elsewhere: the fingerprint changes.
	w.writeEnv(registryEnv(w, "vpc", addr, ">= 2.0", ""))
	w.ok("apply", "-f", "env.yaml")
	if got := w.read("vpc.txt"); got != "vpc 2.0.0" {
		t.Fatalf("applied %q, want version 2.0.0's module", got)
	}

	// validate checks inputs against the module as last fetched.
	w.writeEnv(registryEnv(w, "vpc", addr, ">= 2.0", "\n        - {name: cidr, value: 10.0.0.0/16}"))
	r = w.knit("validate", "-f", "env.yaml")
	if !strings.Contains(r.stdout+r.stderr, "cidr: the module declares no such variable") {
		t.Fatalf("validate did not read the registry module: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// Nothing satisfies ~> 3.0: the run fails naming what there is, nothing applied.
	w.writeEnv(registryEnv(w, "none", addr, "~> 3.0", ""))
	r = w.knit("apply", "-f", "env.yaml")
	t.Logf("~> 3.0:\n%s%s", r.stdout, r.stderr)
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "available: 1.0.0, 1.1.3, 2.0.0") {
		t.Fatalf("~> 3.0: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(w.path("none.txt")); err == nil {
		t.Fatal("an unsatisfiable constraint applied something")
	}

	// A version whose download is a git source (git::file://…?ref=).
	repo := t.TempDir()
	testtools.RunGit(t, repo, "init", "-q")
	testtools.WriteFiles(t, repo, ociModule("from git"))
	testtools.RunGit(t, repo, "add", ".")
	testtools.RunGit(t, repo, "commit", "-qm", "one")
	testtools.RunGit(t, repo, "tag", "v0.3.0")
	reg.AddLocation("acme/gitvpc/local", "0.3.0", "git::file://"+repo+"?ref=v0.3.0")
	w.writeEnv(registryEnv(w, "gitvpc", reg.Host+"/acme/gitvpc/local", "0.3.0", ""))
	w.ok("apply", "-f", "env.yaml")
	if got := w.read("gitvpc.txt"); got != "from git" {
		t.Fatalf("applied %q, want the git download's module", got)
	}
}

// TestModuleFromRegistryWithToken: a registry that wants a token gets it
// from the CLI config knit hands the tool, and the token is in no output,
// log, event or file knit writes.
func TestModuleFromRegistryWithToken(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	reg := regtest.Start(t)
	addr := publishVPC(t, reg)
	token := "tok-" + testtools.RandomHex(t)
	reg.RequireToken(token)
	w.writeEnv(registryEnv(w, "private", addr, "~> 1.1", ""))

	r := w.knit("apply", "-f", "env.yaml")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "no token for "+reg.Host) {
		t.Fatalf("without a token: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	mirror, err := os.ReadFile(filepath.Join(filepath.Dir(filepath.Dir(tofuBin)), "tofurc"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "tofurc")
	body := string(mirror) + fmt.Sprintf("\ncredentials %q {\n  token = %q\n}\n", reg.Host, token)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	withToken := []string{"KNIT_TF_CLI_CONFIG=" + cfg}
	r = w.knitWith(withToken, "apply", "-f", "env.yaml")
	if r.code != 0 {
		t.Fatalf("with the CLI config's token: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := w.read("private.txt"); got != "vpc 1.1.3" {
		t.Fatalf("applied %q", got)
	}
	out := r.stdout + r.stderr
	for _, args := range [][]string{{"logs", "qa/private", "app"}, {"history", "qa/private", "-o", "json"}, {"audit", "-o", "json"}} {
		res := w.knitWith(withToken, args...)
		out += res.stdout + res.stderr
	}
	if strings.Contains(out, token) {
		t.Fatal("the registry token is in knit's output, logs or events")
	}
	holding, read := testtools.FilesHolding(t, w.dir, token)
	if read < 5 || len(holding[token]) > 0 {
		t.Fatalf("token in %v (of %d files read)", holding[token], read)
	}
}
