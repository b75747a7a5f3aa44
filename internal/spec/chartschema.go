package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
)

// A chart's values.schema.json says what its values may be; helm install
// refuses values that break it, and so does the helm runner's plan. knit
// validate checks a local chart's values too, as Helm merges them: the
// chart's values.yaml, then the component's valuesFiles, values and
// variables; and each enabled subchart folder of charts/ with its part of
// them. A value that a valueFrom sets is known only at the run: what the
// schema says of it is left to the plan. A schema that refers to another
// document is not checked here (nothing is fetched, no other file read).

// maxSchemaFile bounds what is read of a values file or schema.
const maxSchemaFile = 4 << 20

// chartValues checks the values of a local chart component against its
// schemas (see above), reporting each violation at the value's field.
func (v *validator) chartValues(p string, c *Component) {
	ch := c.Chart
	if ch.Repo != "" || ch.Path == "" {
		return
	}
	dir, err := v.env.LocalPath(ch.Path)
	if err != nil || ContainTree(v.env.RootDir(), dir) != nil {
		return // chartDependencies and localPath report these
	}
	user, unknown, ok := v.componentValues(c)
	if !ok {
		return
	}
	var found []diag.Diagnostic
	for _, bad := range chartSchemaViolations(dir, user, unknown, nil) {
		found = append(found, errAt(v.env, p+".chart.values", strings.Join(bad.at, "."), bad.msg,
			"set a value the chart's values.schema.json allows (helm install would refuse this one too)"))
	}
	// In the order they are written.
	sort.SliceStable(found, func(i, j int) bool {
		a, b := found[i].Pos, found[j].Pos
		return a.Line < b.Line || (a.Line == b.Line && a.Col < b.Col)
	})
	v.diags = append(v.diags, found...)
}

// componentValues merges what the component sets over the chart's
// defaults: valuesFiles, values, then variables; unknown lists the dotted
// paths a valueFrom sets. ok is false when a values file cannot be read
// (the runner reports that).
func (v *validator) componentValues(c *Component) (vals map[string]any, unknown [][]string, ok bool) {
	vals = map[string]any{}
	for _, f := range c.Chart.ValuesFiles {
		p, err := v.env.LocalPath(f)
		if err != nil {
			return nil, nil, false
		}
		m, ok := readValues(p)
		if !ok {
			return nil, nil, false
		}
		MergeValues(vals, m)
	}
	if c.Chart.Values != nil {
		MergeValues(vals, CopyValues(c.Chart.Values).(map[string]any))
	}
	for _, vr := range c.Variables {
		path := strings.Split(vr.Name, ".")
		if vr.ValueFrom != "" {
			unknown = append(unknown, path)
			SetValue(vals, path, nil)
			continue
		}
		SetValue(vals, path, CopyValues(vr.Value))
	}
	return vals, unknown, true
}

// schemaViolation is one value a schema refuses: where (the path into the
// values) and why.
type schemaViolation struct {
	at  []string
	msg string
}

// chartSchemaViolations checks user values (over the defaults of the
// chart in dir) against its schema, then each enabled subchart folder's
// part against the subchart's; prefix is where the chart's values are.
func chartSchemaViolations(dir string, user map[string]any, unknown [][]string, prefix []string) []schemaViolation {
	vals, ok := readValues(filepath.Join(dir, "values.yaml"))
	if !ok {
		vals = map[string]any{}
	}
	MergeValues(vals, user)
	var out []schemaViolation
	if schema, err := readLimited(filepath.Join(dir, "values.schema.json")); err == nil {
		for _, bad := range schemaCheck(schema, vals, unknown) {
			bad.at = append(append([]string(nil), prefix...), bad.at...)
			bad.msg = fmt.Sprintf("chart %q: %s", filepath.Base(dir), bad.msg)
			out = append(out, bad)
		}
	}
	var meta struct {
		Dependencies []struct {
			Name      string `yaml:"name"`
			Alias     string `yaml:"alias"`
			Condition string `yaml:"condition"`
		} `yaml:"dependencies"`
	}
	readYAML(filepath.Join(dir, "Chart.yaml"), &meta)
	for _, d := range meta.Dependencies {
		sub := filepath.Join(dir, "charts", d.Name)
		if st, err := os.Stat(sub); err != nil || !st.IsDir() || !conditionHolds(vals, d.Condition) {
			continue // an archive is checked by the plan; a disabled one not at all, as in Helm
		}
		key := d.Name
		if d.Alias != "" {
			key = d.Alias
		}
		part, _ := vals[key].(map[string]any)
		if part == nil {
			part = map[string]any{}
		}
		var subUnknown [][]string
		for _, u := range unknown {
			if len(u) > 1 && u[0] == key {
				subUnknown = append(subUnknown, u[1:])
			}
		}
		out = append(out, chartSchemaViolations(sub, part, subUnknown, append(append([]string(nil), prefix...), key))...)
	}
	return out
}

// conditionHolds is a dependency's condition (comma-separated paths, the
// first that is set decides), true when none is set, as Helm reads it.
func conditionHolds(vals map[string]any, cond string) bool {
	for _, c := range strings.Split(cond, ",") {
		if c = strings.TrimSpace(c); c == "" {
			continue
		}
		var cur any = vals
		for _, k := range strings.Split(c, ".") {
			m, ok := cur.(map[string]any)
			if !ok {
				cur = nil
				break
			}
			cur = m[k]
		}
		if b, ok := cur.(bool); ok {
			return b
		}
	}
	return true
}

var schemaPrinter = message.NewPrinter(language.English)

// schemaCheck validates vals against schema, leaving out what is said of
// the values under unknown paths. A schema that does not compile alone
// (it refers elsewhere) checks nothing.
func schemaCheck(schema []byte, vals map[string]any, unknown [][]string) []schemaViolation {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return []schemaViolation{{msg: "values.schema.json is not JSON: " + err.Error()}}
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // nothing fetched, no file read
	if err := c.AddResource("file:///values.schema.json", doc); err != nil {
		return nil
	}
	sch, err := c.Compile("file:///values.schema.json")
	if err != nil {
		return nil
	}
	// Through JSON, as Helm does: the validator reads JSON's types.
	b, err := jsonValues(vals)
	if err != nil {
		return nil
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil
	}
	verr, ok := sch.Validate(inst).(*jsonschema.ValidationError)
	if !ok {
		return nil
	}
	var out []schemaViolation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		for _, u := range unknown {
			if hasPrefix(e.InstanceLocation, u) {
				return
			}
		}
		out = append(out, schemaViolation{at: e.InstanceLocation,
			msg: fmt.Sprintf("at '/%s': %s", strings.Join(e.InstanceLocation, "/"), e.ErrorKind.LocalizedString(schemaPrinter))})
	}
	walk(verr)
	sort.SliceStable(out, func(i, j int) bool { return strings.Join(out[i].at, ".") < strings.Join(out[j].at, ".") })
	return out
}

func hasPrefix(loc, prefix []string) bool {
	if len(loc) < len(prefix) {
		return false
	}
	for i := range prefix {
		if loc[i] != prefix[i] {
			return false
		}
	}
	return true
}

// readValues reads a YAML file of values (false: unreadable or not a map).
func readValues(file string) (map[string]any, bool) {
	b, err := readLimited(file)
	if err != nil {
		return nil, false
	}
	var m map[string]any
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, false
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, true
}

func readLimited(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxSchemaFile))
}

// jsonValues is vals as JSON.
func jsonValues(vals map[string]any) ([]byte, error) { return json.Marshal(vals) }
