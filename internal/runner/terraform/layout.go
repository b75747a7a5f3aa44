package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// Files knit writes into the folder the tool runs in. The tool loads
// *.auto.tfvars and *.auto.tfvars.json in lexical order, later files winning,
// so inline variables (inputsFile) override the variables file (varsFile),
// which sorts first.
const (
	varsFile    = "00-knit-variables.auto.tfvars"
	inputsFile  = "knit.auto.tfvars.json"
	backendFile = "knit_override.tf"
	lockFile    = ".terraform.lock.hcl"
)

// layout is what a component's module folder must hold: the module source,
// then the variables file, overlay files and overlay data, then knit's own
// files, each later one replacing an earlier one of the same name.
type layout struct {
	// files maps slash paths relative to the module root to their content.
	files map[string]file
	// sub is the folder the tool runs in, relative to the root ("." for the root).
	sub string
	// commit is the resolved commit of a git module (an OCI package's
	// digest, a registry module's version and content).
	commit string
	// shown is what a plan says of the module's source: a registry
	// module's address and resolved version; "" for others.
	shown string
	// ownBackend is true when the module configures its own backend; knit
	// then leaves state where the module says. backend is its type.
	ownBackend bool
	backend    string
	// ownEncryption is true when the module configures state encryption itself.
	ownEncryption bool
	// secret are the sensitive inputs: never in a file, handed to the tool
	// in its environment (toolEnv).
	secret runner.Inputs
	// inputsUnknown marks a layout collected before the component's inputs
	// are known (PrepareAhead): its inputs file is empty, so what depends
	// on the inputs cannot be decided from it.
	inputsUnknown bool
}

// file is one file's content: copied from src, or data.
type file struct {
	src  string
	data []byte
	mode fs.FileMode
}

// runFile returns the layout path of name in the folder the tool runs in.
func (l *layout) runFile(name string) string { return path.Join(l.sub, name) }

// moduleSub resolves where the module comes from without touching the
// network: src, the local folder to copy (local sources only), and the
// folder inside it the tool runs in.
func moduleSub(c runner.Component) (src spec.Source, root, sub string, err error) {
	m := c.Def.Module
	if m == nil {
		return src, "", "", errors.New("module is not set")
	}
	if src, err = c.Spec.ModuleSource(m); err != nil {
		return src, "", "", err
	}
	switch src.Kind {
	case spec.SourceLocal:
		if root, err = c.Spec.LocalPath(m.Source); err != nil {
			return src, "", "", err
		}
		rel, err := filepath.Rel(root, src.Path)
		if err != nil {
			return src, "", "", err
		}
		return src, root, filepath.ToSlash(rel), nil
	case spec.SourceGit, spec.SourceOCI, spec.SourceRegistry:
		sub = path.Clean("./" + strings.Trim(src.Subdir, "/"))
		if sub == ".." || strings.HasPrefix(sub, "../") {
			return src, "", "", fmt.Errorf("module path %q leaves the %s source", src.Subdir, src.Kind)
		}
		return src, "", sub, nil
	default:
		return src, "", "", fmt.Errorf("module source %q: unknown kind %q", src.URL, src.Kind)
	}
}

// runDir is the folder the tool runs in for c.
func runDir(c runner.Component) (string, error) {
	wd, err := workDir(c)
	if err != nil {
		return "", err
	}
	_, _, sub, err := moduleSub(c)
	if err != nil {
		return "", err
	}
	return runFolder(wd, sub), nil
}

// runFolder is the folder the tool runs in: sub (a slash path) inside the
// module copy of work dir wd.
func runFolder(wd, sub string) string {
	return filepath.Join(wd, moduleDir, filepath.FromSlash(sub))
}

