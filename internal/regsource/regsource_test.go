package regsource_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/gitsource"
	"knit.dev/knit/internal/regsource"
	"knit.dev/knit/internal/regsource/regtest"
	"knit.dev/knit/internal/testtools"
)

func newCache(t *testing.T, creds regsource.Credentials) *regsource.Cache {
	dir := t.TempDir()
	git := gitsource.InDataDir(dir)
	if creds.Home == "" {
		creds.Home = t.TempDir()
	}
	return &regsource.Cache{Dir: filepath.Join(dir, "registry"), Git: git.Checkout, Credentials: creds}
}

func publish(t *testing.T, reg *regtest.Server) {
	for _, v := range []string{"1.0.0", "1.1.3", "2.0.0"} {
		reg.AddArchive(t, "acme/vpc/local", v, map[string]string{"main.tf": "# " + v + "\n", "modules/sub/x.tf": "# sub\n"})
	}
}

func TestPullChoosesTheHighestAllowedVersion(t *testing.T) {
	reg := regtest.Start(t)
	publish(t, reg)
	c := newCache(t, regsource.Credentials{})
	addr := reg.Host + "/acme/vpc/local"
	m, err := c.Pull(context.Background(), addr, "~> 1.1")
	if err != nil {
		t.Fatal(err)
	}
	if m.Version != "1.1.3" {
		t.Fatalf("version %s, want 1.1.3", m.Version)
	}
	if got, _ := os.ReadFile(filepath.Join(m.Dir, "main.tf")); string(got) != "# 1.1.3\n" {
		t.Fatalf("main.tf = %q: //* should be the archive's top folder", got)
	}
	if dir, fixed, ok := c.Fetched(addr, "~> 1.1"); !ok || fixed || dir != m.Dir {
		t.Fatalf("Fetched = %s %v %v", dir, fixed, ok)
	}
	if _, _, ok := c.Fetched(addr, "~> 2.0"); ok {
		t.Fatal("Fetched found a constraint never resolved")
	}
	if m2, err := c.Pull(context.Background(), addr, ""); err != nil || m2.Version != "2.0.0" {
		t.Fatalf("no constraint: %v %v", m2.Version, err)
	}
	_, err = c.Pull(context.Background(), addr, "~> 3.0")
	if !errors.Is(err, regsource.ErrNoVersion) || !strings.Contains(err.Error(), "available: 1.0.0, 1.1.3, 2.0.0") ||
		!strings.Contains(err.Error(), addr) {
		t.Fatalf("~> 3.0: %v", err)
	}
	if _, err := c.Pull(context.Background(), reg.Host+"/acme/nope/local", ""); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("unknown module: %v", err)
	}
}

func TestPullFromGitLocation(t *testing.T) {
	repo := t.TempDir()
	testtools.RunGit(t, repo, "init", "-q")
	testtools.WriteFiles(t, repo, map[string]string{"modules/net/main.tf": "# net\n", "README": "x"})
	testtools.RunGit(t, repo, "add", ".")
	testtools.RunGit(t, repo, "commit", "-qm", "one")
	testtools.RunGit(t, repo, "tag", "v1.2.0")
	reg := regtest.Start(t)
	reg.AddLocation("acme/net/local", "1.2.0", "git::file://"+repo+"//modules/net?ref=v1.2.0")
	c := newCache(t, regsource.Credentials{})
	m, err := c.Pull(context.Background(), reg.Host+"/acme/net/local", "1.2.0")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(m.Dir, "main.tf")); string(got) != "# net\n" || !strings.HasPrefix(m.ID, "git ") {
		t.Fatalf("main.tf %q, id %s", got, m.ID)
	}
	if _, fixed, ok := c.Fetched(reg.Host+"/acme/net/local", "1.2.0"); !ok || !fixed {
		t.Fatal("an exact version is not fixed")
	}
}

