// Package regsource fetches modules from a module registry (the Terraform /
// OpenTofu module registry protocol) into a local cache, so a terraform
// component's module can be `NAMESPACE/NAME/PROVIDER` or
// `HOST/NAMESPACE/NAME/PROVIDER` with a version constraint and still be
// copied into the component's private work dir like a local, git or OCI
// module.
//
// knit speaks the protocol itself rather than leaving it to OpenTofu: the
// version is chosen before the tool runs, so it is in the fingerprint (an
// unchanged component is skipped without the tool), in the plan and in
// validation, and the module's files are knit's private copy as for every
// other source. OpenTofu would also only discover registries over HTTPS.
//
// Resolution: service discovery (https://HOST/.well-known/terraform.json,
// "modules.v1"), the versions list (…/NS/NAME/PROVIDER/versions), the
// highest version the constraint allows, its download location
// (…/VERSION/download: X-Terraform-Get, or a JSON "location"), then that
// location: a git source (`git::URL?ref=R`, fetched through Cache.Git) or an
// HTTP(S) .tar.gz / ?archive=tar.gz archive, either with a //folder suffix
// (`//*`: the archive's one top folder), as go-getter reads them. The
// archive is checked before a file is written (no path that leaves it, no
// links or devices, bounded size and count).
//
// Plain HTTP is used only for a registry or archive on this machine
// (localhost, *.localhost, loopback addresses; *.localhost names dial
// 127.0.0.1, RFC 6761); anything else speaks HTTPS. The token (see
// Credentials) goes to the registry's host only, and stays in this process.
//
// Layout under Cache.Dir:
//
//	modules/<id>                  the files of one download, written once, then only read
//	versions/<hash of addr@ver>   which download a registry version resolved to
//	resolved/<hash of addr+constraint>  the version a constraint last chose (for validation)
//	tmp/                          downloads in progress
package regsource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DefaultHost is the registry of an address without a host, as OpenTofu's.
const DefaultHost = "registry.opentofu.org"

// ErrNoVersion marks a constraint no published version satisfies; the
// message lists the versions there are.
var ErrNoVersion = errors.New("no version matches")

// ErrNeedsCredentials marks a registry that refused an Anonymous cache:
// the module needs credentials the run may not use.
var ErrNeedsCredentials = errors.New("needs the server's registry credentials; previews of unreviewed branches run without them: merge the branch, or ask an admin")

// Cache keeps downloaded registry modules under Dir. Set Dir, Git (for
// modules whose download is a git source) and Credentials; a finished
// module folder is never modified, so several runs and processes may share
// one Dir.
type Cache struct {
	Dir string
	// Git fetches url at ref (a git source a registry's download points
	// at) and returns its folder and commit; nil: such modules fail.
	Git func(ctx context.Context, url, ref string) (dir, commit string, err error)
	// Credentials find the registry's token.
	Credentials Credentials
	// Anonymous is for a run that may not use the server's credentials (a
	// preview of a branch nobody reviewed): no token is read or sent, and
	// a registry that refuses fails with ErrNeedsCredentials, unless the
	// cache already holds what was asked (see reviewed). Set Git to a
	// fetcher that is anonymous too.
	Anonymous bool
	// Limits of an archive download; zero means the Default.
	MaxArchive, MaxUnpacked int64
	MaxFiles                int
}

// Limits a download must stay within unless the Cache sets its own.
const (
	DefaultMaxArchive  = 64 << 20
	DefaultMaxUnpacked = 256 << 20
	DefaultMaxFiles    = 10000
)

// InDataDir returns the cache knit keeps in its data dir.
func InDataDir(dataDir string) *Cache { return &Cache{Dir: filepath.Join(dataDir, "registry")} }

// Module is a resolved registry module.
type Module struct {
	// Dir holds the module package's files (the download's folder); it
	// must not be modified.
	Dir string
	// Version is the version the constraint chose.
	Version string
	// ID names the content: the git commit or the archive's SHA-256, with
	// where it came from.
	ID string
}

