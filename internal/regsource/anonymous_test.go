package regsource_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/gitsource"
	"knit.dev/knit/internal/regsource"
	"knit.dev/knit/internal/regsource/regtest"
	"knit.dev/knit/internal/testtools"
)

// An Anonymous pull (a preview's) sends no token, whatever the server
// holds (CLI config, TF_TOKEN_*): a registry that asks for one refuses it,
// saying why. What the server fetched with the token, at the same address
// and version or constraint, is reused; another version is not, nor the
// same module under another name of the registry's host. A public
// registry still works.
func TestAnonymousPullUsesNoToken(t *testing.T) {
	ctx := context.Background()
	const token = "tok-anon-7c1e9-secret"
	reg := regtest.Start(t)
	publish(t, reg)
	reg.RequireToken(token)
	addr := reg.Host + "/acme/vpc/local"
	cfg := filepath.Join(t.TempDir(), "tofurc")
	testtools.WriteFiles(t, filepath.Dir(cfg), map[string]string{"tofurc": `credentials "` + reg.Host + `" { token = "` + token + `" }`})
	dir := t.TempDir()
	git := gitsource.InDataDir(dir)
	cache := func(anonymous bool) *regsource.Cache {
		return &regsource.Cache{Dir: filepath.Join(dir, "registry"), Git: git.Checkout, Anonymous: anonymous,
			Credentials: regsource.Credentials{CLIConfig: cfg, Env: []string{"TF_TOKEN_registry_localhost=" + token}, Home: t.TempDir()}}
	}
	anon := cache(true)
	refused := func(what, addr, constraint string) {
		t.Helper()
		m, err := anon.Pull(ctx, addr, constraint)
		if !errors.Is(err, regsource.ErrNeedsCredentials) || m.Dir != "" ||
			!strings.Contains(err.Error(), "previews of unreviewed branches run without them") || strings.Contains(err.Error(), token) {
			t.Errorf("%s: %v (dir %q), want ErrNeedsCredentials", what, err, m.Dir)
		}
	}
	refused("before the server fetched it", addr, "~> 1.1")

	m, err := cache(false).Pull(ctx, addr, "~> 1.1")
	if err != nil || m.Version != "1.1.3" {
		t.Fatalf("the server's pull: %v %v", m.Version, err)
	}
	for _, c := range []string{"~> 1.1", "1.1.3", "= 1.1.3"} {
		if got, err := anon.Pull(ctx, addr, c); err != nil || got.Dir != m.Dir || got.Version != "1.1.3" {
			t.Errorf("%q after the server fetched 1.1.3: %+v %v", c, got, err)
		}
	}
	refused("another version", addr, "2.0.0")
	refused("another constraint", addr, "~> 2.0")
	_, port, _ := net.SplitHostPort(reg.Host)
	refused("another name of the host", "127.0.0.1:"+port+"/acme/vpc/local", "1.1.3")

	open := regtest.Start(t)
	publish(t, open)
	if got, err := anon.Pull(ctx, open.Host+"/acme/vpc/local", "~> 1.0"); err != nil || got.Version != "1.1.3" {
		t.Errorf("a public registry: %+v %v", got, err)
	}
}
