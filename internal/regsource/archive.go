package regsource

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ErrRefused marks a download knit will not unpack (hostile or oversized
// archive); the message says what.
var ErrRefused = errors.New("module archive refused")

// unpackTarGz checks and extracts the gzipped tar in f into a temporary
// folder renamed to dir. Every entry must be a plain file or folder whose
// name stays inside; sizes and counts are bounded.
func (c *Cache) unpackTarGz(f *os.File, dir string) error {
	out, err := os.MkdirTemp(filepath.Join(c.Dir, "tmp"), "module-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(out)
	if err := c.extract(f, out); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	if err := os.Rename(out, dir); err != nil && !isDir(dir) {
		return err
	}
	return nil
}

func (c *Cache) extract(f io.Reader, out string) error {
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%w: not a gzip archive: %v", ErrRefused, err)
	}
	root, err := os.OpenRoot(out)
	if err != nil {
		return err
	}
	defer root.Close()
	tr := tar.NewReader(zr)
	budget := limit(c.MaxUnpacked, DefaultMaxUnpacked)
	maxFiles := limit(int64(c.MaxFiles), DefaultMaxFiles)
	for n := int64(0); ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %v", ErrRefused, err)
		}
		if n >= maxFiles {
			return fmt.Errorf("%w: more than %d entries", ErrRefused, maxFiles)
		}
		written, err := writeEntry(root, tr, h, budget)
		if err != nil {
			return err
		}
		budget -= written
	}
}

// writeEntry writes one tar entry through root (no name can reach out).
func writeEntry(root *os.Root, tr *tar.Reader, h *tar.Header, budget int64) (int64, error) {
	switch h.Typeflag {
	case tar.TypeXGlobalHeader, tar.TypeXHeader:
		return 0, nil // metadata (GitHub's archives start with one)
	case tar.TypeDir, tar.TypeReg:
	default:
		return 0, fmt.Errorf("%w: %q is not a plain file or folder (type %q)", ErrRefused, h.Name, h.Typeflag)
	}
	p, err := entryName(h.Name)
	if err != nil || p == "." {
		return 0, err
	}
	if h.Typeflag == tar.TypeDir {
		return 0, root.MkdirAll(p, 0o755)
	}
	if d := path.Dir(p); d != "." {
		if err := root.MkdirAll(d, 0o755); err != nil {
			return 0, err
		}
	}
	mode := os.FileMode(0o644)
	if h.Mode&0o111 != 0 {
		mode = 0o755
	}
	w, err := root.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrRefused, h.Name, err)
	}
	n, err := io.Copy(w, io.LimitReader(tr, budget+1))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("%w: %s: %v", ErrRefused, h.Name, err)
	}
	if n > budget {
		return n, fmt.Errorf("%w: archive unpacks to more than its limit", ErrRefused)
	}
	return n, nil
}

// entryName cleans an archive name, refusing one that is absolute or climbs out.
func entryName(name string) (string, error) {
	if strings.Contains(name, `\`) || strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%w: entry name %q", ErrRefused, name)
	}
	p := path.Clean(name)
	if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
		return "", fmt.Errorf("%w: entry %q leaves the archive", ErrRefused, name)
	}
	return p, nil
}
