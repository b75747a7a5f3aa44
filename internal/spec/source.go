package spec

import (
	"fmt"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	goversion "github.com/hashicorp/go-version"
)

// SourceKind says where a module's code comes from.
type SourceKind string

// Module source kinds.
const (
	SourceLocal    SourceKind = "local"
	SourceGit      SourceKind = "git"
	SourceRegistry SourceKind = "registry"
	// SourceOCI is a module package in an OCI registry (OpenTofu's
	// oci://host/repository?tag=|digest= address).
	SourceOCI SourceKind = "oci"
)

// Source is a resolved module source.
type Source struct {
	Kind SourceKind `json:"kind"`
	// Path is the absolute folder of a local module.
	Path string `json:"path,omitempty"`
	// URL is the clone URL of a git module (no ref, no subdir), the
	// registry address, or an OCI repository (host/repository, no scheme).
	URL string `json:"url,omitempty"`
	// Ref is the git ref (tag, branch, commit), registry version, or OCI
	// tag or digest (sha256:…); empty means default.
	Ref string `json:"ref,omitempty"`
	// Subdir is the module's folder inside the repository.
	Subdir string `json:"subdir,omitempty"`
}

// AWSModulesURL is where CloudKnit's `source: aws` + `name: X` shorthand points.
const awsModulesURL = "https://github.com/terraform-aws-modules/terraform-aws-%s.git"

// registryAddr is [HOST[:PORT]/]NAMESPACE/NAME/PROVIDER[//folder].
var registryAddr = regexp.MustCompile(`^(([A-Za-z0-9.-]+(:[0-9]+)?)/)?[A-Za-z0-9][A-Za-z0-9_-]*/[A-Za-z0-9][A-Za-z0-9_-]*/[a-z0-9]+(//.*)?$`)

// ModuleSource resolves a component's module block against the environment's folder.
func (e *Environment) ModuleSource(m *Module) (Source, error) {
	if m == nil || m.Source == "" {
		return Source{}, fmt.Errorf("module.source is not set")
	}
	if m.Source == "aws" {
		if m.Name == "" {
			return Source{}, fmt.Errorf(`source "aws" needs module.name (e.g. name: vpc)`)
		}
		s := Source{Kind: SourceGit, URL: fmt.Sprintf(awsModulesURL, m.Name), Subdir: m.Path}
		if m.Version != "" {
			s.Ref = m.Version
			if !strings.HasPrefix(s.Ref, "v") {
				s.Ref = "v" + s.Ref
			}
		}
		return s, nil
	}
	if IsLocalPath(m.Source) {
		dir, err := e.LocalPath(m.Source)
		if err != nil {
			return Source{}, err
		}
		if m.Path != "" {
			if dir, err = within(dir, m.Path); err != nil {
				return Source{}, err
			}
			if dir, err = e.LocalPath(dir); err != nil {
				return Source{}, err
			}
		}
		return Source{Kind: SourceLocal, Path: dir}, nil
	}
	if strings.HasPrefix(m.Source, ociScheme) {
		s, err := ParseOCIAddr(m.Source)
		if err != nil {
			return Source{}, err
		}
		if m.Path != "" {
			s.Subdir = path.Join(s.Subdir, m.Path)
		}
		if s.Ref == "" {
			s.Ref = m.Version
		}
		if s.Ref == "" {
			s.Ref = "latest" // as OpenTofu
		} else if !ociTag.MatchString(s.Ref) && !ociDigest.MatchString(s.Ref) {
			return Source{}, fmt.Errorf("module.version %q is not an OCI tag or sha256 digest", s.Ref)
		}
		return s, nil
	}
	if IsGitURL(m.Source) {
		s, err := ParseGitURL(m.Source)
		if err != nil {
			return Source{}, err
		}
		if m.Path != "" {
			s.Subdir = filepath.ToSlash(filepath.Join(s.Subdir, m.Path))
		}
		if s.Ref == "" {
			s.Ref = m.Version
		}
		return s, nil
	}
	if sm := registryAddr.FindStringSubmatch(m.Source); sm != nil && (sm[2] == "" || isRegistryHost(sm[2])) {
		addr, sub, _ := strings.Cut(m.Source, "//")
		if m.Path != "" {
			sub = path.Join(sub, m.Path)
		}
		return Source{Kind: SourceRegistry, URL: addr, Ref: m.Version, Subdir: sub}, nil
	}
	return Source{}, fmt.Errorf("cannot tell what kind of module source %q is", m.Source)
}

// isRegistryHost tells a registry host (a dotted name, a port, or
// localhost) from a namespace in the first of four parts.
func isRegistryHost(h string) bool {
	return strings.ContainsAny(h, ".:") || h == "localhost"
}

const ociScheme = "oci://"

