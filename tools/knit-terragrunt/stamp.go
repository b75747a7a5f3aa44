package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	_ "unsafe" // go:linkname, below

	"github.com/gruntwork-io/terragrunt/config/hclparse"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Functions that name a path. Terragrunt offers OpenTofu's file functions
// (which resolve a relative path against the folder of the file calling
// them) and its own (which resolve against the unit); either would read
// whatever path a configuration gives, also outside the tree. knit's
// versions (guard.go) must know which file calls them, which a function
// is not told: stamp adds that file to each call, as a last argument no
// configuration can write (a capsule of site), before Terragrunt
// evaluates the file. A call without it (a JSON configuration, or
// arguments spread with ...) is refused.
var pathFuncs = map[string]bool{
	"file": true, "fileexists": true, "fileset": true, "filebase64": true,
	"filebase64sha256": true, "filebase64sha512": true, "filemd5": true,
	"filesha1": true, "filesha256": true, "filesha512": true, "templatefile": true,
	"read_terragrunt_config": true, "read_tfvars_file": true, "find_in_parent_folders": true,
}

// includePathFunc wraps an include block's path: Terragrunt reads the
// file it names with no function involved, so stamp makes the path an
// argument of this function, which refuses one outside the tree.
const includePathFunc = "knit_include_path"

// site is the configuration file a call is written in (absolute).
type site struct{ file string }

var siteType = cty.Capsule("knit-terragrunt call site", reflect.TypeOf(site{}))

// updateBareIncludeBlock is the file update Terragrunt's parser runs
// before decoding a file (it names a bare include block ""); a parser
// takes one such function, so stamper runs it first.
//
//go:linkname updateBareIncludeBlock github.com/gruntwork-io/terragrunt/config.updateBareIncludeBlock
func updateBareIncludeBlock(file *hclparse.File) error

// stamper stamps each parsed file once. Terragrunt caches parsed files
// across units (a root.hcl is parsed once), so stamping is shared and
// locked.
type stamper struct {
	root string
	mu   sync.Mutex
	done map[*hclsyntax.Body]bool
}

func newStamper(root string) *stamper {
	return &stamper{root: root, done: map[*hclsyntax.Body]bool{}}
}

// update is the parser's file update (hclparse.WithFileUpdate).
func (s *stamper) update(file *hclparse.File) error {
	if err := updateBareIncludeBlock(file); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	body, ok := file.Body.(*hclsyntax.Body)
	if !ok {
		return jsonIncludes(s.root, file) // JSON's calls stay unstamped, and are refused
	}
	if s.done[body] {
		return nil
	}
	stampBody(body, file.ConfigPath)
	s.done[body] = true
	return nil
}

// stampBody adds the call site to every call of a path function in body,
// and wraps each include block's path.
func stampBody(body *hclsyntax.Body, file string) {
	at := func(r hcl.Range) hclsyntax.Expression {
		return &hclsyntax.LiteralValueExpr{Val: cty.CapsuleVal(siteType, &site{file: file}), SrcRange: r}
	}
	hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		if c, ok := n.(*hclsyntax.FunctionCallExpr); ok && pathFuncs[c.Name] && !c.ExpandFinal {
			c.Args = append(c.Args, at(c.Range()))
		}
		return nil
	})
	for _, b := range body.Blocks {
		if b.Type != "include" {
			continue
		}
		if a := b.Body.Attributes["path"]; a != nil {
			r := a.Expr.Range()
			a.Expr = &hclsyntax.FunctionCallExpr{Name: includePathFunc, Args: []hclsyntax.Expression{a.Expr, at(r)}, NameRange: r, OpenParenRange: r, CloseParenRange: r}
		}
	}
}

// siteOf splits a stamped call's arguments into the call's own and its
// site; ok is false for a call stamp did not reach.
func siteOf(args []cty.Value) ([]cty.Value, *site, bool) {
	if len(args) == 0 {
		return args, nil, false
	}
	last := args[len(args)-1]
	if !last.Type().Equals(siteType) || last.IsNull() || !last.IsKnown() {
		return args, nil, false
	}
	return args[:len(args)-1], last.EncapsulatedValue().(*site), true
}

// findCall is a JSON include path that is one find_in_parent_folders call
// with plain string arguments.
var findCall = regexp.MustCompile(`^\$\{find_in_parent_folders\((\s*"[^"$%\\]*"\s*(,\s*"[^"$%\\]*"\s*)?)?\)\}$`)

// jsonIncludes checks the include paths of a JSON configuration (whose
// expressions stamp cannot reach) before Terragrunt reads them: each must
// be a plain string naming a file inside root, resolved against the
// file's folder (a JSON configuration is a unit: included files include
// nothing).
func jsonIncludes(root string, file *hclparse.File) error {
	var doc map[string]any
	if err := json.Unmarshal(file.Bytes, &doc); err != nil {
		return nil // Terragrunt reports it
	}
	var paths []any
	var collect func(v any)
	collect = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if k == "path" {
					paths = append(paths, e)
				} else {
					collect(e)
				}
			}
		case []any:
			for _, e := range v {
				collect(e)
			}
		}
	}
	collect(doc["include"])
	for _, p := range paths {
		s, ok := p.(string)
		if ok && findCall.MatchString(s) {
			continue // find_in_parent_folders is guarded
		}
		if !ok || strings.Contains(s, "${") || strings.Contains(s, "%{") {
			return fmt.Errorf("%s: include path %v: knit-terragrunt reads a JSON configuration's include only from a plain path or one find_in_parent_folders call: write it so, or write the configuration in HCL", file.ConfigPath, p)
		}
		abs := s
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(filepath.Dir(file.ConfigPath), abs)
		}
		real, err := resolveExisting(filepath.Clean(abs))
		if err != nil {
			return fmt.Errorf("%s: include path %q: %w", file.ConfigPath, s, err)
		}
		if real != root && !strings.HasPrefix(real, root+string(filepath.Separator)) {
			return fmt.Errorf("%s: include path %q reads %s, %s: knit-terragrunt reads nothing outside it: copy the file into the tree", file.ConfigPath, s, real, errOutside)
		}
	}
	return nil
}
