package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/gruntwork-io/terragrunt/config"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// fill copies what Terragrunt evaluated into u, resolving markers: an
// input that is exactly a dependency's output becomes a ref; an input
// holding a marker anywhere else is left out and named in a finding.
func (p *parser) fill(u *Unit, cfg *config.TerragruntConfig, sc *scan) {
	u.Untranslatable = append(u.Untranslatable, sc.findings...)
	if cfg.Terraform != nil && cfg.Terraform.Source != nil {
		u.Source, u.SourcePos = *cfg.Terraform.Source, sc.sourcePos
		if ms := findMarkers(u.Source); len(ms) > 0 {
			u.untranslatable(sc.sourcePos, "terraform.source", "its value comes from "+describe(ms))
			u.Source = ""
		}
	}
	p.inputs(u, cfg.Inputs, sc)
	if len(sc.inputPos) > 0 {
		u.InputPos = sc.inputPos
	}
	p.dependencies(u, cfg, sc)
	p.remoteState(u, cfg, sc)
	p.generate(u, cfg, sc)
	if cfg.PreventDestroy != nil {
		u.PreventDestroy = *cfg.PreventDestroy
	}
	sort.SliceStable(u.Untranslatable, func(i, j int) bool { return posLess(u.Untranslatable[i].Pos, u.Untranslatable[j].Pos) })
}

func (u *Unit) untranslatable(pos, what, why string) {
	u.Untranslatable = append(u.Untranslatable, Finding{Pos: pos, What: what, Why: why})
}

func (p *parser) inputs(u *Unit, inputs map[string]any, sc *scan) {
	for name, v := range inputs {
		if r, ok := asRef(v); ok {
			if u.Refs == nil {
				u.Refs = map[string]OutputRef{}
			}
			u.Refs[name] = r
			continue
		}
		if r, ok := asInputRef(v); ok {
			if u.InputRefs == nil {
				u.InputRefs = map[string]InputRef{}
			}
			u.InputRefs[name] = r
			continue
		}
		if ms := findMarkers(v); len(ms) > 0 {
			pos := sc.inputPos[name]
			if pos == "" {
				pos = sc.inputs
			}
			u.untranslatable(pos, "inputs."+name, "left out: its value comes from "+describe(ms))
			continue
		}
		if u.Inputs == nil {
			u.Inputs = map[string]any{}
		}
		u.Inputs[name] = v
	}
}

// describe says what markers stood for.
func describe(ms []found) string {
	parts := make([]string, 0, len(ms))
	for _, m := range ms {
		switch m.kind {
		case "dependency":
			parts = append(parts, "dependency."+strings.Replace(m.detail, ".", ".outputs.", 1)+" inside an expression (knit's valueFrom takes an output, or one element of a list output, as it is)")
		case "dependency-inputs":
			parts = append(parts, "dependency."+strings.Replace(m.detail, ".", ".inputs.", 1)+" (the import reads no other unit's inputs through a dependency: set the value by hand)")
		case "get_env":
			parts = append(parts, fmt.Sprintf("get_env(%q) with no default (the import reads no environment variables)", m.detail))
		default:
			parts = append(parts, fmt.Sprintf("%s(%s), which the import does not call", m.kind, m.detail))
		}
	}
	return strings.Join(parts, "; ")
}

func (p *parser) dependencies(u *Unit, cfg *config.TerragruntConfig, sc *scan) {
	dir := filepath.Join(p.root, filepath.FromSlash(u.Path))
	for _, d := range cfg.TerragruntDependencies {
		dep := Dependency{Name: d.Name, Pos: sc.depPos[d.Name], Enabled: d.Enabled == nil || *d.Enabled,
			SkipOutputs: d.SkipOutputs != nil && *d.SkipOutputs}
		if d.ConfigPath.Type() == cty.String && d.ConfigPath.IsKnown() && !d.ConfigPath.IsNull() {
			dep.Unit, dep.Outside = p.unitAt(dir, d.ConfigPath.AsString())
		}
		if d.MockOutputs != nil && !d.MockOutputs.IsNull() {
			dep.MockOutputs = toGo(*d.MockOutputs)
		}
		u.Dependencies = append(u.Dependencies, dep)
	}
	if cfg.Dependencies == nil {
		return
	}
	seen := map[string]bool{}
	for _, path := range cfg.Dependencies.Paths {
		unit, outside := p.unitAt(dir, path)
		if outside != "" {
			u.untranslatable(sc.inputs, "dependencies "+path, "the folder is outside the tree being imported")
			continue
		}
		if !seen[unit] {
			seen[unit] = true
			u.DependsOn = append(u.DependsOn, unit)
		}
	}
	sort.Strings(u.DependsOn)
}