var (
	ociTag    = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)
	ociDigest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// ociRepo is host[:port]/path in the OCI distribution grammar.
	ociRepo = regexp.MustCompile(`^[A-Za-z0-9.-]+(:[0-9]+)?(/[a-z0-9]+(([._]|__|-+)[a-z0-9]+)*)+$`)
)

// ParseOCIAddr splits OpenTofu's OCI module address
// oci://host/repository[//subdir][?tag=T|?digest=sha256:…] into the
// repository (host/repository), the tag or digest, and the folder inside
// the package.
func ParseOCIAddr(raw string) (Source, error) {
	s := strings.TrimPrefix(raw, ociScheme)
	var ref string
	if i := strings.Index(s, "?"); i >= 0 {
		q, err := url.ParseQuery(s[i+1:])
		if err != nil {
			return Source{}, fmt.Errorf("bad query in OCI source %q: %w", raw, err)
		}
		for k := range q {
			if k != "tag" && k != "digest" {
				return Source{}, fmt.Errorf("OCI source %q: unknown argument %q (use tag= or digest=)", raw, k)
			}
		}
		tag, dig := q.Get("tag"), q.Get("digest")
		switch {
		case tag != "" && dig != "":
			return Source{}, fmt.Errorf("OCI source %q names both a tag and a digest; keep one", raw)
		case dig != "" && !ociDigest.MatchString(dig):
			return Source{}, fmt.Errorf("OCI source %q: digest %q is not sha256: followed by 64 lowercase hex digits", raw, dig)
		case tag != "" && !ociTag.MatchString(tag):
			return Source{}, fmt.Errorf("OCI source %q: %q is not a valid OCI tag", raw, tag)
		}
		ref = tag + dig
		s = s[:i]
	}
	var subdir string
	if i := strings.Index(s, "//"); i >= 0 {
		s, subdir = s[:i], s[i+2:]
	}
	if !ociRepo.MatchString(s) {
		return Source{}, fmt.Errorf("OCI source %q: %q is not host/repository (lowercase repository path)", raw, s)
	}
	return Source{Kind: SourceOCI, URL: s, Ref: ref, Subdir: subdir}, nil
}

// IsLocalPath reports whether s is a filesystem path (./x, ../x, /x).
func IsLocalPath(s string) bool {
	return s == "." || s == ".." || strings.HasPrefix(s, "./") || strings.HasPrefix(s, "../") || strings.HasPrefix(s, "/")
}

// IsGitURL reports whether s names a git repository.
func IsGitURL(s string) bool {
	for _, p := range []string{"git::", "git@", "ssh://", "file://", "https://", "http://", "github.com/", "gitlab.com/"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// ParseGitURL splits a Terraform-style git source into clone URL, ?ref= and //subdir.
func ParseGitURL(raw string) (Source, error) {
	s := strings.TrimPrefix(raw, "git::")
	var ref string
	if i := strings.Index(s, "?"); i >= 0 {
		q, err := url.ParseQuery(s[i+1:])
		if err != nil {
			return Source{}, fmt.Errorf("bad query in git source %q: %w", raw, err)
		}
		ref = q.Get("ref")
		s = s[:i]
	}
	// A "//" after the scheme's separates the repository from a folder inside it.
	var subdir string
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + 3
	}
	if i := strings.Index(s[start:], "//"); i >= 0 {
		subdir = s[start+i+2:]
		s = s[:start+i]
	}
	if strings.HasPrefix(s, "github.com/") || strings.HasPrefix(s, "gitlab.com/") {
		s = "https://" + s
	}
	if s == "" {
		return Source{}, fmt.Errorf("empty git source")
	}
	return Source{Kind: SourceGit, URL: s, Ref: ref, Subdir: subdir}, nil
}

// LocalPath resolves p against the environment's folder and refuses a path
// that leaves its root, as written or through a symlink (see Contain).
func (e *Environment) LocalPath(p string) (string, error) {
	e.opts.noteRead(e.Dir, p)
	return Contain(e.RootDir(), e.Dir, p)
}

// RootDir is the folder no local path of e may leave: Root, or Dir.
func (e *Environment) RootDir() string {
	if e.Root != "" {
		return e.Root
	}
	return e.Dir
}

// within joins p to base and refuses a result that leaves base as written.
func within(base, p string) (string, error) {
	var full string
	if filepath.IsAbs(p) {
		full = filepath.Clean(p)
	} else {
		full = filepath.Join(base, p)
	}
	if !lexicallyInside(base, full) {
		return "", fmt.Errorf("path %q leaves the environment's folder", p)
	}
	return full, nil
}

// registryVersion checks a registry module's version constraint.
func (v *validator) registryVersion(p, constraint string) {
	if strings.TrimSpace(constraint) == "" {
		return
	}
	if _, err := goversion.NewConstraint(constraint); err != nil {
		v.err(p, "", fmt.Sprintf("%q is not a version constraint", constraint),
			`write a version (1.2.3) or a constraint such as "~> 1.1" or ">= 1.0, < 2.0"`)
	}
}