// layout collects everything the module folder must hold. Git, OCI and
// registry sources are fetched; nothing is written to the work dir.
func (r *Runner) layout(ctx context.Context, c runner.Component, in runner.Inputs) (*layout, error) {
	wd, err := workDir(c)
	if err != nil {
		return nil, err
	}
	src, root, sub, err := moduleSub(c)
	if err != nil {
		return nil, err
	}
	if err := r.outsideDataDir(c, src, root); err != nil {
		return nil, err
	}
	r.collected.Add(1)
	f := r.srcs.of(c)
	if err := anonymousSource(r.opts.DataDir, c, src); err != nil {
		return nil, err
	}
	l := &layout{files: map[string]file{}, sub: sub}
	switch src.Kind {
	case spec.SourceGit:
		if root, l.commit, err = f.git.Checkout(ctx, src.URL, src.Ref); err != nil {
			return nil, err
		}
	case spec.SourceOCI:
		// The manifest digest names the package's content, as a commit
		// names a git tree: it goes into the fingerprint.
		if root, l.commit, err = f.oci.Pull(ctx, src.URL, src.Ref); err != nil {
			return nil, err
		}
	case spec.SourceRegistry:
		// The version the constraint chose and the content it downloaded
		// go into the fingerprint, as a commit does.
		m, err := f.reg.Pull(ctx, src.URL, src.Ref)
		if err != nil {
			return nil, err
		}
		root, l.commit, l.shown = m.Dir, "registry "+src.URL+" "+m.Version+" "+m.ID, src.URL+" "+m.Version
	}
	// Never copy knit's own folders, should a module's source contain them.
	t := tree{files: l.files, skip: map[string]bool{}}
	for _, d := range []string{wd, r.opts.DataDir} {
		if real, err := filepath.EvalSymlinks(d); err == nil && d != "" {
			t.skip[real] = true
		}
	}
	if err := t.add(root, root, "."); err != nil {
		return nil, fmt.Errorf("module: %w", err)
	}
	if st, err := os.Stat(filepath.Join(root, filepath.FromSlash(sub))); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("module: folder %q not found in %s", sub, root)
	}
	if err := r.addVariablesFile(ctx, c, l); err != nil {
		return nil, fmt.Errorf("variablesFile: %w", err)
	}
	for i, o := range c.Def.OverlayFiles {
		if err := r.addOverlay(ctx, c, l, t, o); err != nil {
			return nil, fmt.Errorf("overlayFiles[%d]: %w", i, err)
		}
	}
	for i, d := range c.Def.OverlayData {
		p := path.Clean(filepath.ToSlash(d.Name))
		if d.Name == "" || p == "." || p == ".." || strings.HasPrefix(p, "../") || path.IsAbs(p) {
			return nil, fmt.Errorf("overlayData[%d]: name %q must be a file name inside the module", i, d.Name)
		}
		l.files[l.runFile(p)] = file{data: []byte(d.Data), mode: 0o644}
	}
	plain, secret := splitSecret(in, c.Sensitive)
	l.secret = secret
	r.loadConfigs(wd)
	if l.backend, l.ownEncryption, err = r.moduleSettings(l); err != nil {
		return nil, err
	}
	return l, l.addKnitFiles(wd, plain, r.opts.States != nil && c.Sandbox == nil) // a sandbox's state is local
}

// outsideDataDir refuses a local module that lies in knit's data dir when
// the environment's folder does not (a folder that holds the data dir must
// not reach other components' work dirs through it). GitOps keeps commit
// trees in the data dir: their modules are inside their own environment's
// folder.
func (r *Runner) outsideDataDir(c runner.Component, src spec.Source, root string) error {
	if src.Kind != spec.SourceLocal || r.opts.DataDir == "" {
		return nil
	}
	if _, err := resolve(r.opts.DataDir, root); err != nil {
		return nil // not in the data dir
	}
	if _, err := resolve(r.opts.DataDir, c.Spec.RootDir()); err == nil {
		return nil
	}
	return fmt.Errorf("module: %s is inside knit's data dir %s", c.Def.Module.Source, r.opts.DataDir)
}

