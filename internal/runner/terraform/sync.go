package terraform

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// syncedFile, in a component's work dir, lists the files the last sync
// placed in the module copy (slash paths, one a line). Only those are the
// sync's to delete: a file the module itself writes into path.module (a
// local_file, a rendered config) is the tool's, and deleting it before
// every plan would make each plan and drift check see it gone.
const syncedFile = "synced.knit"

// syncDir makes dst hold l's files, rewriting only files whose content or
// mode changed, and deleting the files an earlier sync placed that have
// left the source (listed in the manifest file, syncedFile). Files the tool
// or the module wrote are kept. A work dir from before the manifest has
// none: that once, dst is made to hold exactly l's files (what knit did
// then), keeping .terraform and the lock file the tool wrote in the run
// folder. Each file is written to a temporary name and renamed, so an
// interrupted sync never leaves half a file; the manifest lists the old
// files and the new ones while the sync runs, so an interrupted sync
// forgets none.
func syncDir(l *layout, dst, manifest string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(l.files))
	for rel := range l.files {
		names = append(names, rel)
	}
	sort.Strings(names)
	old, err := readManifest(manifest)
	if err != nil {
		return err
	}
	// Delete first, so a file may give way to a folder of the same name.
	if old == nil {
		err = mirror(l, dst)
	} else {
		err = removeGone(l, dst, old)
	}
	if err != nil {
		return err
	}
	if err := writeManifest(manifest, slices.Concat(names, old)); err != nil {
		return err
	}
	for _, rel := range names {
		if err := writeIfChanged(filepath.Join(dst, filepath.FromSlash(rel)), l.files[rel]); err != nil {
			return err
		}
	}
	return writeManifest(manifest, names)
}

// removeGone deletes the files of old (placed by an earlier sync) that are
// not in l, and the folders that leaves empty. The run folder's lock file
// stays: once the source has none, it is the tool's.
func removeGone(l *layout, dst string, old []string) error {
	for _, rel := range old {
		if _, ok := l.files[rel]; ok || !local(rel) || rel == l.runFile(lockFile) {
			continue
		}
		p := filepath.Join(dst, filepath.FromSlash(rel))
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		// Parents left empty go too; os.Remove refuses a folder that is not.
		for dir := filepath.Dir(p); dir != dst && strings.HasPrefix(dir, dst); dir = filepath.Dir(dir) {
			if os.Remove(dir) != nil {
				break
			}
		}
	}
	return nil
}

// local reports whether a manifest entry names a file below the module
// copy (a damaged manifest must not delete anything else).
func local(rel string) bool {
	c := path.Clean(rel)
	return c == rel && c != "." && !path.IsAbs(c) && c != ".." && !strings.HasPrefix(c, "../") &&
		!strings.HasPrefix(c, ".terraform/") && !strings.Contains(c, "/.terraform/")
}

// mirror deletes every file in dst that l does not hold, but for the
// tool's own (.terraform folders, the lock file of the run folder), then
// the folders that leaves empty: a work dir whose sync kept no manifest.
func mirror(l *layout, dst string) error {
	keep := func(rel string) bool {
		_, ok := l.files[rel]
		return ok || rel == l.runFile(lockFile)
	}
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
	return removeEmptyDirs(dst, dst)
}

// readManifest returns the files the last sync placed; nil when no sync
// wrote a manifest.
func readManifest(name string) ([]string, error) {
	b, err := os.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return append([]string{}, strings.FieldsFunc(string(b), func(r rune) bool { return r == '\n' })...), nil
}

// writeManifest records names (sorted, without repeats) as the files the
// sync placed.
func writeManifest(name string, names []string) error {
	sort.Strings(names)
	var b strings.Builder
	for i, n := range names {
		if i == 0 || n != names[i-1] {
			b.WriteString(n + "\n")
		}
	}
	return writeFileAtomic(name, []byte(b.String()), 0o644)
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