func TestPullWithToken(t *testing.T) {
	const token = "tok-3f1c9a-very-secret"
	reg := regtest.Start(t)
	publish(t, reg)
	reg.RequireToken(token)
	addr := reg.Host + "/acme/vpc/local"

	_, err := newCache(t, regsource.Credentials{}).Pull(context.Background(), addr, "~> 1.1")
	if err == nil || !strings.Contains(err.Error(), "no token for "+reg.Host) {
		t.Fatalf("without a token: %v", err)
	}
	cfg := filepath.Join(t.TempDir(), "tofurc")
	testtools.WriteFiles(t, filepath.Dir(cfg), map[string]string{"tofurc": `provider_installation {
  direct {}
}
credentials "` + reg.Host + `" {
  token = "` + token + `"
}
`})
	if _, err := newCache(t, regsource.Credentials{CLIConfig: cfg}).Pull(context.Background(), addr, "~> 1.1"); err != nil {
		t.Fatalf("with the CLI config's token: %v", err)
	}
	wrong := filepath.Join(t.TempDir(), "tofurc")
	testtools.WriteFiles(t, filepath.Dir(wrong), map[string]string{"tofurc": `credentials "` + reg.Host + `" { token = "wrong-` + token + `" }`})
	_, err = newCache(t, regsource.Credentials{CLIConfig: wrong}).Pull(context.Background(), addr, "~> 1.1")
	if err == nil || !strings.Contains(err.Error(), "was refused") || strings.Contains(err.Error(), token) {
		t.Fatalf("a wrong token: %v", err)
	}
	// Home's credentials.tfrc.json, as tofu login writes it.
	home := t.TempDir()
	testtools.WriteFiles(t, home, map[string]string{".terraform.d/credentials.tfrc.json": `{"credentials":{"` + reg.Host + `":{"token":"` + token + `"}}}`})
	if _, err := newCache(t, regsource.Credentials{Home: home}).Pull(context.Background(), addr, "~> 1.1"); err != nil {
		t.Fatalf("with tofu login's token: %v", err)
	}
}

// The token goes to the registry's host only, not to an archive it
// points at elsewhere.
func TestTokenStaysWithTheRegistry(t *testing.T) {
	const token = "tok-only-for-the-registry"
	var seen []string
	archive := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
		w.Write(regtest.TarGz(t, "", map[string]string{"main.tf": "# elsewhere\n"}))
	}))
	defer archive.Close()
	reg := regtest.Start(t)
	reg.RequireToken(token)
	reg.AddLocation("acme/far/local", "1.0.0", archive.URL+"/far.tar.gz")
	c := newCache(t, regsource.Credentials{CLIConfig: writeConfig(t, `credentials "`+reg.Host+`" { token = "`+token+`" }`)})
	m, err := c.Pull(context.Background(), reg.Host+"/acme/far/local", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(m.Dir, "main.tf")); string(got) != "# elsewhere\n" {
		t.Fatalf("main.tf %q", got)
	}
	if len(seen) != 1 || seen[0] != "" {
		t.Fatalf("the archive's host got Authorization %q", seen)
	}
}

func writeConfig(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "tofurc")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCredentialsFromEnv(t *testing.T) {
	c := regsource.Credentials{Env: []string{"TF_TOKEN_app_example-x_com=no", "TF_TOKEN_app_example__x_com=yes"}, Home: t.TempDir()}
	if tok, err := c.Token("app.example-x.com"); err != nil || tok != "yes" {
		t.Fatalf("token %q %v", tok, err)
	}
}

func TestPullRefusesHostileArchives(t *testing.T) {
	reg := regtest.Start(t)
	reg.AddArchive(t, "acme/evil/local", "1.0.0", map[string]string{"../../../escape.tf": "x"})
	c := newCache(t, regsource.Credentials{})
	_, err := c.Pull(context.Background(), reg.Host+"/acme/evil/local", "")
	if !errors.Is(err, regsource.ErrRefused) || !strings.Contains(err.Error(), "leaves the archive") {
		t.Fatalf("err = %v", err)
	}
	if mods, _ := os.ReadDir(filepath.Join(c.Dir, "modules")); len(mods) != 0 {
		t.Fatalf("left %v", mods)
	}
	// A symlink entry (to a file outside): refused before it is written.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "link.tf", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})
	tw.Close()
	zw.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(buf.Bytes()) }))
	defer srv.Close()
	reg.AddLocation("acme/link/local", "1.0.0", srv.URL+"/link.tar.gz")
	if _, err := c.Pull(context.Background(), reg.Host+"/acme/link/local", ""); !errors.Is(err, regsource.ErrRefused) || !strings.Contains(err.Error(), "not a plain file") {
		t.Fatalf("symlink: %v", err)
	}
}

func TestParseAddr(t *testing.T) {
	for in, want := range map[string]string{
		"terraform-aws-modules/vpc/aws":          regsource.DefaultHost + "/terraform-aws-modules/vpc/aws",
		"registry.localhost:8080/acme/vpc/local": "registry.localhost:8080/acme/vpc/local",
		"App.Terraform.io/org/name/aws":          "app.terraform.io/org/name/aws",
	} {
		a, err := regsource.ParseAddr(in)
		if err != nil || a.String() != want {
			t.Errorf("ParseAddr(%q) = %v %v, want %s", in, a, err, want)
		}
	}
	for _, in := range []string{"a/b", "nohost/a/b/c", "a/b/AWS", "x/a/b/c/d"} {
		if _, err := regsource.ParseAddr(in); err == nil {
			t.Errorf("ParseAddr(%q) accepted", in)
		}
	}
}
