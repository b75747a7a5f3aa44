// Package ocisource fetches OpenTofu module packages from OCI registries
// into a local cache, by digest, so a terraform component's module can come
// from an `oci://host/repository?tag=…` address and still be copied into the
// component's private work dir like a local or git module.
//
// A module package is an OCI image manifest with artifactType
// application/vnd.opentofu.modulepkg and exactly one archive/zip layer
// whose root is the package's root (OpenTofu's format, so one artifact
// serves both). The archive is checked before a file is written: no path
// that leaves the package, no links or devices, bounded size and count.
//
// Layout under Cache.Dir:
//
//	modules/<manifest digest hex>   the files of one package, written once, then only read
//	tmp/                            extractions in progress
package ocisource

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// Media types of an OpenTofu module package.
const (
	ArtifactType = "application/vnd.opentofu.modulepkg"
	ZipMediaType = "archive/zip"
)

// Limits a package must stay within unless the Cache sets its own.
const (
	DefaultMaxArchive  = 64 << 20  // bytes of the zip layer
	DefaultMaxUnpacked = 256 << 20 // bytes of all files written
	DefaultMaxFiles    = 10000
	maxManifest        = 4 << 20
)

// ErrNeedsCredentials marks a registry that refused an Anonymous cache.
var ErrNeedsCredentials = errors.New("needs the server's registry credentials; previews of unreviewed branches run without them: merge the branch, or ask an admin")

// refusedAuth reports whether err is the registry asking for credentials.
func refusedAuth(err error) bool {
	var resp *errcode.ErrorResponse
	return errors.Is(err, auth.ErrBasicCredentialNotFound) ||
		errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden)
}

// ErrRefused marks a package knit will not unpack (wrong type, hostile or
// oversized archive); the message says what.
var ErrRefused = errors.New("module package refused")

// Cache keeps unpacked module packages under Dir. The zero value with Dir
// set is ready; a finished package folder is never modified, so several
// runs (and processes) may share one Dir.
type Cache struct {
	Dir string
	// Anonymous is for a run that may not use the server's credentials (a
	// preview of a branch nobody reviewed): no stored credential is used,
	// and a registry that asks for one fails with ErrNeedsCredentials. A
	// digest already unpacked names its content exactly and is reused.
	Anonymous bool
	// Limits; zero means the Default.
	MaxArchive, MaxUnpacked int64
	MaxFiles                int
}

// InDataDir returns the cache knit keeps in its data dir.
func InDataDir(dataDir string) *Cache { return &Cache{Dir: filepath.Join(dataDir, "oci")} }

// Pull returns a folder holding the files of the module package repo
// (host/repository) at ref (a tag or sha256 digest), and the manifest's
// digest, which names the content exactly. A digest already unpacked is
// not fetched again. The folder must not be modified.
func (c *Cache) Pull(ctx context.Context, repo, ref string) (dir, dig string, err error) {
	defer func() {
		if err != nil {
			err = fmt.Errorf("oci %s at %s: %w", repo, ref, err)
		}
	}()
	if d, perr := digest.Parse(ref); perr == nil {
		if dir := c.moduleDir(d); exists(dir) {
			return dir, d.String(), nil
		}
	}
	r, err := remote.NewRepository(repo)
	if err != nil {
		return "", "", err
	}
	// Plain HTTP only to a registry on this machine (tests, a local
	// mirror); anything else speaks TLS.
	r.PlainHTTP = isLoopback(r.Reference.Host())
	if r.Client, err = client(c.Anonymous); err != nil {
		return "", "", err
	}
	desc, err := r.Resolve(ctx, ref)
	if err != nil {
		if c.Anonymous && refusedAuth(err) {
			return "", "", fmt.Errorf("%w (%v)", ErrNeedsCredentials, err)
		}
		if errors.Is(err, errdef.ErrNotFound) {
			return "", "", fmt.Errorf("no such tag or digest in the registry: %w", err)
		}
		return "", "", err
	}
	if desc.Size > maxManifest {
		return "", "", fmt.Errorf("%w: manifest of %d bytes", ErrRefused, desc.Size)
	}
	dir = c.moduleDir(desc.Digest)
	if exists(dir) {
		return dir, desc.Digest.String(), nil
	}
	layer, err := c.zipLayer(ctx, r, desc)
	if err != nil {
		return "", "", err
	}
	if err := c.unpack(ctx, r, layer, dir); err != nil {
		return "", "", err
	}
	return dir, desc.Digest.String(), nil
}