// unitAt is the unit folder path names (relative to dir), relative to the
// root; or, when it is not under the root, path as written.
func (p *parser) unitAt(dir, path string) (unit, outside string) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	path = filepath.Clean(path)
	if strings.HasSuffix(path, ".hcl") || strings.HasSuffix(path, ".json") {
		path = filepath.Dir(path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	if real != p.root && !strings.HasPrefix(real, p.root+string(filepath.Separator)) {
		return "", path
	}
	return p.rel(real), ""
}

func (p *parser) remoteState(u *Unit, cfg *config.TerragruntConfig, sc *scan) {
	rs := cfg.RemoteState
	if rs == nil || rs.Config == nil {
		return
	}
	out := &RemoteState{Backend: rs.BackendName, Pos: sc.statePos, DisableInit: rs.DisableInit}
	if rs.Generate != nil {
		out.File = rs.Generate.Path
	}
	code, err := p.backendCode(cfg)
	if err != nil {
		u.untranslatable(sc.statePos, "remote_state", "Terragrunt could not render its backend: "+p.relErr(err))
		return
	}
	out.Code = code
	if ms := findMarkers(code); len(ms) > 0 {
		u.untranslatable(sc.statePos, "remote_state", "left out: its configuration comes from "+describe(ms))
		return
	}
	u.RemoteState = out
}

// backendCode is the backend block Terragrunt writes for the unit's
// remote_state, rendered by Terragrunt itself into a scratch folder (as
// its generate attribute does; Terragrunt-only settings such as bucket
// tags are left out as Terragrunt leaves them out).
func (p *parser) backendCode(cfg *config.TerragruntConfig) (string, error) {
	rs := *cfg.RemoteState
	conf := *rs.Config
	// Generate's type is internal to Terragrunt: a fresh one by reflection.
	field := reflect.ValueOf(&conf).Elem().FieldByName("Generate")
	gen := reflect.New(field.Type().Elem())
	if !field.IsNil() {
		gen.Elem().Set(field.Elem())
	} else {
		gen.Elem().FieldByName("IfExists").SetString("overwrite")
	}
	gen.Elem().FieldByName("Path").SetString("backend.tf")
	field.Set(gen)
	rs.Config = &conf
	dir, err := os.MkdirTemp("", "knit-terragrunt-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	opts, err := p.options(filepath.Join(dir, "terragrunt.hcl"))
	if err != nil {
		return "", err
	}
	if err := rs.GenerateOpenTofuCode(p.log, opts); err != nil {
		return "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, "backend.tf"))
	return string(b), err
}

func (p *parser) generate(u *Unit, cfg *config.TerragruntConfig, sc *scan) {
	names := make([]string, 0, len(cfg.GenerateConfigs))
	for name := range cfg.GenerateConfigs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		g := cfg.GenerateConfigs[name]
		pos := sc.genPos[name]
		switch {
		case g.Disable:
			continue
		case len(findMarkers(g.Contents))+len(findMarkers(g.Path)) > 0:
			u.untranslatable(pos, "generate "+name, "left out: its contents come from "+describe(append(findMarkers(g.Contents), findMarkers(g.Path)...)))
			continue
		case g.IfExistsStr == "skip":
			u.untranslatable(pos, "generate "+name, "if_exists = \"skip\": knit's overlay replaces a module file of the same name; check the module has none")
		case g.IfExistsStr == "error":
			u.untranslatable(pos, "generate "+name, "if_exists = \"error\": knit's overlay replaces a module file of the same name without an error")
		}
		u.Generate = append(u.Generate, Generate{Name: name, Path: g.Path, Contents: g.Contents, IfExists: g.IfExistsStr, Pos: pos})
	}
}

// toGo is v as plain Go values (maps, slices, strings, float64, bool).
func toGo(v cty.Value) map[string]any {
	b, err := ctyjson.Marshal(v, v.Type())
	if err != nil {
		return map[string]any{"error": err.Error()}
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return map[string]any{"value": string(b)}
	}
	return out
}

// posLess orders file:line positions by file, then line.
func posLess(a, b string) bool {
	fa, la := splitPos(a)
	fb, lb := splitPos(b)
	if fa != fb {
		return fa < fb
	}
	return la < lb
}

func splitPos(p string) (string, int) {
	i := strings.LastIndex(p, ":")
	if i < 0 {
		return p, 0
	}
	n := 0
	fmt.Sscanf(p[i+1:], "%d", &n)
	return p[:i], n
}