// Pull resolves addr (NS/NAME/PROVIDER or HOST/NS/NAME/PROVIDER) at the
// highest version constraint allows ("" allows any release), downloads it
// unless that version is in the cache, and records the choice for Fetched.
// A constraint nothing satisfies fails with ErrNoVersion naming the
// versions there are.
func (c *Cache) Pull(ctx context.Context, addr, constraint string) (m Module, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("registry module %s%s: %w", addr, shownConstraint(constraint), err)
		}
	}()
	a, err := ParseAddr(addr)
	if err != nil {
		return Module{}, err
	}
	m, err = c.pull(ctx, a, addr, constraint)
	if c.Anonymous && errors.Is(err, ErrNeedsCredentials) {
		if known, ok := c.reviewed(a, addr, constraint); ok {
			return known, nil
		}
	}
	return m, err
}

// reviewed is what the cache holds for addr at constraint, for an
// Anonymous pull the registry refused: the exact version when constraint
// names one, else the version the same constraint last resolved to. What
// the cache holds was fetched by a run that could use the credentials, or
// needed none; another version, or the same module under another host
// name, is not there.
func (c *Cache) reviewed(a Addr, addr, constraint string) (Module, bool) {
	if exactVersion(constraint) {
		if m, ok := c.known(a, strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(constraint), "="))); ok {
			return m, true
		}
	}
	var m Module
	return m, readJSON(c.resolvedFile(addr, constraint), &m) && isDir(m.Dir)
}

func (c *Cache) pull(ctx context.Context, a Addr, addr, constraint string) (m Module, err error) {
	cl := c.client(a.Host)
	base, err := cl.discover(ctx)
	if err != nil {
		return Module{}, err
	}
	versions, err := cl.versions(ctx, base, a)
	if err != nil {
		return Module{}, err
	}
	if m.Version, err = choose(versions, constraint); err != nil {
		return Module{}, err
	}
	if known, ok := c.known(a, m.Version); ok {
		m.Dir, m.ID = known.Dir, known.ID
	} else {
		loc, err := cl.location(ctx, base, a, m.Version)
		if err != nil {
			return Module{}, err
		}
		if m.Dir, m.ID, err = c.download(ctx, cl, loc); err != nil {
			return Module{}, fmt.Errorf("version %s from %s: %w", m.Version, redactURL(loc), err)
		}
		if err := c.record(c.versionFile(a, m.Version), m); err != nil {
			return Module{}, err
		}
	}
	return m, c.record(c.resolvedFile(addr, constraint), m)
}

// Fetched returns the folder of addr as constraint last resolved in this
// cache, without any request, and whether constraint names one exact
// version (what it finds cannot change); ok is false when it never
// resolved.
func (c *Cache) Fetched(addr, constraint string) (dir string, fixed, ok bool) {
	var m Module
	if !readJSON(c.resolvedFile(addr, constraint), &m) || !isDir(m.Dir) {
		return "", false, false
	}
	return m.Dir, exactVersion(constraint), true
}

func (c *Cache) known(a Addr, version string) (Module, bool) {
	var m Module
	return m, readJSON(c.versionFile(a, version), &m) && isDir(m.Dir)
}

func (c *Cache) versionFile(a Addr, version string) string {
	return filepath.Join(c.Dir, "versions", key(a.String()+"@"+version))
}

func (c *Cache) resolvedFile(addr, constraint string) string {
	return filepath.Join(c.Dir, "resolved", key(addr+"\x00"+constraint))
}

// record writes m to p atomically (a temporary file renamed).
func (c *Cache) record(p string, m Module) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}

func readJSON(p string, v any) bool {
	data, err := os.ReadFile(p)
	return err == nil && json.Unmarshal(data, v) == nil
}

func key(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func shownConstraint(c string) string {
	if strings.TrimSpace(c) == "" {
		return ""
	}
	return " (version " + c + ")"
}

func limit(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}
