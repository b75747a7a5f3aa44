package spec

import (
	"sort"

	"gopkg.in/yaml.v3"
)

// Templates and inheritance (knit.dev/v1): an Environment may take its
// components from an EnvironmentTemplate (spec.template, with
// spec.parameters) or from another Environment file (spec.extends), and
// change them with spec.overrides. Loading resolves all of it (resolve.go)
// into a plain Environment whose every field keeps the file:line it came
// from, so diagnostics and `knit render --explain` name the file that
// holds each value.

// KindTemplate is the kind of a template file.
const KindTemplate = "EnvironmentTemplate"

// Annotations a resolved environment carries: what it was built from, with
// each file's content hash or git commit, so that a change to a template
// alone changes the spec a revision records.
const (
	AnnotationTemplate = "knit.dev/template"
	AnnotationExtends  = "knit.dev/extends"
)

// TemplateRef names a template: a local file (Path, relative to the
// environment's folder) or a file of a git repository (Git, at Ref, a tag
// or commit: a pinned version; Path inside the repository).
type TemplateRef struct {
	Path string `json:"path,omitempty"`
	Git  string `json:"git,omitempty"`
	Ref  string `json:"ref,omitempty"`
}

// ExtendsRef names the Environment file an environment is built on,
// relative to the environment's folder.
type ExtendsRef struct {
	Path string `json:"path"`
}

// Overrides change the components a template or an extended file gives.
type Overrides struct {
	Components []*ComponentOverride `json:"components,omitempty"`
}

// ComponentOverride changes the component of the same name: each field it
// writes replaces the base's, variables merge by name, Remove drops the
// component. An override naming no base component adds one, when it has
// a type.
type ComponentOverride struct {
	Component
	Remove bool `json:"remove,omitempty"`

	set  []string // the fields written, by key, sorted
	path string   // the override's field path in its file
}

// Parameter types.
const (
	ParamString = "string"
	ParamNumber = "number"
	ParamBool   = "bool"
	ParamList   = "list"
	ParamMap    = "map"
)

// Parameter is one input a template declares.
type Parameter struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	Default     any    `json:"default,omitempty"`
	Required    bool   `json:"required,omitempty"`
	Enum        []any  `json:"enum,omitempty"`
	Pattern     string `json:"pattern,omitempty"`
	// Promote marks a parameter a release carries from stage to stage of
	// a pipeline (an image tag, a module version): see Options.Promote.
	Promote bool `json:"promote,omitempty"`

	hasDefault bool
	path       string // field path in the template
}

// SourceFile is a file an environment was built from besides its own.
type SourceFile struct {
	// Kind is "template" or "extends".
	Kind string `json:"kind"`
	// Name is the file relative to the environment's folder, or for a
	// git template its path inside the repository.
	Name string `json:"name"`
	// Path is the file on this machine (for a git template, in knit's
	// cache).
	Path string `json:"path"`
	// SHA256 is the hash of the file's content.
	SHA256 string `json:"sha256"`
	// Git and Commit say where a git template came from.
	Git    string `json:"git,omitempty"`
	Commit string `json:"commit,omitempty"`
}

// ID names the file and its version: name@sha256:HASH, or for a git
// template URL@COMMIT:PATH.
func (s SourceFile) ID() string {
	if s.Git != "" {
		return s.Git + "@" + s.Commit + ":" + s.Name
	}
	return s.Name + "@sha256:" + s.SHA256
}

func (d *decoder) templateRef(dst **TemplateRef) field {
	return func(v *yaml.Node, path string) {
		t := &TemplateRef{}
		*dst = t
		d.mapping(v, path, false, map[string]field{
			"path": d.str(&t.Path), "git": d.str(&t.Git), "ref": d.str(&t.Ref),
		})
	}
}

func (d *decoder) extendsRef(dst **ExtendsRef) field {
	return func(v *yaml.Node, path string) {
		e := &ExtendsRef{}
		*dst = e
		d.mapping(v, path, false, map[string]field{"path": d.str(&e.Path)})
	}
}

func (d *decoder) overrides(dst **Overrides) field {
	return func(v *yaml.Node, path string) {
		o := &Overrides{}
		*dst = o
		d.mapping(v, path, false, map[string]field{
			"components": func(v *yaml.Node, path string) {
				d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
					co := &ComponentOverride{path: p}
					fields := d.componentFields(&co.Component)
					fields["remove"] = d.boolean(&co.Remove)
					d.mappingHints(item, p, false, fields, componentHints)
					for k := range fields {
						if _, ok := d.pos[p+"."+k]; ok {
							co.set = append(co.set, k)
						}
					}
					sort.Strings(co.set)
					o.Components = append(o.Components, co)
				})
			},
		})
	}
}

// parameters decodes a template's parameter declarations.
func (d *decoder) parameters(dst *[]*Parameter) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			prm := &Parameter{path: p}
			d.mapping(item, p, false, map[string]field{
				"name":        d.str(&prm.Name),
				"type":        d.str(&prm.Type),
				"description": d.str(&prm.Description),
				"required":    d.boolean(&prm.Required),
				"pattern":     d.str(&prm.Pattern),
				"promote":     d.boolean(&prm.Promote),
				"default": func(v *yaml.Node, path string) {
					prm.Default, prm.hasDefault = d.value(v, path, 0), true
				},
				"enum": func(v *yaml.Node, path string) {
					d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
						prm.Enum = append(prm.Enum, d.value(item, p, 0))
					})
				},
			})
			*dst = append(*dst, prm)
		})
	}
}
