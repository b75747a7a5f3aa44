package tfmodule

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// TfvarsNames returns the variable names a .tfvars (or .tfvars.json, by
// name) file sets, sorted. An error means the file cannot be parsed: the
// tool would refuse it too.
func TfvarsNames(name string, data []byte) ([]string, error) {
	f, diags := parseHCL(name, data)
	if diags.HasErrors() || f == nil {
		m := &Module{}
		m.problem(name, diags)
		return nil, errors.New(m.Problems[0].String())
	}
	attrs, diags := f.Body.JustAttributes()
	if diags.HasErrors() {
		m := &Module{}
		m.problem(name, diags)
		return nil, errors.New(m.Problems[0].String())
	}
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// ReadTfvarsNames is TfvarsNames for the file at p in fsys.
func ReadTfvarsNames(fsys fs.FS, p, name string) ([]string, error) {
	data, err := readFile(fsys, p)
	if err != nil {
		return nil, err
	}
	return TfvarsNames(name, data)
}

// AutoTfvarsNames returns every name the module's own variables files
// (Module.Tfvars, in folder dir of fsys) set.
func (m *Module) AutoTfvarsNames(fsys fs.FS, dir, name string) ([]string, error) {
	var all []string
	for _, f := range m.Tfvars {
		names, err := ReadTfvarsNames(fsys, path.Join(dir, f), joinName(name, f))
		if err != nil {
			return nil, err
		}
		all = append(all, names...)
	}
	return all, nil
}

// Check reports why value, a literal decoded from YAML or JSON (strings,
// numbers, bools, nil, []any, map[string]any), cannot be given to v, or
// nil when it can or when that cannot be told. knit hands literal inputs
// to the tool as a JSON variables file, so the value is read as the tool
// reads JSON, then converted to the declared type as the tool converts it.
func (v *Variable) Check(value any) error {
	if value == nil || v.Type == cty.DynamicPseudoType {
		return nil
	}
	data, err := json.Marshal(value)
	if err != nil {
		return nil // not JSON (an infinite number): the tool's own error will say
	}
	ty, err := ctyjson.ImpliedType(data)
	if err != nil {
		return nil
	}
	val, err := ctyjson.Unmarshal(data, ty)
	if err != nil {
		return nil
	}
	if _, err := convert.Convert(val, v.Type); err != nil {
		return errors.New(describe(err))
	}
	return nil
}

// describe renders a conversion error with the place inside the value
// where it went wrong, when cty gives it as a path: `.size: a number is
// required`, `[0]: a number is required`. (Some messages name the element
// themselves: `element "team": string required`.)
func describe(err error) string {
	var pe cty.PathError
	if !errors.As(err, &pe) || len(pe.Path) == 0 {
		return err.Error()
	}
	var b strings.Builder
	for _, step := range pe.Path {
		switch s := step.(type) {
		case cty.GetAttrStep:
			fmt.Fprintf(&b, ".%s", s.Name)
		case cty.IndexStep:
			switch {
			case s.Key.Type() == cty.String && s.Key.IsKnown():
				fmt.Fprintf(&b, "[%q]", s.Key.AsString())
			case s.Key.Type() == cty.Number && s.Key.IsKnown():
				fmt.Fprintf(&b, "[%s]", s.Key.AsBigFloat().Text('f', -1))
			}
		}
	}
	return b.String() + ": " + err.Error()
}

// Placeholder returns the value that stands in for v's value while it is
// known only after another component is applied, or false when v's type
// has no placeholder that is safe: one the tool accepts as given and that
// cannot change how many resources the module declares. A string (or a
// variable of no declared type) takes text; a number, a bool or a
// collection could decide a count or a for_each, so they take none.
func (v *Variable) Placeholder(text string) (any, bool) {
	if v.Type == cty.String || v.Type == cty.DynamicPseudoType {
		return text, true
	}
	return nil, false
}
