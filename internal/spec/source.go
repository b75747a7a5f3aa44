package spec

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
)

// SourceKind says where a module's code comes from.
type SourceKind string

// Module source kinds.
const (
	SourceLocal    SourceKind = "local"
	SourceGit      SourceKind = "git"
	SourceRegistry SourceKind = "registry"
)

// Source is a resolved module source.
type Source struct {
	Kind SourceKind `json:"kind"`
	// Path is the absolute folder of a local module.
	Path string `json:"path,omitempty"`
	// URL is the clone URL of a git module (no ref, no subdir), or the registry address.
	URL string `json:"url,omitempty"`
	// Ref is the git ref (tag, branch, commit) or registry version; empty means default.
	Ref string `json:"ref,omitempty"`
	// Subdir is the module's folder inside the repository.
	Subdir string `json:"subdir,omitempty"`
}

// AWSModulesURL is where CloudKnit's `source: aws` + `name: X` shorthand points.
const awsModulesURL = "https://github.com/terraform-aws-modules/terraform-aws-%s.git"

var registryAddr = regexp.MustCompile(`^([a-z0-9.-]+/)?[A-Za-z0-9_-]+/[A-Za-z0-9_-]+/[a-z0-9]+$`)

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
	if registryAddr.MatchString(m.Source) {
		return Source{Kind: SourceRegistry, URL: m.Source, Ref: m.Version, Subdir: m.Path}, nil
	}
	return Source{}, fmt.Errorf("cannot tell what kind of module source %q is", m.Source)
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
