package spec

import (
	"fmt"
	"regexp"
	"strings"

	"knit.dev/knit/internal/diag"
)

var zlocalRef = regexp.MustCompile(`\$\{zlocals\.([A-Za-z0-9_-]+)\}`)

// substituteZLocals replaces ${zlocals.NAME} in every string a component
// carries with the zlocal's value, reporting names that are not defined.
func substituteZLocals(env *Environment) diag.Diagnostics {
	var diags diag.Diagnostics
	values := map[string]string{}
	for i, l := range env.Spec.ZLocals {
		p := fmt.Sprintf("spec.zlocals[%d]", i)
		if l.Name == "" {
			if !env.bad[p+".name"] && !env.bad[p] {
				diags = append(diags, errAt(env, p, "name", "missing required field", ""))
			}
			continue
		}
		if _, dup := values[l.Name]; dup {
			diags = append(diags, errAt(env, p+".name", "", fmt.Sprintf("zlocal %q is defined twice", l.Name), "remove one of them"))
		}
		values[l.Name] = l.Value
	}
	sub := func(path, s string) string {
		if !strings.Contains(s, "${zlocals.") {
			return s
		}
		return zlocalRef.ReplaceAllStringFunc(s, func(m string) string {
			name := zlocalRef.FindStringSubmatch(m)[1]
			v, ok := values[name]
			if !ok {
				diags = append(diags, errAt(env, path, "", fmt.Sprintf("zlocal %q is not defined", name),
					"define it under spec.zlocals, or fix the name"))
				return m
			}
			return v
		})
	}
	for i, c := range env.Spec.Components {
		walkStrings(fmt.Sprintf("spec.components[%d]", i), c, sub)
	}
	return diags
}

// walkStrings applies f to every user-written string of a component.
func walkStrings(path string, c *Component, f func(path, s string) string) {
	if m := c.Module; m != nil {
		m.Source = f(path+".module.source", m.Source)
		m.Name = f(path+".module.name", m.Name)
		m.Path = f(path+".module.path", m.Path)
		m.Version = f(path+".module.version", m.Version)
	}
	if vf := c.VariablesFile; vf != nil {
		vf.Source = f(path+".variablesFile.source", vf.Source)
		vf.Path = f(path+".variablesFile.path", vf.Path)
		vf.Ref = f(path+".variablesFile.ref", vf.Ref)
	}
	for i := range c.OverlayFiles {
		o := &c.OverlayFiles[i]
		op := fmt.Sprintf("%s.overlayFiles[%d]", path, i)
		o.Source = f(op+".source", o.Source)
		o.Ref = f(op+".ref", o.Ref)
		for j := range o.Paths {
			o.Paths[j] = f(fmt.Sprintf("%s.paths[%d]", op, j), o.Paths[j])
		}
	}
	for i := range c.OverlayData {
		c.OverlayData[i].Data = f(fmt.Sprintf("%s.overlayData[%d].data", path, i), c.OverlayData[i].Data)
	}
	for i := range c.Variables {
		vp := fmt.Sprintf("%s.variables[%d].value", path, i)
		c.Variables[i].Value = walkValue(vp, c.Variables[i].Value, f)
	}
	if ch := c.Chart; ch != nil {
		ch.Path = f(path+".chart.path", ch.Path)
		ch.Values, _ = walkValue(path+".chart.values", ch.Values, f).(map[string]any)
	}
	if s := c.Script; s != nil {
		s.Apply = f(path+".script.apply", s.Apply)
		s.Destroy = f(path+".script.destroy", s.Destroy)
		s.Plan = f(path+".script.plan", s.Plan)
	}
}

func walkValue(path string, v any, f func(path, s string) string) any {
	switch x := v.(type) {
	case string:
		return f(path, x)
	case []any:
		for i := range x {
			x[i] = walkValue(fmt.Sprintf("%s[%d]", path, i), x[i], f)
		}
	case map[string]any:
		for k := range x {
			x[k] = walkValue(path+"."+k, x[k], f)
		}
	}
	return v
}
