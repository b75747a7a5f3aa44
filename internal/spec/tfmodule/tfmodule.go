// Package tfmodule reads what a Terraform/OpenTofu module declares to its
// callers — its variable and output blocks — and the names a .tfvars file
// sets, without running the tool. Validation uses it to check a component's
// inputs against the module before any plan runs.
//
// It reads the files `tofu init` reads: *.tf, *.tofu and their .json forms
// in the module's folder (a .tofu file hides the .tf file of the same
// name), override files last. Files are read through an fs.FS, which the
// caller roots at the folder no symlink may leave (os.Root refuses links
// that escape it).
package tfmodule

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
)

// Limits that keep a hostile module from exhausting memory or time: a file
// larger than maxFileSize, more than maxFiles files, or more than maxBytes
// in all make the module incomplete (nothing is concluded from it).
const (
	maxFileSize = 4 << 20
	maxFiles    = 1000
	maxBytes    = 32 << 20
)

// Pos is a place in a module's file: File is the caller's name for the
// folder joined with the file's name.
type Pos struct {
	File string
	Line int
}

func (p Pos) String() string { return fmt.Sprintf("%s:%d", p.File, p.Line) }

// Variable is one variable block.
type Variable struct {
	Name string
	Pos  Pos
	// Required is true when the block sets no default.
	Required bool
	// Type is the declared type constraint; cty.DynamicPseudoType when the
	// block declares none, or one this package cannot read (anything goes).
	Type cty.Type
	// TypeSrc is the type constraint as written, on one line and cut to
	// a readable length, for messages ("" when none).
	TypeSrc string
	// Sensitive is true when the block sets sensitive (to anything: it
	// is not evaluated): messages must not show values given to it.
	Sensitive bool
}

// Output is one output block.
type Output struct {
	Name string
	Pos  Pos
}

// Problem is a file that could not be read or parsed: what and where.
type Problem struct {
	Pos     Pos
	Message string
}

func (p Problem) String() string {
	if p.Pos.Line == 0 {
		return p.Pos.File + ": " + p.Message
	}
	return p.Pos.String() + ": " + p.Message
}

// Module is what one module folder declares.
type Module struct {
	Variables map[string]*Variable
	Outputs   map[string]*Output
	// Problems lists files that could not be parsed (HCL syntax errors):
	// the tool would refuse the module for them.
	Problems []Problem
	// Incomplete is true when some file could not be read or parsed, so a
	// declaration may be missing: callers must not conclude that a name
	// is undeclared, or a variable unset.
	Incomplete bool
	// Empty is true when no configuration file holds any block or
	// attribute: a placeholder, not a module whose interface is known.
	Empty bool
	// Tfvars are the variables files the tool loads by itself from the
	// folder (terraform.tfvars, *.auto.tfvars and their .json forms).
	Tfvars []string
}

// VariableNames returns the declared variable names, sorted.
func (m *Module) VariableNames() []string { return slices.Sorted(maps.Keys(m.Variables)) }

// OutputNames returns the declared output names, sorted.
func (m *Module) OutputNames() []string { return slices.Sorted(maps.Keys(m.Outputs)) }

// Extra is a configuration file that reaches the module's folder another
// way than from its source (a component's overlay data): it replaces the
// module's file of the same Name (a plain file name).
type Extra struct {
	Name string
	Data []byte
}

