package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar"
	"github.com/gruntwork-io/terragrunt/config"
	"github.com/zclconf/go-cty/cty"
)

// readConfig is read_terragrunt_config(path[, default]): the path
// resolves against the current configuration (a folder means its
// terragrunt.hcl) and is checked before Terragrunt parses it.
func (g *guard) readConfig(file string, args []cty.Value) (cty.Value, error) {
	const name = "read_terragrunt_config"
	path, err := stringArg(name, args, 0)
	if err != nil {
		return cty.NilVal, err
	}
	if len(args) > 2 {
		return cty.NilVal, fmt.Errorf("%s takes 1 or 2 arguments, not %d", name, len(args))
	}
	real, err := g.contain(call(name, args), filepath.Dir(g.current(file)), path)
	if err != nil {
		return cty.NilVal, err
	}
	if st, err := os.Stat(real); err == nil && st.IsDir() {
		real = config.GetDefaultConfigPath(real)
	}
	var def *cty.Value
	if len(args) == 2 {
		def = &args[1]
	}
	g.mu.Lock()
	g.read[real] = true
	g.mu.Unlock()
	return config.ParseTerragruntConfig(g.ctx, g.log, real, def)
}

// readTFVars is read_tfvars_file(path), as Terragrunt's: a .json file's
// text, or an HCL tfvars file as JSON.
func (g *guard) readTFVars(file string, args []cty.Value) (cty.Value, error) {
	const name = "read_tfvars_file"
	path, err := stringArg(name, args, 0)
	if err != nil {
		return cty.NilVal, err
	}
	real, err := g.contain(call(name, args), filepath.Dir(g.current(file)), path)
	if err != nil {
		return cty.NilVal, err
	}
	g.ctx.TerragruntOptions.AppendReadFile(real, g.ctx.TerragruntOptions.WorkingDir)
	text, err := os.ReadFile(real)
	if err != nil {
		return cty.NilVal, fmt.Errorf("%s: %w", call(name, args), err)
	}
	var vars map[string]any
	if strings.HasSuffix(real, "json") {
		if err := json.Unmarshal(text, &vars); err != nil {
			return cty.NilVal, fmt.Errorf("%s: not JSON: %w", call(name, args), err)
		}
		return cty.StringVal(string(text)), nil
	}
	if err := config.ParseAndDecodeVarFile(g.log, g.ctx.TerragruntOptions, real, text, &vars); err != nil {
		return cty.NilVal, err
	}
	data, err := json.Marshal(vars)
	if err != nil {
		return cty.NilVal, err
	}
	return cty.StringVal(string(data)), nil
}

// findInParents is find_in_parent_folders([name[, fallback]]): the
// folders above the current configuration are searched as Terragrunt
// searches them, but only up to the root: a file above the tree is not
// looked for, let alone read.
func (g *guard) findInParents(file string, args []cty.Value) (cty.Value, error) {
	const name = "find_in_parent_folders"
	if len(args) > 2 {
		return cty.NilVal, fmt.Errorf("%s takes at most 2 arguments, not %d", name, len(args))
	}
	want := ""
	if len(args) > 0 {
		s, err := stringArg(name, args, 0)
		if err != nil {
			return cty.NilVal, err
		}
		want = s
	}
	from := g.current(file)
	for dir := filepath.Dir(from); dir != g.root && strings.HasPrefix(dir, g.root); {
		dir = filepath.Dir(dir)
		candidate := config.GetDefaultConfigPath(dir)
		if want != "" && want != config.DefaultTerragruntConfigPath {
			candidate = filepath.Join(dir, want)
		}
		if _, err := g.contain(call(name, args), dir, candidate); err != nil {
			return cty.NilVal, err
		}
		if st, err := os.Stat(candidate); err == nil && !st.IsDir() {
			return cty.StringVal(candidate), nil
		}
	}
	if len(args) == 2 {
		return args[1], nil
	}
	return cty.NilVal, fmt.Errorf("%s: no such file in the folders above %s up to the folder being imported (folders above that are not read): import the folder that holds it", call(name, args), g.rel(from))
}

// includePath checks an include block's path (resolved against the
// current configuration, as Terragrunt resolves it) and returns it as
// written.
func (g *guard) includePath(file string, args []cty.Value) (cty.Value, error) {
	path, err := stringArg("include path", args, 0)
	if err != nil {
		return cty.NilVal, err
	}
	if _, err := g.contain(call(includePathFunc, args), filepath.Dir(g.current(file)), path); err != nil {
		return cty.NilVal, err
	}
	return args[0], nil
}

// fileset is OpenTofu's fileset(path, pattern), resolving against the
// calling file's folder: the folder the pattern starts from must be
// inside the root, and so must every match.
func (g *guard) fileset(file string, args []cty.Value) (cty.Value, error) {
	const name = "fileset"
	path, err := stringArg(name, args, 0)
	if err != nil {
		return cty.NilVal, err
	}
	pattern, err := stringArg(name, args, 1)
	if err != nil {
		return cty.NilVal, err
	}
	what := fmt.Sprintf("fileset(%q, %q)", path, pattern)
	base := filepath.Dir(file)
	if !filepath.IsAbs(path) {
		path = filepath.Join(base, path)
	}
	full := filepath.Join(path, pattern)
	if _, err := g.contain(what, base, globFolder(full)); err != nil {
		return cty.NilVal, err
	}
	matches, err := doublestar.Glob(full)
	if err != nil {
		return cty.NilVal, fmt.Errorf("%s: %w", what, err)
	}
	var vals []cty.Value
	for _, m := range matches {
		real, err := g.contain(what, base, m)
		if err != nil {
			return cty.NilVal, err
		}
		if st, err := os.Stat(real); err != nil || !st.Mode().IsRegular() {
			continue
		}
		rel, err := filepath.Rel(path, m)
		if err != nil {
			return cty.NilVal, err
		}
		vals = append(vals, cty.StringVal(filepath.ToSlash(rel)))
	}
	if len(vals) == 0 {
		return cty.SetValEmpty(cty.String), nil
	}
	return cty.SetVal(vals), nil
}

// globFolder is the folder a glob pattern starts from: its path up to the
// first part holding a pattern character.
func globFolder(pattern string) string {
	parts := strings.Split(filepath.ToSlash(pattern), "/")
	for i, p := range parts {
		if strings.ContainsAny(p, "*?[{\\") {
			return filepath.FromSlash(strings.Join(parts[:i], "/"))
		}
	}
	return filepath.Dir(pattern)
}

// rel is path relative to the root, with forward slashes.
func (g *guard) rel(path string) string { return relSlash(g.root, path) }
