package tgimport

import (
	"net/url"
	"path"
	"path/filepath"
	"strings"

	"knit.dev/knit/internal/spec"
)

// module is knit's module block for u's terraform.source, or why there
// is none:
//   - git sources are kept as written, ?ref= and //subfolder included;
//   - tfr:// registry sources become the registry address and version;
//   - a local path (Terragrunt's FOLDER//SUBFOLDER copies FOLDER and
//     runs in SUBFOLDER) is made relative to the folder the environments
//     are written to;
//   - no source: the unit's own folder is the module, as in Terragrunt.
func (t *translation) module(u *Unit) (*spec.Module, string) {
	src := u.Source
	switch {
	case src == "":
		return t.localModule(path.Join(filepath.ToSlash(t.d.Root), u.Path), "")
	case strings.HasPrefix(src, "tfr://"):
		return registryModule(src)
	case spec.IsGitURL(src):
		return &spec.Module{Source: src}, ""
	case strings.Contains(src, "::") || strings.Contains(src, "://"):
		return nil, "knit takes git, registry, OCI and local module sources; fetch this one into the tree or a git repository"
	}
	folder, sub, _ := strings.Cut(filepath.ToSlash(src), "//")
	if !path.IsAbs(folder) {
		folder = path.Join(filepath.ToSlash(t.d.Root), u.Path, folder)
	}
	return t.localModule(path.Clean(folder), sub)
}

// localModule is a module in the folder abs (slash-separated), relative
// to where the environments are written.
func (t *translation) localModule(abs, sub string) (*spec.Module, string) {
	rel, err := filepath.Rel(t.o.Dir, filepath.FromSlash(abs))
	if err != nil {
		return nil, err.Error()
	}
	rel = filepath.ToSlash(rel)
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return nil, "the module folder " + t.shown(abs) + " is not inside the folder the environments are written to (" + t.o.Dir + "); knit reads no local module outside it: write them in a folder above it (--out)"
	}
	if rel != "." {
		rel = "./" + rel
	}
	return &spec.Module{Source: rel, Path: sub}, ""
}

// registryModule is tfr://[HOST]/NS/NAME/PROVIDER?version=V as knit's
// registry address and version.
func registryModule(src string) (*spec.Module, string) {
	u, err := url.Parse(src)
	if err != nil {
		return nil, "unreadable registry source: " + err.Error()
	}
	addr := strings.Trim(u.Path, "/")
	if u.Host != "" {
		addr = u.Host + "/" + addr
	}
	addr, sub, _ := strings.Cut(addr, "//")
	return &spec.Module{Source: addr, Version: u.Query().Get("version"), Path: sub}, ""
}

// shown is the folder abs (slash-separated) as a report shows it:
// relative to the tree's root when inside it.
func (t *translation) shown(abs string) string {
	root := filepath.ToSlash(t.d.Root)
	if r, ok := strings.CutPrefix(abs, root+"/"); ok {
		return r
	}
	return abs
}
