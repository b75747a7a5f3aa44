package spec

import (
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"

	"knit.dev/knit/internal/diag"
	"knit.dev/knit/internal/spec/tfmodule"
)

// Checking inputs against the module: for a terraform component whose
// module's files are on this machine (a local path, a git source knit
// has fetched before, or a registry module as knit last resolved it), validation reads the module's variable and output
// blocks (package tfmodule) and reports, before any tool runs, inputs the
// module does not declare, required variables nobody sets, and literal
// values that cannot convert to the declared type. Whatever validation
// cannot know (a module not fetched yet, overlay files, a variables file in
// git it has not seen) it leaves alone: it never guesses an error.

// Options are what a caller knows beyond the environment file.
type Options struct {
	// Fetched returns the folder holding the files of git repository url
	// at ref as knit last fetched it, without fetching, and whether ref
	// names fixed content (a full commit hash or a tag); ok is false when
	// the repository or ref was never fetched. Nil: git modules are not
	// checked.
	Fetched func(url, ref string) (dir string, fixed, ok bool)
	// FetchedRegistry returns the folder of registry module addr as
	// version constraint last resolved, without a request, and whether
	// the constraint names one exact version. Nil: registry modules are
	// not checked.
	FetchedRegistry func(addr, constraint string) (dir string, fixed, ok bool)
	// Checkout fetches the files of git repository url at ref (a git
	// template) and returns their folder and the commit. Nil: git
	// templates cannot be read.
	Checkout func(url, ref string) (dir, commit string, err error)
	// Repo is the folder templates and extended files may come from (and
	// so every local path of an environment built from them): GitOps
	// names the commit's tree (see InRepo). Empty: with RepoRoot, the git
	// work tree holding the environment file (the CLI); without, the
	// file's folder.
	Repo     string
	RepoRoot bool
	// Promote are the values of a release (a pipeline's): they replace
	// the environment's own values of the template's promote: true
	// parameters; naming any other parameter is an error.
	Promote map[string]any
	// Read, when set, is told of every local path loading resolves
	// besides the file itself (templates, extended files, and what the
	// components and policies name), joined to the folder it is relative
	// to, before it is checked: with the file and what Fetched and
	// Checkout answer, what the result depends on (GitOps caches it).
	Read func(path string)
	// ValuesSchema checks local charts' values against their
	// values.schema.json (see chartSchemas). Nil: they are not checked
	// before the plan, where Helm checks them.
	ValuesSchema SchemaChecker
	// Docs, when set, keeps the templates' parsed YAML between loads.
	Docs *DocCache
}

