package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// readSource reads a template or an extended file p (relative to dir)
// that must stay inside root, symlinks followed: a regular file of at
// most MaxFileSize. A folder, a named pipe or a device is refused without
// blocking: the file is opened non-blocking and checked once open, so it
// cannot be swapped for a pipe after a check.
func readSource(root, dir, p string) (abs string, data []byte, sum string, err error) {
	full, err := Contain(root, dir, p)
	if err != nil {
		return "", nil, "", err
	}
	if abs, err = filepath.Abs(full); err != nil {
		return "", nil, "", err
	}
	f, err := os.OpenFile(abs, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", nil, "", fmt.Errorf("cannot read %s: %w", p, unwrapPath(err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", nil, "", err
	}
	switch {
	case st.IsDir():
		return "", nil, "", fmt.Errorf("%s is a folder, not a file", p)
	case !st.Mode().IsRegular():
		return "", nil, "", fmt.Errorf("%s is not a regular file (%s)", p, st.Mode().Type())
	case st.Size() > MaxFileSize:
		return "", nil, "", fmt.Errorf("%s is larger than %d MiB", p, MaxFileSize>>20)
	}
	data, err = io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return "", nil, "", fmt.Errorf("cannot read %s: %w", p, err)
	}
	if len(data) > MaxFileSize {
		return "", nil, "", fmt.Errorf("%s is larger than %d MiB", p, MaxFileSize>>20)
	}
	h := sha256.Sum256(data)
	return abs, data, hex.EncodeToString(h[:]), nil
}

// unwrapPath drops the *PathError's own restatement of the path.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// repoRoot is the folder templates and extended files may be read from
// when the caller named none: the nearest folder at or above dir holding
// .git (a git work tree), else dir itself.
func repoRoot(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return dir
	}
	for d := abs; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return dir
		}
		d = up
	}
}