// Read reads the module in folder dir of fsys (a slash path, "." for its
// root), with extra files added; name is what positions call that
// folder. It fails only when the folder cannot be listed; unreadable or
// broken files are recorded in the Module (Problems, Incomplete).
func Read(fsys fs.FS, dir, name string, extra ...Extra) (*Module, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	m := &Module{Variables: map[string]*Variable{}, Outputs: map[string]*Output{}, Empty: true}
	content := map[string]func() ([]byte, error){}
	for _, e := range entries {
		n := e.Name()
		switch {
		case e.IsDir():
		case IsAutoTfvars(n):
			m.Tfvars = append(m.Tfvars, n)
		case IsConfig(n):
			content[n] = func() ([]byte, error) { return readFile(fsys, path.Join(dir, n)) }
		}
	}
	for _, e := range extra {
		content[e.Name] = func() ([]byte, error) { return e.Data, nil }
	}
	files := configFiles(content)
	if len(files) > maxFiles {
		m.Incomplete = true
		return m, nil
	}
	// Override files last: they change what the others declare.
	sort.SliceStable(files, func(i, j int) bool { return !isOverride(files[i]) && isOverride(files[j]) })
	total := 0
	for _, f := range files {
		data, err := content[f]()
		if total += len(data); err != nil || total > maxBytes {
			m.Incomplete = true
			continue
		}
		m.addFile(joinName(name, f), data, isOverride(f))
	}
	return m, nil
}

// Parse reads one configuration file's declarations into a fresh Module;
// name is the file's name (its suffix selects the syntax). For tests and
// fuzzing, and for files that are not on disk.
func Parse(name string, data []byte) *Module {
	m := &Module{Variables: map[string]*Variable{}, Outputs: map[string]*Output{}, Empty: true}
	m.addFile(name, data, isOverride(path.Base(name)))
	return m
}

// AddFile adds a configuration file that reaches the module's folder
// another way (overlay data) to what it declares.
func (m *Module) AddFile(name string, data []byte) {
	m.addFile(name, data, isOverride(path.Base(name)))
}

// IsConfig reports whether a file name is one the tool reads as configuration.
func IsConfig(name string) bool {
	for _, s := range []string{".tf", ".tofu", ".tf.json", ".tofu.json"} {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

// IsAutoTfvars reports whether the tool loads a file of this name from its
// working folder by itself.
func IsAutoTfvars(name string) bool {
	return name == "terraform.tfvars" || name == "terraform.tfvars.json" ||
		strings.HasSuffix(name, ".auto.tfvars") || strings.HasSuffix(name, ".auto.tfvars.json")
}

// configFiles returns the names of the configuration files, sorted, the
// way the tool picks them: hidden and editor files left out, and a .tf
// (.tf.json) file left out when a .tofu (.tofu.json) of the same name exists.
func configFiles[T any](names map[string]T) []string {
	var out []string
	for n := range names {
		switch {
		case strings.HasPrefix(n, "."), strings.HasSuffix(n, "~"), strings.HasPrefix(n, "#") && strings.HasSuffix(n, "#"):
			continue
		}
		if _, ok := names[strings.TrimSuffix(n, ".tf")+".tofu"]; ok && strings.HasSuffix(n, ".tf") {
			continue
		}
		if _, ok := names[strings.TrimSuffix(n, ".tf.json")+".tofu.json"]; ok && strings.HasSuffix(n, ".tf.json") {
			continue
		}
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// isOverride reports whether a configuration file is an override file,
// whose blocks change blocks declared elsewhere.
func isOverride(name string) bool {
	base := name
	for _, s := range []string{".tf.json", ".tofu.json", ".tf", ".tofu"} {
		if strings.HasSuffix(name, s) {
			base = strings.TrimSuffix(name, s)
			break
		}
	}
	return base == "override" || strings.HasSuffix(base, "_override")
}

// readFile reads a regular file (a link to one too), at most maxFileSize
// bytes. Anything else — a folder, a named pipe that would block the
// open — is refused before it is opened.
func readFile(fsys fs.FS, name string) ([]byte, error) {
	st, err := fs.Stat(fsys, name)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", name)
	}
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFileSize {
		return nil, fmt.Errorf("%s is larger than %d MiB", name, maxFileSize>>20)
	}
	return data, nil
}

// joinName names file f in the folder called name; unlike path.Join it
// keeps a URL's "//" intact.
func joinName(name, f string) string { return strings.TrimSuffix(name, "/") + "/" + f }

// parseHCL parses a configuration or variables file in the syntax its name says.
func parseHCL(name string, data []byte) (*hcl.File, hcl.Diagnostics) {
	if strings.HasSuffix(name, ".json") {
		return hcljson.Parse(data, name)
	}
	return hclsyntax.ParseConfig(data, name, hcl.InitialPos)
}

var fileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "variable", LabelNames: []string{"name"}},
	{Type: "output", LabelNames: []string{"name"}},
}}

var variableSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "type"}, {Name: "default"}, {Name: "sensitive"}}}

// addFile adds one file's variable and output blocks. An override file's
// blocks change the declarations already read instead of adding new ones.
func (m *Module) addFile(name string, data []byte, override bool) {
	f, diags := parseHCL(name, data)
	if diags.HasErrors() || f == nil {
		m.problem(name, diags)
		return
	}
	content, _, diags := f.Body.PartialContent(fileSchema)
	if diags.HasErrors() {
		m.problem(name, diags)
		return
	}
	if !isEmpty(f, data) {
		m.Empty = false
	}
	for _, b := range content.Blocks {
		pos := Pos{File: name, Line: b.DefRange.Start.Line}
		switch b.Type {
		case "output":
			if !override {
				m.Outputs[b.Labels[0]] = &Output{Name: b.Labels[0], Pos: pos}
			}
		case "variable":
			m.addVariable(b, pos, data, override)
		}
	}
}

func (m *Module) addVariable(b *hcl.Block, pos Pos, data []byte, override bool) {
	name := b.Labels[0]
	v := m.Variables[name]
	switch {
	case v == nil && override:
		return // the tool refuses an override of nothing; nothing to add here
	case v == nil:
		v = &Variable{Name: name, Pos: pos, Required: true, Type: cty.DynamicPseudoType}
		m.Variables[name] = v
	}
	attrs, _, diags := b.Body.PartialContent(variableSchema)
	if diags.HasErrors() {
		// Unreadable attributes: assume the loosest declaration.
		v.Required, v.Type, v.TypeSrc, v.Sensitive = false, cty.DynamicPseudoType, "", true
		return
	}
	if _, ok := attrs.Attributes["sensitive"]; ok {
		v.Sensitive = true
	}
	if _, ok := attrs.Attributes["default"]; ok {
		v.Required = false
	}
	if a, ok := attrs.Attributes["type"]; ok {
		v.Type, v.TypeSrc = typeOf(a.Expr, data)
	}
}

// typeOf reads a type constraint; one it cannot read accepts anything.
func typeOf(expr hcl.Expression, data []byte) (cty.Type, string) {
	src := strings.TrimSpace(string(expr.Range().SliceBytes(data)))
	if s, err := strconv.Unquote(src); err == nil {
		src = s // JSON syntax: "type": "number"
	}
	if src = strings.Join(strings.Fields(src), " "); len(src) > 60 {
		src = src[:57] + "..."
	}
	ty, _, diags := typeexpr.TypeConstraintWithDefaults(expr)
	if diags.HasErrors() {
		return cty.DynamicPseudoType, ""
	}
	return ty, src
}

// isEmpty reports whether a parsed file declares nothing at all.
func isEmpty(f *hcl.File, data []byte) bool {
	if b, ok := f.Body.(*hclsyntax.Body); ok {
		return len(b.Blocks) == 0 && len(b.Attributes) == 0
	}
	var top map[string]json.RawMessage
	return json.Unmarshal(data, &top) == nil && len(top) == 0
}

func (m *Module) problem(name string, diags hcl.Diagnostics) {
	m.Incomplete = true
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		p := Problem{Pos: Pos{File: name}, Message: d.Summary}
		if d.Detail != "" {
			p.Message += ": " + d.Detail
		}
		if d.Subject != nil {
			p.Pos.Line = d.Subject.Start.Line
		}
		m.Problems = append(m.Problems, p)
		return // the first error; the rest often follow from it
	}
	m.Problems = append(m.Problems, Problem{Pos: Pos{File: name}, Message: "cannot parse the file"})
}