// noteRead tells o.Read of p, relative to dir unless absolute.
func (o Options) noteRead(dir, p string) {
	if o.Read == nil {
		return
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	o.Read(filepath.Clean(p))
}

// InRepo returns o with Repo set to dir: the tree a file was read from.
func (o Options) InRepo(dir string) Options {
	o.Repo = dir
	return o
}

// moduleView is a terraform component's module as validation sees it.
type moduleView struct {
	mod  *tfmodule.Module
	name string // what positions call the module's folder
	// tfvars are the names the module's own variables files set; nil
	// with tfvarsErr when one cannot be parsed.
	tfvars    []string
	tfvarsErr error
	// fixed is false for a git branch as last fetched: what it finds
	// may have changed upstream, so it warns instead of failing.
	fixed bool
	// inputs is false when files validation cannot read may declare
	// variables or set them (overlay files): only outputs are checked.
	inputs bool
}

// moduleOf reads c's module once per validation; nil when it cannot be read.
func (v *validator) moduleOf(c *Component) *moduleView {
	if mv, ok := v.mods[c]; ok {
		return mv
	}
	mv := v.readModule(c)
	if v.mods == nil {
		v.mods = map[*Component]*moduleView{}
	}
	v.mods[c] = mv
	return mv
}

func (v *validator) readModule(c *Component) *moduleView {
	loc, ok := v.locateModule(c)
	if !ok {
		return nil
	}
	// Components that share a module share one reading of it, unless
	// overlay data adds configuration files to theirs.
	var extra []tfmodule.Extra
	for _, o := range c.OverlayData {
		if p := path.Clean(filepath.ToSlash(o.Name)); path.Dir(p) == "." && tfmodule.IsConfig(p) {
			extra = append(extra, tfmodule.Extra{Name: p, Data: []byte(o.Data)})
		}
	}
	key := loc.root + "\x00" + loc.sub
	base, cached := v.modFiles[key]
	if !cached || len(extra) > 0 {
		base = loadModule(loc, extra)
		if len(extra) == 0 {
			if v.modFiles == nil {
				v.modFiles = map[string]*moduleView{}
			}
			v.modFiles[key] = base
		}
	}
	if base == nil {
		return nil
	}
	mv := *base
	mv.inputs = len(c.OverlayFiles) == 0
	return &mv
}

// moduleLoc is where a module's files are: the folder sub (a slash path)
// of root, which no symlink may leave; name is what positions call it.
type moduleLoc struct {
	root, sub, name string
	fixed           bool
}

// locateModule finds c's module on this machine; false when it is not
// there (or c has none).
func (v *validator) locateModule(c *Component) (moduleLoc, bool) {
	if c.Type != TypeTerraform || c.Module == nil {
		return moduleLoc{}, false
	}
	src, err := v.env.ModuleSource(c.Module)
	if err != nil {
		return moduleLoc{}, false
	}
	loc := moduleLoc{fixed: true}
	switch src.Kind {
	case SourceLocal:
		// The whole root, so that links inside it work as in the copy;
		// a link out of it was reported by module() and is not followed.
		loc.root = v.env.RootDir()
		if loc.sub, err = relSlash(loc.root, src.Path); err != nil {
			return moduleLoc{}, false
		}
		loc.name = filepath.ToSlash(filepath.Join(filepath.Dir(v.env.File), mustRel(v.env.Dir, src.Path)))
	case SourceGit, SourceRegistry:
		fetched := v.env.opts.Fetched
		if src.Kind == SourceRegistry {
			fetched = v.env.opts.FetchedRegistry
		}
		if fetched == nil {
			return moduleLoc{}, false
		}
		var ok bool
		if loc.root, loc.fixed, ok = fetched(src.URL, src.Ref); !ok {
			return moduleLoc{}, false // not fetched yet: checked after the first run
		}
		loc.sub = path.Clean("./" + strings.Trim(src.Subdir, "/"))
		if escapes(loc.sub) {
			return moduleLoc{}, false
		}
		loc.name = strings.TrimSuffix(src.URL+"//"+loc.sub, "//.")
	default:
		return moduleLoc{}, false
	}
	return loc, true
}

// loadModule reads the module at loc, with extra configuration files; nil
// when its folder cannot be read.
func loadModule(loc moduleLoc, extra []tfmodule.Extra) *moduleView {
	r, err := os.OpenRoot(loc.root)
	if err != nil {
		return nil
	}
	defer r.Close()
	mv := &moduleView{name: loc.name, fixed: loc.fixed}
	if mv.mod, err = tfmodule.Read(r.FS(), loc.sub, loc.name, extra...); err != nil {
		return nil
	}
	mv.tfvars, mv.tfvarsErr = mv.mod.AutoTfvarsNames(r.FS(), loc.sub, loc.name)
	return mv
}

// relSlash returns target relative to root as a slash path, refusing one
// that leaves root.
func relSlash(root, target string) (string, error) {
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(target)
	if err != nil {
		return "", err
	}
	if !lexicallyInside(absRoot, abs) {
		return "", fmt.Errorf("%s is outside %s", target, root)
	}
	rel, err := filepath.Rel(absRoot, abs)
	return filepath.ToSlash(rel), err
}

func mustRel(base, target string) string {
	if rel, err := filepath.Rel(base, target); err == nil {
		return rel
	}
	return target
}

// moduleDiag adds a diagnostic found in the module: an error, or a warning when
// the module is a branch as last fetched.
func (v *validator) moduleDiag(mv *moduleView, path, sub, msg, hint string) {
	d := errAt(v.env, path, sub, msg, hint)
	if !mv.fixed {
		d.Severity = diag.Warning
		d.Hint = strings.TrimSpace(d.Hint + " (checked against the branch as knit last fetched it)")
	}
	v.diags = append(v.diags, d)
}

// moduleInputs checks c's variables against its module's variable blocks.
func (v *validator) moduleInputs(p string, c *Component) {
	mv := v.moduleOf(c)
	if mv == nil {
		return
	}
	if len(mv.mod.Problems) > 0 {
		pr := mv.mod.Problems[0]
		v.moduleDiag(mv, p+".module.source", "", "the module cannot be parsed: "+pr.String(),
			"fix the module's syntax; OpenTofu would refuse it too")
		return
	}
	if mv.mod.Incomplete || mv.mod.Empty || !mv.inputs {
		return
	}
	set := map[string]bool{}
	for i, vr := range c.Variables {
		if vr.Name == "" {
			continue
		}
		set[vr.Name] = true
		vp := fmt.Sprintf("%s.variables[%d]", p, i)
		decl := mv.mod.Variables[vr.Name]
		if decl == nil {
			v.moduleDiag(mv, vp+".name", "", fmt.Sprintf("%s: the module declares no such variable", vr.Name),
				undeclaredHint(mv, vr.Name))
			continue
		}
		if vr.ValueFrom != "" {
			continue // known only once the producer has applied
		}
		if err := decl.Check(vr.Value); err != nil {
			shown := shortJSON(vr.Value)
			if decl.Sensitive {
				shown = "the value (hidden: the variable is sensitive)"
			}
			v.moduleDiag(mv, vp+".value", "", fmt.Sprintf("%s: %s is not a valid %s: %v", vr.Name, shown, decl.TypeSrc, err),
				fmt.Sprintf("the module declares it at %s with type = %s", decl.Pos, decl.TypeSrc))
		}
	}
	supplied, known := v.suppliedElsewhere(mv, c)
	if !known {
		return
	}
	for _, name := range mv.mod.VariableNames() {
		decl := mv.mod.Variables[name]
		if !decl.Required || set[name] || supplied[name] {
			continue
		}
		v.moduleDiag(mv, p, "variables", fmt.Sprintf("missing required variable %q (declared at %s without a default)", name, decl.Pos),
			fmt.Sprintf("add {name: %s, value: ...} or {name: %s, valueFrom: component.output} to variables", name, name))
	}
}

// shortJSON renders a value for a message, cut to a readable length.
func shortJSON(value any) string {
	b, err := json.Marshal(value)
	if err != nil {
		return fmt.Sprint(value)
	}
	if len(b) > 40 {
		return string(b[:37]) + "..."
	}
	return string(b)
}

func undeclaredHint(mv *moduleView, name string) string {
	names := mv.mod.VariableNames()
	if s := suggest(name, names); s != "" {
		return s
	}
	if len(names) == 0 {
		return fmt.Sprintf("%s declares no variables", mv.name)
	}
	return fmt.Sprintf("%s declares: %s", mv.name, strings.Join(names, ", "))
}

// suppliedElsewhere returns the names set outside variables: by the
// module's own variables files, the component's variablesFile and its
// overlay data. known is false when some of them cannot be read here.
func (v *validator) suppliedElsewhere(mv *moduleView, c *Component) (map[string]bool, bool) {
	set := map[string]bool{}
	if mv.tfvarsErr != nil {
		return nil, false
	}
	names := append([]string(nil), mv.tfvars...)
	if vf := c.VariablesFile; vf != nil {
		more, ok := v.variablesFileNames(vf)
		if !ok {
			return nil, false
		}
		names = append(names, more...)
	}
	for _, o := range c.OverlayData {
		if p := path.Clean(filepath.ToSlash(o.Name)); path.Dir(p) == "." && tfmodule.IsAutoTfvars(p) {
			more, err := tfmodule.TfvarsNames(p, []byte(o.Data))
			if err != nil {
				return nil, false
			}
			names = append(names, more...)
		}
	}
	for _, n := range names {
		set[n] = true
	}
	return set, true
}

// variablesFileNames reads the names a component's variablesFile sets:
// from the environment's folder, or from a git repository knit fetched.
func (v *validator) variablesFileNames(vf *VariablesFile) ([]string, bool) {
	if vf.Path == "" {
		return nil, false
	}
	var root, p string
	if vf.Source == "" || IsLocalPath(vf.Source) {
		full, err := v.env.LocalPath(filepath.Join(vf.Source, vf.Path))
		if err != nil {
			return nil, false
		}
		root = v.env.RootDir()
		var rerr error
		if p, rerr = relSlash(root, full); rerr != nil {
			return nil, false
		}
	} else {
		src, err := ParseGitURL(vf.Source)
		if err != nil || v.env.opts.Fetched == nil || escapes(vf.Path) {
			return nil, false
		}
		ref := vf.Ref
		if ref == "" {
			ref = src.Ref
		}
		var fixed, ok bool
		if root, fixed, ok = v.env.opts.Fetched(src.URL, ref); !ok || !fixed {
			return nil, false
		}
		p = path.Clean(path.Join("./"+strings.Trim(src.Subdir, "/"), filepath.ToSlash(vf.Path)))
		if escapes(p) {
			return nil, false
		}
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, false
	}
	defer r.Close()
	names, err := tfmodule.ReadTfvarsNames(r.FS(), p, vf.Path)
	return names, err == nil
}

// moduleOutput checks that producer's module declares output name, when
// its module can be read; fp is where the valueFrom was written.
func (v *validator) moduleOutput(fp string, producer *Component, name string) {
	mv := v.moduleOf(producer)
	if mv == nil || mv.mod.Incomplete || mv.mod.Empty || !mv.inputs || mv.mod.Outputs[name] != nil {
		return
	}
	hint := suggest(name, mv.mod.OutputNames())
	if hint == "" {
		hint = fmt.Sprintf("add output %q to %s, or use one it declares: %s", name, mv.name, strings.Join(mv.mod.OutputNames(), ", "))
	}
	v.moduleDiag(mv, fp, "", fmt.Sprintf("the module of %q (%s) declares no output %q", producer.Name, mv.name, name), hint)
}