// addKnitFiles adds the backend override (unless the module has a backend)
// and the inputs that are not secret (those reach the tool through its
// environment only).
func (l *layout) addKnitFiles(wd string, in runner.Inputs, shared bool) error {
	l.ownBackend = l.backend != ""
	if !l.ownBackend && shared {
		l.files[l.runFile(backendFile)] = file{data: []byte(httpBackend), mode: 0o644}
	} else if !l.ownBackend {
		body := fmt.Sprintf("# Written by knit: state lives outside the module copy.\nterraform {\n  backend \"local\" {\n    path = %q\n  }\n}\n",
			filepath.Join(wd, stateFile))
		l.files[l.runFile(backendFile)] = file{data: []byte(body), mode: 0o644}
	}
	if in == nil {
		in = runner.Inputs{}
	}
	// JSON keeps numbers, lists and maps typed; encoding/json sorts map keys,
	// so the file (and the fingerprint) is canonical.
	data, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return fmt.Errorf("inputs: %w", err)
	}
	l.files[l.runFile(inputsFile)] = file{data: append(data, '\n'), mode: 0o644}
	return nil
}

// addVariablesFile adds the component's variablesFile, local or from git.
func (r *Runner) addVariablesFile(ctx context.Context, c runner.Component, l *layout) error {
	vf := c.Def.VariablesFile
	if vf == nil {
		return nil
	}
	var data []byte
	if vf.Source == "" || spec.IsLocalPath(vf.Source) {
		p, err := c.Spec.LocalPath(filepath.Join(vf.Source, vf.Path))
		if err != nil {
			return err
		}
		if data, err = os.ReadFile(p); err != nil {
			return err
		}
	} else {
		src, err := spec.ParseGitURL(vf.Source)
		if err != nil {
			return err
		}
		ref := vf.Ref
		if ref == "" {
			ref = src.Ref
		}
		if data, err = r.srcs.of(c).git.ReadFile(ctx, src.URL, ref, path.Join(src.Subdir, vf.Path)); err != nil {
			return err
		}
	}
	name := varsFile
	if strings.HasSuffix(vf.Path, ".json") {
		name += ".json"
	}
	l.files[l.runFile(name)] = file{data: data, mode: 0o644}
	return nil
}

// addOverlay adds an overlayFiles entry: each path, local (relative to the
// environment's folder, or to a local Source) or in a git repository, is a
// file that lands in the run folder under its own name, or a folder whose
// contents land there.
func (r *Runner) addOverlay(ctx context.Context, c runner.Component, l *layout, t tree, o spec.OverlayFile) error {
	var base string
	var err error
	if o.Source == "" || spec.IsLocalPath(o.Source) {
		if base, err = c.Spec.LocalPath(o.Source); err != nil {
			return err
		}
	} else {
		src, err := spec.ParseGitURL(o.Source)
		if err != nil {
			return err
		}
		ref := o.Ref
		if ref == "" {
			ref = src.Ref
		}
		dir, _, err := r.srcs.of(c).git.Checkout(ctx, src.URL, ref)
		if err != nil {
			return err
		}
		if base, err = inside(dir, src.Subdir); err != nil {
			return err
		}
	}
	for _, p := range o.Paths {
		full, err := inside(base, p)
		if err != nil {
			return err
		}
		st, err := os.Stat(full)
		if err != nil {
			return err
		}
		if st.IsDir() {
			if err := t.add(base, full, l.sub); err != nil {
				return err
			}
			continue
		}
		target, err := resolve(base, full)
		if err != nil {
			return err
		}
		l.files[l.runFile(filepath.Base(full))] = file{src: target, mode: modeOf(st)}
	}
	return nil
}

// inside joins p to base (or takes p if absolute) and refuses a result
// outside base. The check is lexical; resolve checks symlinks.
func inside(base, p string) (string, error) {
	full := filepath.Join(base, filepath.FromSlash(p))
	if filepath.IsAbs(p) {
		full = filepath.Clean(p)
	}
	rel, err := filepath.Rel(base, full)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q leaves %s", p, base)
	}
	return full, nil
}
