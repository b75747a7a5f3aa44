package spec

import (
	"fmt"
	"path"
	"path/filepath"
	"reflect"
	"strings"

	"knit.dev/knit/internal/diag"
)

// applyOverrides applies env's spec.overrides.components to layers, by
// component name: each field an override writes replaces the base's,
// variables merge by name, remove: true drops the component, and an
// override with a type that names no base component adds one. An override
// of a component the base lacks is an error at the override.
func applyOverrides(env *Environment, layers []*layer) ([]*layer, diag.Diagnostics) {
	if env.Spec.Overrides == nil {
		return layers, nil
	}
	var ds diag.Diagnostics
	var names []string
	for _, l := range layers {
		names = append(names, l.c.Name)
	}
	seen := map[string]bool{}
	for _, o := range env.Spec.Overrides.Components {
		if o.Name == "" {
			ds = append(ds, errAt(env, o.path, "name", "missing required field", "name the component to change"))
			continue
		}
		if seen[o.Name] {
			ds = append(ds, errAt(env, o.path+".name", "", fmt.Sprintf("component %q is overridden twice", o.Name), "merge the two overrides"))
			continue
		}
		seen[o.Name] = true
		opos, obad := cut(env.pos, o.path), cut(env.bad, o.path)
		i := indexOf(layers, o.Name)
		switch {
		case i < 0 && o.Remove:
			ds = append(ds, errAt(env, o.path+".name", "", fmt.Sprintf("remove: there is no component %q to remove", o.Name), hintNames(o.Name, names)))
		case i < 0 && o.Type == "":
			ds = append(ds, errAt(env, o.path+".name", "", fmt.Sprintf("override of component %q: there is no component %q to change", o.Name, o.Name),
				hintNames(o.Name, names)+"; to add a component, give it a type"))
		case i < 0:
			c := o.Component
			delete(opos, ".remove")
			layers = append(layers, &layer{c: &c, pos: opos, bad: obad})
		case o.Remove:
			layers = append(layers[:i:i], layers[i+1:]...)
		default:
			ds = append(ds, override(layers[i], o, opos, obad)...)
		}
	}
	return layers, ds
}

func indexOf(layers []*layer, name string) int {
	for i, l := range layers {
		if l.c.Name == name {
			return i
		}
	}
	return -1
}

func hintNames(name string, names []string) string {
	if h := suggest(name, names); h != "" {
		return h
	}
	return "the components are " + orNone(names)
}

// override changes l's component by o.
func override(l *layer, o *ComponentOverride, opos map[string]diag.Pos, obad map[string]bool) diag.Diagnostics {
	var ds diag.Diagnostics
	for _, k := range o.set {
		switch k {
		case "name", "remove":
		case "variables":
			for j, v := range o.Variables {
				from := fmt.Sprintf(".variables[%d]", j)
				i := -1
				for n, have := range l.c.Variables {
					if have.Name == v.Name && v.Name != "" {
						i = n
					}
				}
				if i < 0 {
					i = len(l.c.Variables)
					l.c.Variables = append(l.c.Variables, v)
				} else {
					l.c.Variables[i] = v
				}
				to := fmt.Sprintf(".variables[%d]", i)
				graft(l.pos, opos, from, to)
				graft(l.bad, obad, from, to)
			}
		default:
			setField(l.c, &o.Component, k)
			graft(l.pos, opos, "."+k, "."+k)
			graft(l.bad, obad, "."+k, "."+k)
		}
	}
	return ds
}

// setField copies the field whose JSON name is key from src to dst
// (pointers to structs of one type).
func setField(dst, src any, key string) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	t := d.Type()
	for i := 0; i < t.NumField(); i++ {
		if jsonName(t.Field(i)) == key {
			d.Field(i).Set(s.Field(i))
			return
		}
	}
}

// jsonFields lists the JSON names of a struct's fields.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if n := jsonName(t.Field(i)); n != "" && n != "-" {
			out = append(out, n)
		}
	}
	return out
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	return name
}

// rebase makes the local paths of c, written relative to from, relative
// to to: a template's or an extended file's components keep reading the
// files next to where they were written.
func rebase(c *Component, from, to string) {
	forLocalPaths(c, func(_ string, p *string) { *p = relocate(*p, from, to) })
}

