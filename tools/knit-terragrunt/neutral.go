package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// Terragrunt functions the import never runs, and why. Each call stands
// in as a marker (see marker) that the unit's findings name, at the call's
// file:line (scan.go). The configuration being imported has not been
// reviewed: it must not run commands (run_cmd), reach a cloud with the
// importer's credentials (get_aws_*, sops_decrypt_file's key services) or
// copy the importer's environment (get_env) into a file.
var neutralized = map[string]string{
	"run_cmd":                         "runs a command; the import never runs one: set the value by hand",
	"sops_decrypt_file":               "decrypts a secret; knit keeps secrets out of environment files: pass it as a secret",
	"get_aws_account_id":              "asks AWS with the importer's credentials; the import does not: set the value by hand",
	"get_aws_account_alias":           "asks AWS with the importer's credentials; the import does not: set the value by hand",
	"get_aws_caller_identity_arn":     "asks AWS with the importer's credentials; the import does not: set the value by hand",
	"get_aws_caller_identity_user_id": "asks AWS with the importer's credentials; the import does not: set the value by hand",
	"get_env":                         "reads the importer's environment, which the import does not copy into files (its default, when given, is used)",
	"get_working_dir":                 "names the folder Terragrunt runs the tool in (its download of the module; Terragrunt's version parses the unit again with none of these guards); knit runs the tool elsewhere: set the value by hand",
}

const markerTag = "\x00knit-terragrunt\x00"

// marker is the value a neutralised call or a dependency output stands in
// as: a string no configuration writes, found again in the evaluated
// values (see findMarkers).
func marker(kind, detail string) string { return markerTag + kind + "\x00" + detail + "\x00" }

// neutralFunctions replaces Terragrunt's functions that act beyond reading
// the tree. get_repo_root and its kin are answered without running git:
// the nearest folder above workDir holding .git, or the root.
func neutralFunctions(root, workDir string) map[string]function.Function {
	fns := map[string]function.Function{}
	for name := range neutralized {
		if name == "get_env" {
			continue
		}
		fns[name] = markerFunc(name)
	}
	fns["get_env"] = function.New(&function.Spec{
		Params:   []function.Parameter{{Name: "name", Type: cty.String}},
		VarParam: &function.Parameter{Name: "default", Type: cty.String},
		Type:     function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			if len(args) > 1 {
				return args[1], nil
			}
			return cty.StringVal(marker("get_env", args[0].AsString())), nil
		},
	})
	repo := repoRoot(root, workDir)
	fns["get_repo_root"] = constFunc(repo)
	fns["get_path_from_repo_root"] = constFunc(relSlash(repo, workDir))
	fns["get_path_to_repo_root"] = constFunc(relSlash(workDir, repo))
	return fns
}

func markerFunc(name string) function.Function {
	return function.New(&function.Spec{
		VarParam: &function.Parameter{Name: "args", Type: cty.DynamicPseudoType, AllowNull: true},
		Type:     function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			var parts []string
			for _, a := range args {
				if a.Type() == cty.String && a.IsKnown() && !a.IsNull() {
					parts = append(parts, a.AsString())
				}
			}
			return cty.StringVal(marker(name, strings.Join(parts, " "))), nil
		},
	})
}

func constFunc(s string) function.Function {
	return function.New(&function.Spec{
		Type: function.StaticReturnType(cty.String),
		Impl: func([]cty.Value, cty.Type) (cty.Value, error) { return cty.StringVal(s), nil },
	})
}

// repoRoot is the nearest folder from dir up to root that holds .git; root
// when none does (the import never looks above the tree).
func repoRoot(root, dir string) string {
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		if d == root || d == filepath.Dir(d) {
			return root
		}
	}
}

func relSlash(from, to string) string {
	r, err := filepath.Rel(from, to)
	if err != nil {
		return to
	}
	return filepath.ToSlash(r)
}

// errOutside says that a file a unit reads is not under the tree.
var errOutside = errors.New("outside the folder being imported")

// inside resolves path's symlinks and returns it when it lies under root
// (itself resolved); otherwise an error naming it.
func inside(root, path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
		return "", fmt.Errorf("%s is %w %s: import a folder that holds it", path, errOutside, root)
	}
	return real, nil
}
