package main

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Configuration file names of a unit, as Terragrunt looks for them.
var unitFiles = []string{"terragrunt.hcl", "terragrunt.hcl.json"}

// walk finds the units under root (resolved): the folders holding a
// terragrunt.hcl. Like Terragrunt without its symlinks experiment, it
// does not enter symlinked folders (so a symlink loop cannot hold it);
// each one is a finding. Hidden folders (.git, .terragrunt-cache) are
// skipped.
func walk(root string) (files []string, findings []Finding, err error) {
	var visit func(dir string) error
	visit = func(dir string) error {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			path := filepath.Join(dir, e.Name())
			rel := relSlash(root, path)
			switch {
			case e.Type()&os.ModeSymlink != 0:
				if f, ok := symlinkFinding(root, path, rel); ok {
					findings = append(findings, f)
					continue
				}
				if isUnitFile(e.Name()) {
					files = append(files, path)
				}
			case e.IsDir():
				if strings.HasPrefix(e.Name(), ".") {
					continue
				}
				if err := visit(path); err != nil {
					return err
				}
			case isUnitFile(e.Name()):
				files = append(files, path)
			case e.Name() == "terragrunt.stack.hcl":
				findings = append(findings, Finding{Pos: rel, What: "stack", Why: "stacks are not imported: run `terragrunt stack generate` and import the units it writes"})
			}
		}
		return nil
	}
	err = visit(root)
	sort.Strings(files)
	return files, findings, err
}

func isUnitFile(name string) bool {
	for _, f := range unitFiles {
		if name == f {
			return true
		}
	}
	return false
}

// symlinkFinding says why the symlink at path is not followed: it is a
// folder (Terragrunt does not enter those), leads outside root, loops or
// is dangling. A symlinked unit file inside root is followed (ok false).
func symlinkFinding(root, path, rel string) (Finding, bool) {
	target, _ := os.Readlink(path)
	real, err := filepath.EvalSymlinks(path)
	switch {
	case err != nil:
		return Finding{Pos: rel, What: "symlink to " + target, Why: "not followed: " + err.Error()}, true
	case real != root && !strings.HasPrefix(real, root+string(filepath.Separator)):
		return Finding{Pos: rel, What: "symlink to " + target, Why: "not followed: it leads outside the folder being imported"}, true
	}
	st, err := os.Stat(real)
	if err != nil || st.IsDir() {
		why := "not followed: Terragrunt does not enter symlinked folders"
		if real == root || strings.HasPrefix(filepath.Dir(path)+string(filepath.Separator), real+string(filepath.Separator)) {
			why = "not followed: it loops back to a folder above it"
		}
		return Finding{Pos: rel, What: "symlink to " + target, Why: why}, true
	}
	return Finding{}, false
}
