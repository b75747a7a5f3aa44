package terraform

import (
	"fmt"
	"path/filepath"
	"strings"

	"knit.dev/knit/internal/gitsource"
	"knit.dev/knit/internal/ocisource"
	"knit.dev/knit/internal/regsource"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// fetchers fetch a component's module, variables file and overlays.
//
// A sandboxed component (a preview of a branch nobody reviewed) runs with
// no power of the server's, and that includes fetching: its git, OCI and
// registry sources are fetched anonymously (no token, no docker login, no
// git configuration, credential helper or ssh key of the server's). A
// public module still works; one that needs the server's credentials
// fails, saying so. A registry module the server already fetched, for a
// run that could use them, at the same address and version (or the same
// constraint's last resolution) is reused; nothing else is (see
// regsource.Cache.Anonymous, gitsource's anonymous.go).
type fetchers struct {
	git *gitsource.Cache
	oci *ocisource.Cache
	reg *regsource.Cache
}

// anonymousFetchers are the anonymous versions of the runner's caches, on
// the same folders.
func anonymousFetchers(git *gitsource.Cache, oci *ocisource.Cache, reg *regsource.Cache) fetchers {
	g := &gitsource.Cache{Dir: git.Dir, Anonymous: true}
	rc := *reg
	rc.Anonymous, rc.Credentials, rc.Git = true, regsource.Credentials{}, g.Checkout
	return fetchers{git: g, oci: &ocisource.Cache{Dir: oci.Dir, Anonymous: true}, reg: &rc}
}

// sources are the runner's fetchers and their anonymous versions.
type sources struct{ server, anon fetchers }

// of are c's fetchers: anonymous for a component nobody reviewed.
func (s sources) of(c runner.Component) fetchers {
	if c.Sandbox != nil || c.Unreviewed {
		return s.anon
	}
	return s.server
}

// anonymousSource refuses, for a sandboxed component, a git module read
// from knit's data dir over file://: the caches there hold what the
// server fetched with its credentials.
func anonymousSource(dataDir string, c runner.Component, src spec.Source) error {
	if (c.Sandbox == nil && !c.Unreviewed) || src.Kind != spec.SourceGit || dataDir == "" {
		return nil
	}
	p, ok := strings.CutPrefix(src.URL, "file://")
	if !ok {
		if !filepath.IsAbs(src.URL) {
			return nil
		}
		p = src.URL
	}
	if _, err := resolve(dataDir, p); err == nil {
		return fmt.Errorf("module: %s is inside knit's data dir, whose caches hold what the server fetched with its credentials; a preview of an unreviewed branch may not read it", c.Def.Module.Source)
	}
	return nil
}
