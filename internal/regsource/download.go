package regsource

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// download fetches loc (a go-getter address from the registry) and returns
// the module's folder and an ID naming its content.
func (c *Cache) download(ctx context.Context, cl *client, loc string) (dir, id string, err error) {
	getter, rest := "", loc
	if i := strings.Index(loc, "::"); i > 0 && !strings.Contains(loc[:i], "/") {
		getter, rest = loc[:i], loc[i+2:]
	}
	src, sub, err := splitSubdir(rest)
	if err != nil {
		return "", "", err
	}
	if err := reachable(cl.host, src); err != nil {
		return "", "", err
	}
	switch {
	case getter == "git" || (getter == "" && strings.HasSuffix(stripQuery(src), ".git")):
		return c.fromGit(ctx, src, sub)
	case (getter == "" || getter == "http" || getter == "https") && isArchiveURL(src):
		return c.fromArchive(ctx, cl, src, sub)
	default:
		return "", "", fmt.Errorf("download location %q: knit fetches git:: sources and .tar.gz archives over http(s) only", redactURL(loc))
	}
}

// reachable refuses a location on this machine (file://, a path, a
// loopback or .localhost URL) from a registry elsewhere: a registry must
// not make knit read the server's own repositories or local services.
func reachable(registryHost, src string) error {
	if isLocal(registryHost) {
		return nil
	}
	if user, rest, ok := strings.Cut(src, "@"); ok && !strings.Contains(user, "/") && !strings.Contains(src, "://") {
		src = "ssh://" + strings.Replace(rest, ":", "/", 1) // git's user@host:path
	}
	u, err := url.Parse(src)
	if err != nil || u.Scheme == "" || u.Scheme == "file" || isLocal(u.Host) {
		return fmt.Errorf("download location %q is on this machine, and the registry %s is not: refused", redactURL(src), registryHost)
	}
	return nil
}

// splitSubdir splits go-getter's URL//folder?query into URL?query and folder.
func splitSubdir(s string) (src, sub string, err error) {
	query := ""
	if i := strings.Index(s, "?"); i >= 0 {
		s, query = s[:i], s[i:]
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + 3
	}
	if i := strings.Index(s[start:], "//"); i >= 0 {
		sub = s[start+i+2:]
		s = s[:start+i]
	}
	sub = path.Clean("./" + sub)
	if sub == ".." || strings.HasPrefix(sub, "../") {
		return "", "", fmt.Errorf("download folder %q leaves the download", sub)
	}
	return s + query, sub, nil
}

func stripQuery(s string) string { return strings.SplitN(s, "?", 2)[0] }

// fromGit fetches a git source (URL?ref=R) through Cache.Git.
func (c *Cache) fromGit(ctx context.Context, src, sub string) (string, string, error) {
	if c.Git == nil {
		return "", "", errors.New("the download is a git source and this cache cannot fetch git")
	}
	u, ref := src, ""
	if i := strings.Index(src, "?"); i >= 0 {
		q, err := url.ParseQuery(src[i+1:])
		if err != nil {
			return "", "", fmt.Errorf("git source %q: %w", redactURL(src), err)
		}
		u, ref = src[:i], q.Get("ref")
	}
	root, commit, err := c.Git(ctx, u, ref)
	if err != nil {
		return "", "", err
	}
	dir, err := within(root, sub)
	if err != nil {
		return "", "", err
	}
	return dir, fmt.Sprintf("git %s %s //%s", u, commit, sub), nil
}

func isArchiveURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	if a := u.Query().Get("archive"); a != "" {
		return a == "tar.gz" || a == "tgz"
	}
	return strings.HasSuffix(u.Path, ".tar.gz") || strings.HasSuffix(u.Path, ".tgz")
}

// fromArchive downloads a .tar.gz, unpacks it once per content (by its
// SHA-256) and returns the folder sub inside it.
func (c *Cache) fromArchive(ctx context.Context, cl *client, src, sub string) (string, string, error) {
	u, err := url.Parse(src)
	if err != nil {
		return "", "", err
	}
	q := u.Query()
	q.Del("archive")
	u.RawQuery = q.Encode()
	tmp := filepath.Join(c.Dir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return "", "", err
	}
	f, err := os.CreateTemp(tmp, "archive-*.tar.gz")
	if err != nil {
		return "", "", err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	sum, err := c.fetchArchive(ctx, cl, u, f)
	if err != nil {
		return "", "", err
	}
	root := filepath.Join(c.Dir, "modules", sum)
	if !isDir(root) {
		if err := c.unpackTarGz(f, root); err != nil {
			return "", "", err
		}
	}
	dir, err := archiveSub(root, sub)
	if err != nil {
		return "", "", err
	}
	return dir, fmt.Sprintf("archive sha256:%s //%s", sum, sub), nil
}

// fetchArchive writes the archive at u to f, at most MaxArchive bytes,
// and returns its SHA-256.
func (c *Cache) fetchArchive(ctx context.Context, cl *client, u *url.URL, f *os.File) (string, error) {
	resp, err := cl.get(ctx, u, "")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", redactURL(u.String()), resp.Status)
	}
	max := limit(c.MaxArchive, DefaultMaxArchive)
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(resp.Body, max+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", redactURL(u.String()), err)
	}
	if n > max {
		return "", fmt.Errorf("%w: archive over the limit of %d bytes", ErrRefused, max)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// archiveSub is folder sub of an unpacked archive; "*" (go-getter's glob)
// as its first element is the archive's one top folder.
func archiveSub(root, sub string) (string, error) {
	first, rest, _ := strings.Cut(sub, "/")
	if first == "*" {
		entries, err := os.ReadDir(root)
		if err != nil {
			return "", err
		}
		if len(entries) != 1 || !entries[0].IsDir() {
			return "", fmt.Errorf("download folder //*: the archive has %d top-level entries, want one folder", len(entries))
		}
		sub = path.Join(entries[0].Name(), rest)
	}
	return within(root, sub)
}

// within joins slash path sub to root and checks the folder is there.
func within(root, sub string) (string, error) {
	dir := filepath.Join(root, filepath.FromSlash(sub))
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("download folder %q leaves the download", sub)
	}
	if !isDir(dir) {
		return "", fmt.Errorf("download folder %q is not in the download", sub)
	}
	return dir, nil
}