// zipLayer fetches the manifest (digest-verified) and returns its one zip layer.
func (c *Cache) zipLayer(ctx context.Context, r *remote.Repository, desc ocispec.Descriptor) (ocispec.Descriptor, error) {
	if desc.MediaType != ocispec.MediaTypeImageManifest {
		return ocispec.Descriptor{}, fmt.Errorf("%w: %s is a %q, not an OCI image manifest", ErrRefused, desc.Digest, desc.MediaType)
	}
	body, err := content.FetchAll(ctx, r, desc)
	if err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("manifest: %w", err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(body, &m); err != nil {
		return ocispec.Descriptor{}, fmt.Errorf("manifest: %w", err)
	}
	if m.ArtifactType != ArtifactType {
		return ocispec.Descriptor{}, fmt.Errorf("%w: artifactType is %q, want %q (an OpenTofu module package)", ErrRefused, m.ArtifactType, ArtifactType)
	}
	var zips []ocispec.Descriptor
	for _, l := range m.Layers {
		if l.MediaType == ZipMediaType {
			zips = append(zips, l)
		}
	}
	if len(zips) != 1 {
		return ocispec.Descriptor{}, fmt.Errorf("%w: the manifest has %d %s layers, want exactly one", ErrRefused, len(zips), ZipMediaType)
	}
	if max := limit(c.MaxArchive, DefaultMaxArchive); zips[0].Size > max || zips[0].Size < 0 {
		return ocispec.Descriptor{}, fmt.Errorf("%w: archive of %d bytes is over the limit of %d", ErrRefused, zips[0].Size, max)
	}
	return zips[0], nil
}

// unpack downloads the layer (verified against its digest and size), checks
// the whole archive, then extracts it into a temporary folder renamed to dir.
func (c *Cache) unpack(ctx context.Context, r *remote.Repository, layer ocispec.Descriptor, dir string) error {
	tmp := filepath.Join(c.Dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(tmp, "layer-*.zip")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	rc, err := r.Fetch(ctx, layer)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	// The verify reader fails on more bytes than the descriptor says or a
	// digest mismatch: a registry cannot swap the content.
	vr := content.NewVerifyReader(rc, layer)
	_, err = io.Copy(f, vr)
	if err == nil {
		err = vr.Verify()
	}
	rc.Close()
	if err != nil {
		return fmt.Errorf("archive %s: %w", layer.Digest, err)
	}
	zr, err := zip.NewReader(f, layer.Size)
	if err != nil {
		return fmt.Errorf("%w: archive: %v", ErrRefused, err)
	}
	if err := c.check(zr); err != nil {
		return err
	}
	out, err := os.MkdirTemp(tmp, "module-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	if err := c.extract(zr, out); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := os.Rename(out, dir); err != nil && !exists(dir) {
		return err
	}
	return nil
}

// check refuses an archive before anything is written: an entry that is
// not a plain file or folder, a name that leaves the package, too many
// entries, or declared sizes over the limit (extract also counts real bytes).
func (c *Cache) check(zr *zip.Reader) error {
	if max := limit(int64(c.MaxFiles), DefaultMaxFiles); int64(len(zr.File)) > max {
		return fmt.Errorf("%w: %d entries, over the limit of %d", ErrRefused, len(zr.File), max)
	}
	var total uint64
	for _, zf := range zr.File {
		if _, err := entryName(zf.Name); err != nil {
			return err
		}
		if m := zf.Mode(); !m.IsRegular() && !m.IsDir() {
			return fmt.Errorf("%w: %q is a %s, only files and folders are allowed", ErrRefused, zf.Name, m.Type())
		}
		total += zf.UncompressedSize64
	}
	if max := limit(c.MaxUnpacked, DefaultMaxUnpacked); total > uint64(max) {
		return fmt.Errorf("%w: archive unpacks to %d bytes, over the limit of %d", ErrRefused, total, max)
	}
	return nil
}

// entryName cleans an archive name, refusing one that is absolute or climbs out.
func entryName(name string) (string, error) {
	if strings.Contains(name, `\`) || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%w: entry name %q", ErrRefused, name)
	}
	p := path.Clean(name)
	if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") || filepath.VolumeName(p) != "" {
		return "", fmt.Errorf("%w: entry %q leaves the package", ErrRefused, name)
	}
	return p, nil
}

// extract writes the checked archive under out through an os.Root, so no
// name can reach outside it, counting the bytes really written.
func (c *Cache) extract(zr *zip.Reader, out string) error {
	root, err := os.OpenRoot(out)
	if err != nil {
		return err
	}
	defer root.Close()
	budget := limit(c.MaxUnpacked, DefaultMaxUnpacked)
	for _, zf := range zr.File {
		p, _ := entryName(zf.Name)
		if p == "." {
			continue
		}
		if zf.Mode().IsDir() {
			if err := root.MkdirAll(p, 0o755); err != nil {
				return err
			}
			continue
		}
		if d := path.Dir(p); d != "." {
			if err := root.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		n, err := writeEntry(root, zf, p, budget)
		if err != nil {
			return err
		}
		budget -= n
	}
	return nil
}

func writeEntry(root *os.Root, zf *zip.File, p string, budget int64) (int64, error) {
	rc, err := zf.Open()
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrRefused, zf.Name, err)
	}
	defer rc.Close()
	mode := os.FileMode(0o644)
	if zf.Mode()&0o111 != 0 {
		mode = 0o755
	}
	w, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrRefused, zf.Name, err)
	}
	n, err := io.Copy(w, io.LimitReader(rc, budget+1))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("%w: %s: %v", ErrRefused, zf.Name, err)
	}
	if n > budget {
		return n, fmt.Errorf("%w: archive unpacks to more than its limit", ErrRefused)
	}
	return n, nil
}

// client authenticates where the registry asks, with the credentials
// docker, podman or oras login stored ($DOCKER_CONFIG/config.json or
// ~/.docker/config.json, and its credential helpers), as OpenTofu does.
// They stay in this process: never in argv, logs or errors.
func client(anonymous bool) (*auth.Client, error) {
	if anonymous {
		return &auth.Client{Client: retry.DefaultClient, Cache: auth.NewCache()}, nil // no Credential: anonymous
	}
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("registry credentials: %w", err)
	}
	return &auth.Client{
		Client:     retry.DefaultClient,
		Cache:      auth.NewCache(),
		Credential: credentials.Credential(store),
	}, nil
}

func (c *Cache) moduleDir(d digest.Digest) string {
	return filepath.Join(c.Dir, "modules", d.Encoded())
}

func limit(v, def int64) int64 {
	if v > 0 {
		return v
	}
	return def
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// isLoopback reports whether host (with or without port) is this machine.
func isLoopback(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
