package e2e

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"knit.dev/knit/internal/ocisource/ocitest"
	"knit.dev/knit/internal/testtools"
	"knit.dev/knit/internal/testtools/ocireg"
)

// ociModule writes content into the file at var.path with the local provider.
func ociModule(content string) map[string]string {
	return map[string]string{"main.tf": fmt.Sprintf(`
variable "path" { type = string }
resource "local_file" "f" {
  filename = var.path
  content  = %q
}
output "content" { value = local_file.f.content }
`, content)}
}

// TestModuleFromOCIRegistry pulls module packages a publisher pushed with
// oras-go to Debian's docker-registry; only the hostile archive, which a
// real registry would not serve, comes from the in-house ocitest.
func TestModuleFromOCIRegistry(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	reg := ocireg.Start(t)
	reg.PushModule(t, "modules/file", "v1", ociModule("one"))
	env := func(name, source string) string {
		return envFile(name, fmt.Sprintf(`    - name: app
      type: terraform
      module: {source: %q}
      variables: [{name: path, value: %q}]
      outputs: [{name: content}]
`, source, w.path(name+".txt")))
	}
	addr := "oci://" + reg.Host + "/modules/file"

	// By tag: tofu applies the package's files from knit's private copy.
	w.writeEnv(env("oci", addr+"?tag=v1"))
	w.ok("apply", "-f", "env.yaml")
	if got := w.read("oci.txt"); got != "one" {
		t.Fatalf("file says %q, want the v1 package's", got)
	}

	// The tag moves to new content: the digest is in the fingerprint, so
	// the re-apply is not skipped as unchanged.
	d2 := reg.PushModule(t, "modules/file", "v1", ociModule("two"))
	w.ok("apply", "-f", "env.yaml")
	if got := w.read("oci.txt"); got != "two" {
		t.Fatalf("after retagging the file says %q, want the new package's", got)
	}

	// Pinned by digest: the same content, whatever the tag does next.
	reg.PushModule(t, "modules/file", "v1", ociModule("three"))
	w.writeEnv(env("pinned", addr+"?digest="+d2))
	w.ok("apply", "-f", "env.yaml")
	if got := w.read("pinned.txt"); got != "two" {
		t.Fatalf("pinned file says %q, want the digest's content", got)
	}

	// A tag that does not exist: the run fails naming the address, nothing applied.
	w.writeEnv(env("missing", addr+"?tag=v9"))
	r := w.knit("apply", "-f", "env.yaml")
	t.Logf("unknown tag:\n%s%s", r.stdout, r.stderr)
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, reg.Host+"/modules/file at v9") || !strings.Contains(r.stdout+r.stderr, "no such tag") {
		t.Fatalf("unknown tag: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(w.path("missing.txt")); err == nil {
		t.Fatal("an unknown tag applied something")
	}

	// A malformed digest: refused at the spec's file:line before any run.
	w.writeEnv(env("baddigest", addr+"?digest=sha256:abc"))
	r = w.knit("apply", "-f", "env.yaml")
	if r.code == 0 || !strings.Contains(r.stderr, "env.yaml:11:") || !strings.Contains(r.stderr, "64 lowercase hex") {
		t.Fatalf("bad digest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// A hostile archive: refused, nothing written outside the cache, nothing applied.
	hostile := ocitest.Start(t)
	hostile.Push(t, "modules/evil", "v1", "application/vnd.opentofu.modulepkg",
		ocitest.Zip(t, map[string]string{"../../../evil.tf": "x", "main.tf": ociModule("evil")["main.tf"]}))
	w.writeEnv(env("evil", "oci://"+hostile.Host+"/modules/evil?tag=v1"))
	r = w.knit("apply", "-f", "env.yaml")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "leaves the package") {
		t.Fatalf("hostile archive: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(w.path("evil.txt")); err == nil {
		t.Fatal("a hostile archive applied something")
	}
}

// TestModuleFromOCIRegistryWithLogin: a docker-registry behind htpasswd
// serves the package only with the credentials `docker login` stored
// (DOCKER_CONFIG), and the password lands in no file knit writes.
func TestModuleFromOCIRegistryWithLogin(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	reg := ocireg.Start(t, ocireg.Auth("robot"))
	reg.PushModule(t, "modules/net", "v1", ociModule("private"))
	w.writeEnv(envFile("login", fmt.Sprintf(`    - name: app
      type: terraform
      module: {source: %q}
      variables: [{name: path, value: %q}]
      outputs: [{name: content}]
`, "oci://"+reg.Host+"/modules/net?tag=v1", w.path("login.txt"))))

	// No credentials: the registry refuses, the run fails, nothing applied.
	r := w.knitWith([]string{"DOCKER_CONFIG=" + t.TempDir()}, "apply", "-f", "env.yaml")
	if r.code == 0 || !strings.Contains(r.stdout+r.stderr, reg.Host+"/modules/net at v1") {
		t.Fatalf("without credentials: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(w.path("login.txt")); err == nil {
		t.Fatal("applied without credentials")
	}

	r = w.knitWith([]string{"DOCKER_CONFIG=" + reg.DockerConfig(t)}, "apply", "-f", "env.yaml")
	if r.code != 0 {
		t.Fatalf("with docker credentials: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := w.read("login.txt"); got != "private" {
		t.Fatalf("file says %q, want the private package's", got)
	}
	if strings.Contains(r.stdout+r.stderr, reg.Password) {
		t.Fatal("the registry password is in knit's output")
	}
	w.ok("logs", "qa/login", "app")
	holding, read := testtools.FilesHolding(t, w.dataDir, reg.Password)
	if read < 5 || len(holding[reg.Password]) > 0 {
		t.Fatalf("password in %v (of %d files read)", holding[reg.Password], read)
	}
}
