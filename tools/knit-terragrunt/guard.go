package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/gruntwork-io/terragrunt/config"
	"github.com/gruntwork-io/terragrunt/pkg/log"
	tflang "github.com/hashicorp/terraform/lang"
	"github.com/hashicorp/terraform/lang/funcs"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// guard holds knit's versions of the functions that name a path (see
// pathFuncs), for one unit: each resolves its path as Terragrunt would,
// then refuses it unless it lies inside the tree once symlinks are
// resolved, before anything there is opened. OpenTofu's file functions
// resolve against the calling file's folder; Terragrunt's against the
// configuration being parsed (the unit, or a file read_terragrunt_config
// reads).
type guard struct {
	root string
	unit string // the unit's configuration file
	ctx  *config.ParsingContext
	log  log.Logger

	mu   sync.Mutex
	read map[string]bool // files read_terragrunt_config parsed
}

func newGuard(root, unit string, ctx *config.ParsingContext, l log.Logger) *guard {
	return &guard{root: root, unit: unit, ctx: ctx, log: l, read: map[string]bool{}}
}

// functions are the guarded functions, to stand in for Terragrunt's and
// OpenTofu's.
func (g *guard) functions() map[string]function.Function {
	fns := map[string]function.Function{}
	for name := range pathFuncs {
		fns[name] = g.stamped(name)
	}
	fns[includePathFunc] = g.stamped(includePathFunc)
	return fns
}

// unitRelative are the functions that resolve against the configuration
// being parsed rather than the calling file.
var unitRelative = map[string]bool{"read_terragrunt_config": true, "read_tfvars_file": true, "find_in_parent_folders": true}

// stamped is the function name, called with the site stamp added.
func (g *guard) stamped(name string) function.Function {
	return function.New(&function.Spec{
		VarParam: &function.Parameter{Name: "args", Type: cty.DynamicPseudoType, AllowNull: true},
		Type:     function.StaticReturnType(cty.DynamicPseudoType),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			args, at, ok := siteOf(args)
			if !ok && unitRelative[name] {
				// A JSON configuration's call: Terragrunt's functions act
				// for the unit (wrong only for a JSON file that
				// read_terragrunt_config reads, and still inside the tree).
				return g.call(name, g.unit, args)
			}
			if !ok {
				return cty.NilVal, fmt.Errorf("%s: knit-terragrunt cannot tell which file calls it (a JSON configuration, or arguments spread with ...), so it reads nothing for it: write the call in HCL with plain arguments", call(name, args))
			}
			return g.call(name, at.file, args)
		},
	})
}

// call runs function name, written in file, on args.
func (g *guard) call(name, file string, args []cty.Value) (cty.Value, error) {
	switch name {
	case "read_terragrunt_config":
		return g.readConfig(file, args)
	case "read_tfvars_file":
		return g.readTFVars(file, args)
	case "find_in_parent_folders":
		return g.findInParents(file, args)
	case includePathFunc:
		return g.includePath(file, args)
	case "fileset":
		return g.fileset(file, args)
	}
	return g.fileFunc(name, filepath.Dir(file), args)
}

// fileFunc is one of OpenTofu's file functions, resolving against base,
// with its path checked first and passed on resolved (so a symlink
// swapped in later does not lead elsewhere).
func (g *guard) fileFunc(name, base string, args []cty.Value) (cty.Value, error) {
	path, err := stringArg(name, args, 0)
	if err != nil {
		return cty.NilVal, err
	}
	real, err := g.contain(call(name, args), base, path)
	if err != nil {
		return cty.NilVal, err
	}
	tofu := (&tflang.Scope{BaseDir: base}).Functions()
	fn := tofu[name]
	if name == "templatefile" {
		fn = funcs.MakeTemplateFileFunc(base, func() map[string]function.Function { return g.templateFunctions(tofu, base) })
	}
	return fn.Call(append([]cty.Value{cty.StringVal(real)}, args[1:]...))
}

// templateFunctions are the functions a template in base calls: OpenTofu's,
// with the file functions guarded.
func (g *guard) templateFunctions(tofu map[string]function.Function, base string) map[string]function.Function {
	fns := maps.Clone(tofu)
	for name := range fns {
		if name == "fileset" || strings.HasPrefix(name, "file") || name == "templatefile" {
			fns[name] = g.bound(name, base)
		}
	}
	return fns
}

// bound is the guarded function name for a template in base (templates
// are not stamped: their folder is known).
func (g *guard) bound(name, base string) function.Function {
	return function.New(&function.Spec{
		VarParam: &function.Parameter{Name: "args", Type: cty.DynamicPseudoType, AllowNull: true},
		Type:     function.StaticReturnType(cty.DynamicPseudoType),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if name == "fileset" {
				return g.fileset(filepath.Join(base, "template"), args)
			}
			return g.fileFunc(name, base, args)
		},
	})
}

// contain resolves path (as written in what) against base and returns it
// with its symlinks resolved, or an error when it is outside the root. A
// path that does not exist is checked through its nearest existing
// folder (the function then says it is missing).
func (g *guard) contain(what, base, path string) (string, error) {
	if strings.HasPrefix(path, "~") {
		return "", fmt.Errorf("%s reads from the importer's home folder, %s: knit-terragrunt reads nothing outside it: copy the file into the tree", what, errOutside)
	}
	abs := path
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(base, abs)
	}
	real, err := resolveExisting(filepath.Clean(abs))
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if real != g.root && !strings.HasPrefix(real, g.root+string(filepath.Separator)) {
		return "", fmt.Errorf("%s reads %s, %s: knit-terragrunt reads nothing outside it: copy the file into the tree", what, real, errOutside)
	}
	return real, nil
}

// resolveExisting is path with every symlink resolved; the part below
// its nearest existing folder is joined on unresolved.
func resolveExisting(path string) (string, error) {
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !errors.Is(err, os.ErrNotExist) || p == filepath.Dir(p) {
			return "", err
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// current is the configuration Terragrunt's own functions resolve
// against when called in file: file itself when read_terragrunt_config
// read it, else the unit (an included file's calls act for the unit).
func (g *guard) current(file string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.read[file] {
		return file
	}
	return g.unit
}

// call is how a call reads in an error: name("first argument", ...).
func call(name string, args []cty.Value) string {
	if name == includePathFunc {
		name = "include path"
	}
	if len(args) > 0 && args[0].Type() == cty.String && args[0].IsKnown() && !args[0].IsNull() {
		more := ""
		if len(args) > 1 {
			more = ", …"
		}
		return fmt.Sprintf("%s(%q%s)", name, args[0].AsString(), more)
	}
	return name + "(…)"
}

func stringArg(name string, args []cty.Value, i int) (string, error) {
	if len(args) <= i || args[i].IsNull() || args[i].Type() != cty.String {
		return "", fmt.Errorf("%s: argument %d must be a string", name, i+1)
	}
	return args[i].AsString(), nil
}
