package spec

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

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
//
// The schema itself is applied by Options.ValuesSchema, a checker in
// another process (knit-kube, which links Helm's JSON-schema library
// anyway): that library compiles its metaschemas at init, a cost every
// knit command would pay. Validation collects every chart's values first
// and asks once.

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
	for _, chk := range chartSchemaChecks(dir, user, unknown, nil) {
		chk.path = p + ".chart.values"
		v.schemas = append(v.schemas, chk)
	}
}

// chartSchemas applies every schema chartValues collected, in one call of
// the checker, reporting each violation at the value's field in the order
// they are written. Without a checker nothing is said: the helm plan
// checks the values, as helm install does.
func (v *validator) chartSchemas() {
	check := v.env.opts.ValuesSchema
	if len(v.schemas) == 0 || check == nil {
		return
	}
	var reqs []SchemaCheck
	for _, s := range v.schemas {
		if !s.notJSON {
			reqs = append(reqs, s.SchemaCheck)
		}
	}
	var res [][]SchemaViolation
	var err error
	if len(reqs) > 0 {
		res, err = check(reqs)
	}
	if err == nil && len(res) != len(reqs) {
		err = fmt.Errorf("the checker answered %d of %d schemas", len(res), len(reqs))
	}
	if err != nil {
		v.err(v.schemas[0].path, "", "values.schema.json not checked: "+err.Error(),
			"knit-kube checks chart values: make build puts it beside knit (or set KNIT_KUBE_RUNNER)")
		return
	}
	var found []diag.Diagnostic
	for _, s := range v.schemas {
		bads := []SchemaViolation{{Message: "values.schema.json is not JSON"}}
		if !s.notJSON {
			bads, res = res[0], res[1:]
		}
		for _, bad := range bads {
			at := append(append([]string(nil), s.prefix...), bad.At...)
			found = append(found, errAt(v.env, s.path, strings.Join(at, "."), fmt.Sprintf("chart %q: %s", s.chart, bad.Message),
				"set a value the chart's values.schema.json allows (helm install would refuse this one too)"))
		}
	}
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

// SchemaCheck is one chart's values, to be checked against its
// values.schema.json: both as JSON, as Helm checks them (the validator
// reads JSON's types). What is said of the values under an Unknown path
// is left out: a valueFrom sets them at the run.
type SchemaCheck struct {
	Schema  json.RawMessage `json:"schema"`
	Values  json.RawMessage `json:"values"`
	Unknown [][]string      `json:"unknown,omitempty"`
}

// SchemaViolation is one value a schema refuses: At, the path into the
// values; Message, why.
type SchemaViolation struct {
	At      []string `json:"at"`
	Message string   `json:"message"`
}

// SchemaChecker applies each check's schema to its values and answers
// their violations, in the order of checks. A schema that does not
// compile alone (it refers elsewhere) refuses nothing.
type SchemaChecker func(checks []SchemaCheck) ([][]SchemaViolation, error)

// chartSchema is a check collected by validation: the component's field
// the values are reported under, where in them this chart's part is
// (prefix: a subchart's key), and the chart's folder name.
type chartSchema struct {
	SchemaCheck
	path, chart string
	prefix      []string
	// notJSON: the schema is not JSON, said without asking the checker.
	notJSON bool
}

// chartSchemaChecks collects the check of user values (over the defaults
// of the chart in dir) against its schema, then each enabled subchart
// folder's part against the subchart's; prefix is where the chart's values
// are.
func chartSchemaChecks(dir string, user map[string]any, unknown [][]string, prefix []string) []chartSchema {
	vals, ok := readValues(filepath.Join(dir, "values.yaml"))
	if !ok {
		vals = map[string]any{}
	}
	MergeValues(vals, user)
	var out []chartSchema
	if schema, err := readLimited(filepath.Join(dir, "values.schema.json")); err == nil {
		if b, err := json.Marshal(vals); err == nil {
			out = append(out, chartSchema{SchemaCheck: SchemaCheck{Schema: schema, Values: b, Unknown: unknown},
				chart: filepath.Base(dir), prefix: prefix, notJSON: !json.Valid(schema)})
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
		out = append(out, chartSchemaChecks(sub, part, subUnknown, append(append([]string(nil), prefix...), key))...)
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
