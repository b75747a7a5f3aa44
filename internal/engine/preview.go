package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"knit.dev/knit/internal/runner"
)

// PreviewRef names the preview whose plan an apply applied.
type PreviewRef struct {
	Branch   string `json:"branch"`
	Commit   string `json:"commit"`
	Checksum string `json:"checksum"`
}

// PlanDigest is a component's plan as a checksum that the same inputs
// always give: the component's fingerprint (module content, inputs, tool
// version: never a path or a time), whether it destroys, its counts and
// the resources it touches with their actions. A saved plan file's
// SHA-256 cannot serve: the tool stamps it with the time it was made, and
// a component applied without a gate saves none. So a preview and the
// apply of the same change, against the same state, have the same digest.
func PlanDigest(fingerprint string, p *runner.Plan) string {
	if p == nil || !p.HasChanges() {
		return ""
	}
	return digestOf(fmt.Sprintf("knit plan digest v1\nfingerprint %s\ndestroy %t\ncounts %d %d %d\n", fingerprint, p.Destroying, p.Add, p.Change, p.Destroy), p)
}

// digestOf hashes head and the resources p touches with their actions
// (but data sources, read at every plan), by address.
func digestOf(head string, p *runner.Plan) string {
	h := sha256.New()
	h.Write([]byte(head))
	var rs []string
	for _, r := range p.Resources {
		if r.Action != runner.ActionRead { // data sources read at every plan
			rs = append(rs, r.Address+" "+string(r.Action))
		}
	}
	sort.Strings(rs)
	for _, r := range rs {
		fmt.Fprintf(h, "resource %s\n", r)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// PlanChecksum is a run's plan as one checksum: the digests of its
// components that change something, by name ("" when none does).
func PlanChecksum(components []*ComponentResult) string {
	var lines []string
	for _, c := range components {
		if c.Digest != "" {
			lines = append(lines, c.Name+"\x00"+c.Digest)
		}
	}
	if len(lines) == 0 {
		return ""
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// previews keeps what a preview run copies (the work dirs it plans in)
// and links an apply to the preview whose plan it applied.
type previews struct {
	s *session
}

// previewDir is where a preview run plans component name: a copy of its
// work dir (state, module copy, providers) under the run's own folder, so
// that the preview neither replaces a saved plan an approval waits on nor
// leaves its module copy behind for the next apply.
//
// A sandboxed preview's copy is under the sandbox's folder instead, outside
// the data dir (which the sandbox's user cannot enter), in a run folder
// only knit's user lists.
func (pv *previews) previewDir(name, workDir string) (string, error) {
	root := pv.previewRoot()
	if pv.s.opts.Sandbox != nil {
		if err := os.MkdirAll(root, 0o711); err != nil {
			return "", fmt.Errorf("the sandbox's folder for the preview: %w", err)
		}
	}
	dst := filepath.Join(root, name)
	if err := copyWorkDir(workDir, dst); err != nil {
		return "", fmt.Errorf("copy the work dir of %s for the preview: %w", name, err)
	}
	return dst, nil
}

// previewRoot is the folder of a preview run's copies.
func (pv *previews) previewRoot() string {
	if pv.s.opts.Sandbox != nil {
		return filepath.Join(pv.s.opts.Sandbox.Dir, pv.s.run.ID)
	}
	return filepath.Join(pv.s.e.DataDir, "preview", pv.s.run.ID)
}

// removePreviewDirs removes what a preview run copied.
func (pv *previews) removePreviewDirs() error {
	if !pv.s.opts.Preview {
		return nil
	}
	return os.RemoveAll(pv.previewRoot())
}

// previewPlaceholder is what a sandboxed preview plans with instead of a
// sensitive input's value: of the value's kind, so that a typed variable
// still takes it, and recognisable as a string.
func previewPlaceholder(name string, v any) any {
	switch v.(type) {
	case bool:
		return false
	case float64, int, int64, json.Number:
		return 0
	case []any:
		return []any{}
	case map[string]any:
		return map[string]any{}
	}
	return "knit-preview-placeholder-" + name
}

// withPlaceholders is in with every input sensitive names replaced by a
// placeholder, and the names replaced, sorted.
func withPlaceholders(in runner.Inputs, sensitive map[string]bool) (runner.Inputs, []string) {
	if len(sensitive) == 0 {
		return in, nil
	}
	out := make(runner.Inputs, len(in))
	var names []string
	for k, v := range in {
		if sensitive[k] {
			v = previewPlaceholder(k, v)
			names = append(names, k)
		}
		out[k] = v
	}
	sort.Strings(names)
	return out, names
}

// notCopied are files of a work dir a preview must not take along: the
// saved plan (never the preview's to apply), what the last init saw and
// the backend the tool initialised (both name the real work dir: the copy
// initialises again, against its own copy of the state).
func notCopied(rel string) bool {
	base := filepath.Base(rel)
	if base == "terraform.tfstate.imported" || base == "terraform.tfstate.backup" {
		return true // plaintext states of before: never a preview's
	}
	return rel == "plan.tfplan" || rel == "init.stamp" ||
		(base == "terraform.tfstate" && filepath.Base(filepath.Dir(rel)) == ".terraform")
}

// copyWorkDir copies src (which may not exist: a new component) into dst,
// keeping symlinks as links.
func copyWorkDir(src, dst string) error {
	if err := os.MkdirAll(dst, 0o700); err != nil {
		return err
	}
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		if notCopied(filepath.ToSlash(rel)) {
			return nil
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.IsDir():
			return os.MkdirAll(to, 0o700)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return copyFileMode(p, to, info.Mode().Perm())
		}
		return nil
	})
	if os.IsNotExist(err) {
		return nil
	}
	return err
}

func shortCommit(c string) string { return c[:min(10, len(c))] }