// relocate makes p, relative to folder from, relative to folder to.
// Absolute and home (~) paths stay as they are.
func relocate(p, from, to string) string {
	from, to = absDir(from), absDir(to)
	if p == "" || from == to || filepath.IsAbs(p) || strings.HasPrefix(p, "~") {
		return p
	}
	rel, err := filepath.Rel(to, filepath.Join(from, p))
	if err != nil {
		return p
	}
	rel = filepath.ToSlash(rel)
	if rel != "." && rel != ".." && !strings.HasPrefix(rel, "../") {
		rel = "./" + rel
	}
	return rel
}

// forLocalPaths calls f with every path of c that is read from the
// environment's folder, and names the field.
func forLocalPaths(c *Component, f func(field string, p *string)) {
	if m := c.Module; m != nil && IsLocalPath(m.Source) {
		f("module.source", &m.Source)
	}
	if vf := c.VariablesFile; vf != nil {
		switch {
		case vf.Source == "":
			f("variablesFile.path", &vf.Path)
		case IsLocalPath(vf.Source):
			f("variablesFile.source", &vf.Source)
		}
	}
	for i := range c.OverlayFiles {
		o := &c.OverlayFiles[i]
		switch {
		case o.Source == "":
			for j := range o.Paths {
				f(fmt.Sprintf("overlayFiles[%d].paths[%d]", i, j), &o.Paths[j])
			}
		case IsLocalPath(o.Source):
			f(fmt.Sprintf("overlayFiles[%d].source", i), &o.Source)
		}
	}
	if ch := c.Chart; ch != nil {
		if ch.Path != "" && ch.Git == "" && ch.Repo == "" {
			f("chart.path", &ch.Path)
		}
		for i := range ch.ValuesFiles {
			f(fmt.Sprintf("chart.valuesFiles[%d]", i), &ch.ValuesFiles[i])
		}
	}
	if m := c.Manifests; m != nil && m.Path != "" {
		f("manifests.path", &m.Path)
	}
	if k := c.Kubeconfig; k != nil && k.Path != "" {
		f("kubeconfig.path", &k.Path)
	}
}

// gitOrigin is where a template from git was read: the repository, the
// commit, and the template's folder in it.
type gitOrigin struct{ url, commit, sub string }

// rebase turns the local paths of a component from a git template into
// the same files of that repository at that commit: a module becomes a git
// module source, a variables file, overlay or chart path a git one. What
// knit can only read from a local folder (values files, manifests,
// kubeconfig) is an error at the field.
func (g *gitOrigin) rebase(c *Component, t *templateFile, at string) diag.Diagnostics {
	var ds diag.Diagnostics
	inRepo := func(field, p string) (string, bool) {
		q := path.Clean(path.Join(g.sub, filepath.ToSlash(p)))
		if path.IsAbs(p) || q == ".." || strings.HasPrefix(q, "../") {
			ds = append(ds, t.errAt(at+"."+field, fmt.Sprintf("path %q leaves the template's repository", p), ""))
			return "", false
		}
		return q, true
	}
	forLocalPaths(c, func(field string, p *string) {
		q, ok := inRepo(field, *p)
		if !ok {
			return
		}
		switch {
		case field == "module.source":
			src := "git::" + g.url
			if q != "." {
				src += "//" + q
			}
			*p = src + "?ref=" + g.commit
		case field == "variablesFile.path":
			c.VariablesFile.Source, c.VariablesFile.Ref, *p = g.url, g.commit, q
		case strings.HasPrefix(field, "overlayFiles[") && strings.Contains(field, ".paths["):
			var i int
			fmt.Sscanf(field, "overlayFiles[%d]", &i)
			c.OverlayFiles[i].Source, c.OverlayFiles[i].Ref, *p = g.url, g.commit, q
		case field == "chart.path":
			c.Chart.Git, c.Chart.Ref, *p = g.url, g.commit, q
		default:
			ds = append(ds, t.errAt(at+"."+field, fmt.Sprintf("a template from git cannot use the local path %q here", *p),
				"keep the file with the environment, or use a local template"))
		}
	})
	return ds
}
