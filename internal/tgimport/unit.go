package tgimport

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"knit.dev/knit/internal/spec"
)

// backendOverride is the file a remote_state without generate becomes:
// Terragrunt hands such settings to the module's own backend block with
// -backend-config; an override file sets them on it, and works as well
// where the module declares no backend.
const backendOverride = "backend_override.tf"

// unit adds u's component to its environment.
func (t *translation) unit(u *Unit) {
	for _, f := range u.Untranslatable {
		t.note(u.Path, f.Pos, f.What, f.Why)
	}
	if u.Error != "" {
		t.note(u.Path, u.File, "unit", "not imported: Terragrunt could not evaluate it: "+u.Error)
		return
	}
	at, ok := t.at[u.Path]
	if !ok {
		return
	}
	mod, why := t.module(u)
	if mod == nil {
		t.note(u.Path, orPos(u.SourcePos, u.File), "terraform.source "+u.Source, "not imported: "+why)
		return
	}
	c := &spec.Component{Name: at.component, Type: spec.TypeTerraform, Module: mod, DestroyProtection: u.PreventDestroy}
	for _, o := range t.pendingOutputs[at] {
		c.Outputs = append(c.Outputs, spec.Output{Name: o})
	}
	t.variables(u, at, c)
	t.dependsOn(u, at, c)
	t.files(u, c)
	t.pruneUndeclared(u, c)
	e := t.env(at.env)
	e.Spec.Components = append(e.Spec.Components, c)
}

func orPos(pos, file string) string {
	if pos != "" {
		return pos
	}
	return file
}

// variables carries inputs as variables, and inputs that are a
// dependency's output as valueFrom that output (declared on the
// upstream component).
func (t *translation) variables(u *Unit, at placed, c *spec.Component) {
	deps := map[string]Dependency{}
	for _, d := range u.Dependencies {
		deps[d.Name] = d
		if len(d.MockOutputs) > 0 {
			mock, _ := json.Marshal(d.MockOutputs)
			t.note(u.Path, d.Pos, "dependency "+d.Name+" mock_outputs", "not copied: "+string(mock)+"; knit plans a component before its upstream is applied with the upstream plan's known values")
		}
		if !d.Enabled {
			t.note(u.Path, d.Pos, "dependency "+d.Name, "enabled = false: its outputs are only mocks in Terragrunt")
		}
	}
	names := make([]string, 0, len(u.Inputs)+len(u.Refs)+len(u.InputRefs))
	for n := range u.Inputs {
		names = append(names, n)
	}
	for n := range u.Refs {
		names = append(names, n)
	}
	for n := range u.InputRefs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if r, ok := u.InputRefs[n]; ok {
			if v, why := t.inputOf(deps[r.Dependency], r); why == "" {
				c.Variables = append(c.Variables, spec.Variable{Name: n, Value: v})
			} else {
				t.note(u.Path, orPos(u.InputPos[n], u.File), "inputs."+n, "left out: "+why)
			}
			continue
		}
		if r, ok := u.Refs[n]; ok {
			if vf, why := t.valueFrom(deps[r.Dependency], r, at); vf != "" {
				c.Variables = append(c.Variables, spec.Variable{Name: n, ValueFrom: spec.ValueFrom(vf)})
			} else {
				t.note(u.Path, deps[r.Dependency].Pos, "inputs."+n, "left out: "+why)
			}
			continue
		}
		c.Variables = append(c.Variables, spec.Variable{Name: n, Value: u.Inputs[n]})
	}
}

// inputOf is the value of the input r names, as the dependency's unit
// sets it (Terragrunt's dependency.NAME.inputs); or why there is none.
func (t *translation) inputOf(d Dependency, r InputRef) (any, string) {
	ref := fmt.Sprintf("dependency.%s.inputs.%s", r.Dependency, r.Input)
	if d.Name == "" || d.Unit == "" {
		return nil, ref + " names no dependency block of a unit in the tree"
	}
	for i := range t.d.Units {
		up := &t.d.Units[i]
		if up.Path != d.Unit {
			continue
		}
		if v, ok := up.Inputs[r.Input]; ok {
			return v, ""
		}
		return nil, fmt.Sprintf("%s: unit %s has no such input the import could read as a value", ref, d.Unit)
	}
	return nil, fmt.Sprintf("%s reads unit %s, which is not imported", ref, d.Unit)
}

