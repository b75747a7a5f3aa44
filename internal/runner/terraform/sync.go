package terraform

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// syncDir makes dst hold exactly l's files, rewriting only files whose
// content or mode changed and deleting files that left the source. It keeps
// what the tool owns: .terraform folders, and the lock file the tool wrote in
// the run folder when the source has none. Each file is written to a
// temporary name and renamed, so an interrupted sync never leaves half a file.
func syncDir(l *layout, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	keep := func(rel string) bool {
		_, ok := l.files[rel]
		return ok || rel == l.runFile(lockFile)
	}
	// Delete first, so a file may give way to a folder of the same name.
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dst, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if d.Name() == ".terraform" {
				return filepath.SkipDir
			}
			return nil
		}
		if keep(rel) {
			return nil
		}
		return os.Remove(p)
	})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(l.files))
	for rel := range l.files {
		names = append(names, rel)
	}
	sort.Strings(names)
	for _, rel := range names {
		if err := writeIfChanged(filepath.Join(dst, filepath.FromSlash(rel)), l.files[rel]); err != nil {
			return err
		}
	}
	return removeEmptyDirs(dst, dst)
}

// writeIfChanged writes f to p unless p already holds the same bytes and mode.
func writeIfChanged(p string, f file) error {
	data, err := f.read()
	if err != nil {
		return err
	}
	if st, err := os.Lstat(p); err == nil {
		if st.Mode().IsRegular() && st.Size() == int64(len(data)) && st.Mode().Perm() == f.mode {
			if old, err := os.ReadFile(p); err == nil && bytes.Equal(old, data) {
				return nil
			}
		}
		if st.IsDir() {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
		}
	}
	return writeFileAtomic(p, data, f.mode)
}

// writeFileAtomic replaces name with data, of mode perm, through a
// temporary file beside it, so a reader never sees half of it.
func writeFileAtomic(name string, data []byte, perm os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(name), ".knit-tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	err = errors.Join(werr, cerr, os.Chmod(tmp.Name(), perm))
	if err == nil {
		err = os.Rename(tmp.Name(), name)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// removeEmptyDirs removes folders under dir (never root itself, never
// .terraform) that hold nothing.
func removeEmptyDirs(root, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	empty := true
	for _, e := range entries {
		if !e.IsDir() || e.Name() == ".terraform" {
			empty = false
			continue
		}
		sub := filepath.Join(dir, e.Name())
		if err := removeEmptyDirs(root, sub); err != nil {
			return err
		}
		if exists(sub) {
			empty = false
		}
	}
	if empty && dir != root {
		return os.Remove(dir)
	}
	return nil
}
