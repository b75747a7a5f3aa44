package gitsource_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/gitsource"
	"knit.dev/knit/internal/testtools"
)

// privateURL makes url name r only through the server's own git
// configuration (~/.gitconfig's url.insteadOf, where a credential helper
// would live too): the server reaches it, nobody else does.
func privateURL(t *testing.T, r *repo) string {
	t.Helper()
	home := t.TempDir()
	testtools.WriteFiles(t, home, map[string]string{".gitconfig": "[url \"" + r.url + "\"]\n\tinsteadOf = https://git.private.invalid/mod.git\n"})
	t.Setenv("HOME", home)
	return "https://git.private.invalid/mod.git"
}

// An anonymous cache fetches a public repository, but not one the
// server's configuration or keys reach: not through ~/.gitconfig, not over
// ssh, and not from the mirror the server fetched with them (even by a
// full commit it holds).
func TestAnonymousCheckoutUsesNothingOfTheServers(t *testing.T) {
	ctx := context.Background()
	r := newRepo(t)
	url := privateURL(t, r)
	dir := t.TempDir()
	server := &gitsource.Cache{Dir: dir}
	anon := &gitsource.Cache{Dir: dir, Anonymous: true}

	got, commit, err := server.Checkout(ctx, url, "v1")
	if err != nil || commit != r.c1 || readFile(t, filepath.Join(got, "version.txt")) != "1" {
		t.Fatalf("the server's checkout: %v %s", err, commit)
	}
	for _, ref := range []string{"v1", r.c1, r.c2} {
		if _, _, err := anon.Checkout(ctx, url, ref); !errors.Is(err, gitsource.ErrNeedsCredentials) {
			t.Errorf("anonymous checkout of the private URL at %s: %v, want ErrNeedsCredentials", ref, err)
		}
	}
	for _, u := range []string{"git@github.com:acme/private.git", "ssh://git@example.invalid/acme/private.git", "ext::sh -c touch% /tmp/pwned"} {
		_, _, err := anon.Checkout(ctx, u, "v1")
		if !errors.Is(err, gitsource.ErrNeedsCredentials) || !strings.Contains(err.Error(), "ssh") {
			t.Errorf("anonymous checkout of %s: %v", u, err)
		}
	}
	// A public repository (here: a path anyone may read) still works.
	got, commit, err = anon.Checkout(ctx, r.url, "v1")
	if err != nil || commit != r.c1 || readFile(t, filepath.Join(got, "version.txt")) != "1" {
		t.Fatalf("anonymous checkout of a public repository: %v %s", err, commit)
	}
	if _, err := os.Stat(filepath.Join(dir, "mirrors-anonymous")); err != nil {
		t.Errorf("the anonymous fetch did not use mirrors of its own: %v", err)
	}
}