// valueFrom is knit's reference to r, declaring the output upstream; or
// why there is none.
func (t *translation) valueFrom(d Dependency, r OutputRef, at placed) (string, string) {
	ref := fmt.Sprintf("dependency.%s.outputs.%s", r.Dependency, r.Output)
	switch {
	case d.Name == "":
		return "", ref + " names no dependency block"
	case d.Outside != "":
		return "", fmt.Sprintf("%s reads %s, outside the tree being imported", ref, d.Outside)
	}
	up, ok := t.at[d.Unit]
	switch {
	case !ok:
		return "", fmt.Sprintf("%s reads unit %s, which is not imported", ref, d.Unit)
	case up.env != at.env:
		return "", fmt.Sprintf("%s reads unit %s of environment %s; knit's valueFrom reads components of the same environment: set the value by hand", ref, d.Unit, t.envNames[up.env])
	}
	upc := t.component(up)
	if upc != nil && upc.Output(r.Output) == nil {
		upc.Outputs = append(upc.Outputs, spec.Output{Name: r.Output})
	} else if upc == nil {
		t.pendingOutputs[up] = appendOnce(t.pendingOutputs[up], r.Output)
	}
	vf := up.component + "." + r.Output
	if r.Index != nil {
		vf += fmt.Sprintf("[%d]", *r.Index)
	}
	return vf, ""
}

func appendOnce(list []string, s string) []string {
	for _, e := range list {
		if e == s {
			return list
		}
	}
	return append(list, s)
}

// component is the component already translated at p, or nil.
func (t *translation) component(p placed) *spec.Component {
	if e := t.envs[p.env]; e != nil {
		return e.Component(p.component)
	}
	return nil
}

// dependsOn orders the component after the units its dependency blocks
// and dependencies block name, where valueFrom does not already.
func (t *translation) dependsOn(u *Unit, at placed, c *spec.Component) {
	implied := map[string]bool{}
	for _, v := range c.Variables {
		if v.ValueFrom != "" {
			implied[strings.SplitN(string(v.ValueFrom), ".", 2)[0]] = true
		}
	}
	seen := map[string]bool{}
	for _, d := range u.Dependencies {
		if d.Unit != "" {
			seen[d.Unit] = true
		} else if d.Outside != "" {
			t.note(u.Path, d.Pos, "dependency "+d.Name, "its config_path "+d.Outside+" is outside the tree being imported")
		}
	}
	for _, p := range u.DependsOn {
		seen[p] = true
	}
	units := make([]string, 0, len(seen))
	for p := range seen {
		units = append(units, p)
	}
	sort.Strings(units)
	for _, p := range units {
		up, ok := t.at[p]
		switch {
		case !ok:
			t.note(u.Path, u.File, "dependency on "+p, "that unit is not imported")
		case up.env != at.env:
			t.note(u.Path, u.File, "dependency on "+p, "that unit is in environment "+t.envNames[up.env]+"; knit orders components within one environment")
		case !implied[up.component] && up.component != c.Name:
			c.DependsOn = append(c.DependsOn, up.component)
		}
	}
}

// files carries remote_state and generate blocks as overlayData: the
// files Terragrunt would write into the module.
func (t *translation) files(u *Unit, c *spec.Component) {
	if rs := u.RemoteState; rs != nil {
		file := rs.File
		if file == "" {
			file = backendOverride
		}
		c.OverlayData = append(c.OverlayData, spec.OverlayData{Name: file, Data: rs.Code})
		if rs.DisableInit {
			t.note(u.Path, rs.Pos, "remote_state.disable_init", "knit initialises every module with its backend")
		}
	}
	for _, g := range u.Generate {
		p := path.Clean(g.Path)
		if path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../") {
			t.note(u.Path, g.Pos, "generate "+g.Name, "left out: its path "+g.Path+" is outside the module")
			continue
		}
		c.OverlayData = append(c.OverlayData, spec.OverlayData{Name: p, Data: g.Contents})
	}
}
