package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
)

// MaxFileSize bounds what Load reads, so a hostile file cannot exhaust memory.
const MaxFileSize = 16 << 20

// Load reads, parses and validates the Environment file at path. It returns
// the environment (nil only when the file cannot be parsed at all) and every
// problem found; callers refuse to act when diags.HasErrors().
func Load(path string) (*Environment, diag.Diagnostics) {
	return LoadWith(path, Options{})
}

// LoadWith is Load with what the caller knows beyond the file (Options).
func LoadWith(path string, opts Options) (*Environment, diag.Diagnostics) {
	data, err := readFile(path)
	if err != nil {
		return nil, diag.Diagnostics{{Severity: diag.Error, Pos: diag.Pos{File: path}, Message: err.Error()}}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return ParseWith(path, filepath.Dir(abs), "", data, opts)
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read environment file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read environment file: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("environment file is larger than %d MiB", MaxFileSize>>20)
	}
	return data, nil
}

// Parse parses and validates an Environment document. name is what positions
// call the file; dir is the folder relative paths resolve against, and
// that no local path may leave.
func Parse(name, dir string, data []byte) (*Environment, diag.Diagnostics) {
	return ParseIn(name, dir, "", data)
}

// ParseIn is Parse for a document read from inside a larger tree: relative
// paths resolve against dir, and no local path may leave root (GitOps: the
// commit's tree), symlinks followed. An empty root means dir.
func ParseIn(name, dir, root string, data []byte) (*Environment, diag.Diagnostics) {
	return ParseWith(name, dir, root, data, Options{})
}

// ParseWith is ParseIn with what the caller knows beyond the file (Options).
func ParseWith(name, dir, root string, data []byte, opts Options) (*Environment, diag.Diagnostics) {
	env, diags := decode(name, data)
	if env == nil {
		diags.Sort()
		return nil, diags
	}
	env.Dir, env.Root, env.Text, env.opts = dir, root, data, opts
	if env.Kind != KindEnvironment {
		// Another kind of document: checking it as an environment would only add noise.
		// An Environment with a wrong apiVersion is still checked, so every problem shows at once.
		diags.Sort()
		return env, diags
	}
	diags = append(diags, substituteZLocals(env)...)
	inheritKubeconfig(env)
	diags = append(diags, validate(env)...)
	diags.Sort()
	return env, diags
}

// decode turns the bytes into an Environment, collecting every structural problem.
func decode(name string, data []byte) (*Environment, diag.Diagnostics) {
	root, extra, err := firstDocument(data)
	if err != nil {
		return nil, diag.Diagnostics{syntaxError(name, data, err)}
	}
	d := newDecoder(name, root)
	if root.Kind != yaml.MappingNode {
		// A scalar, a list, or null: nothing here is an environment.
		d.errorf(root, "", "an environment file is a mapping that starts with apiVersion: and kind:",
			"expected a mapping, found %s", kindName(root))
		return nil, d.diags
	}
	env := &Environment{File: name}
	d.pos[""] = d.at(root)
	d.mapping(root, "", false, map[string]field{
		"apiVersion": d.str(&env.APIVersion),
		"kind":       d.str(&env.Kind),
		"metadata":   d.metadata(&env.Metadata),
		"spec":       d.envSpec(&env.Spec),
		// Kubernetes adds status to objects it returns; a file exported from a cluster may carry it.
		"status": func(*yaml.Node, string) {},
	})
	env.pos = d.pos
	env.bad = d.bad
	d.checkHeader(root, env)
	switch {
	case extra.err != nil:
		d.diags = append(d.diags, syntaxError(name, data, extra.err))
	case extra.line > 0:
		d.errorf(&yaml.Node{Line: extra.line, Column: 1}, "", "put each environment in its own file",
			"a second YAML document: an environment file holds exactly one")
	}
	return env, d.diags
}

// extraDoc is what follows the first document: the line a second document
// starts on, or the error that stopped it from parsing.
type extraDoc struct {
	line int
	err  error
}

// firstDocument parses data and returns the first non-empty document's root,
// and what follows it: one file holds one environment.
func firstDocument(data []byte) (root *yaml.Node, extra extraDoc, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if root != nil {
				return root, extraDoc{err: err}, nil
			}
			return nil, extraDoc{}, err
		}
		if len(doc.Content) == 0 {
			continue
		}
		if root != nil {
			return root, extraDoc{line: doc.Content[0].Line}, nil
		}
		root = doc.Content[0]
	}
	if root == nil {
		return nil, extraDoc{}, errEmpty
	}
	return root, extraDoc{}, nil
}

var errEmpty = errors.New("the file is empty")

// yamlPrefix matches how yaml.v3 starts its messages: "yaml: line N: ".
var yamlPrefix = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// syntaxError turns a YAML parse error into a diagnostic on the line where
// the problem is. yaml.v3's own "line N" is where the enclosing block starts
// (and, for parser errors, counted from 0), often lines above the mistake.
func syntaxError(name string, data []byte, err error) diag.Diagnostic {
	msg := err.Error()
	pos := diag.Pos{File: name}
	if m := yamlPrefix.FindStringSubmatch(msg); m != nil {
		pos.Line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	hint := "check indentation and quoting around this line"
	if errors.Is(err, errEmpty) {
		hint = "an environment file starts with apiVersion: and kind:"
	} else if line := failingLine(data, err.Error()); line > 0 {
		pos.Line = line
	}
	return diag.Diagnostic{Severity: diag.Error, Pos: pos, Message: "invalid YAML: " + msg, Hint: hint}
}

// failingLine returns the first line n such that the file's first n lines
// fail to parse with the same message as the whole file: the line on which
// the parser gave up. Parsing is a left-to-right stream, so a prefix fails
// that way exactly when it holds that line; a binary search needs about
// log2(lines) parses. It returns 0 when it cannot tell.
func failingLine(data []byte, msg string) int {
	var ends []int // ends[i] is the offset just past line i+1
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	fails := func(lines int) bool {
		err := parseAll(data[:ends[lines-1]])
		return err != nil && err.Error() == msg
	}
	if !fails(len(ends)) {
		return 0
	}
	lo, hi := 1, len(ends)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// parseAll returns the first error parsing data document by document.
func parseAll(data []byte) error {
	_, extra, err := firstDocument(data)
	if err != nil {
		return err
	}
	return extra.err
}

func (d *decoder) checkHeader(root *yaml.Node, env *Environment) {
	at := func(path string) *yaml.Node {
		if p, ok := d.pos[path]; ok {
			return &yaml.Node{Line: p.Line, Column: p.Col}
		}
		return &yaml.Node{Line: root.Line, Column: root.Column}
	}
	switch env.APIVersion {
	case APIVersionCloudKnit, APIVersionKnit:
	case "":
		d.errorf(at(""), "apiVersion", "add apiVersion: knit.dev/v1 (or stable.cloudknit.io/v1)", "missing required field")
	default:
		hint := "use knit.dev/v1 or stable.cloudknit.io/v1"
		if isCloudKnitAPI(env.APIVersion) {
			hint = "CloudKnit's current version is " + APIVersionCloudKnit + ": change apiVersion to it (or to " + APIVersionKnit + ")"
		}
		d.errorf(at("apiVersion"), "apiVersion", hint, "unsupported apiVersion %s", quote(env.APIVersion))
	}
	switch env.Kind {
	case KindEnvironment:
	case "":
		d.errorf(at(""), "kind", "add kind: Environment", "missing required field")
	default:
		d.errorf(at("kind"), "kind", "knit reads only kind: Environment files",
			"unsupported kind %s", quote(env.Kind))
	}
}

// isCloudKnitAPI reports whether v is any of CloudKnit's API versions,
// current or old (stable.cloudknit.io/v1alpha1).
func isCloudKnitAPI(v string) bool { return strings.HasPrefix(v, "stable.cloudknit.io/") }

func (d *decoder) metadata(m *Metadata) field {
	return func(v *yaml.Node, path string) {
		d.mapping(v, path, true, map[string]field{
			"name":        d.str(&m.Name),
			"namespace":   d.str(&m.Namespace),
			"labels":      d.strMap(&m.Labels),
			"annotations": d.strMap(&m.Annotations),
		})
	}
}

func (d *decoder) envSpec(s *EnvSpec) field {
	return func(v *yaml.Node, path string) {
		d.mapping(v, path, false, map[string]field{
			"teamName":    d.str(&s.TeamName),
			"envName":     d.str(&s.EnvName),
			"description": d.str(&s.Description),
			"autoApprove": d.boolean(&s.AutoApprove),
			"teardown":    d.boolean(&s.Teardown),
			"workspace":   d.str(&s.Workspace),
			"zlocals": func(v *yaml.Node, path string) {
				d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
					var l LocalVariable
					d.mapping(item, p, false, map[string]field{
						"name": d.str(&l.Name), "value": d.str(&l.Value), "type": d.str(&l.Type),
					})
					s.ZLocals = append(s.ZLocals, l)
				})
			},
			"selectiveReconcile": func(v *yaml.Node, path string) {
				s.SelectiveReconcile = &SelectiveReconcile{}
				sr := s.SelectiveReconcile
				d.mapping(v, path, false, map[string]field{
					"tagName": d.str(&sr.TagName), "tagValues": d.strList(&sr.TagValues), "skipMode": d.boolean(&sr.SkipMode),
				})
			},
			"drift": d.drift(&s.Drift),
			"approval": func(v *yaml.Node, path string) {
				s.Approval = &ApprovalPolicy{}
				d.mapping(v, path, false, map[string]field{"requireOtherApprover": d.boolean(&s.Approval.RequireOtherApprover)})
			},
			"kubeconfig": d.kubeconfig(&s.Kubeconfig),
			"components": func(v *yaml.Node, path string) {
				d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
					c := &Component{}
					d.component(c)(item, p)
					s.Components = append(s.Components, c)
				})
			},
		})
	}
}

// componentHints explain unknown component fields seen in real files.
var componentHints = map[string]string{
	// CloudKnit's README shows a helm component with source: {repo, path}.
	"source": "a terraform component names its code in module: {source: ...}; a helm chart goes in chart: {path: ...} or chart: {repo: ..., name: ...} (apiVersion: knit.dev/v1)",
}

func (d *decoder) component(c *Component) field {
	return func(v *yaml.Node, path string) {
		d.mappingHints(v, path, false, map[string]field{
			"name":              d.str(&c.Name),
			"type":              d.str(&c.Type),
			"subtype":           d.str(&c.Subtype),
			"module":            d.module(&c.Module),
			"chart":             d.chart(&c.Chart),
			"manifests":         d.manifests(&c.Manifests),
			"script":            d.script(&c.Script),
			"dependsOn":         d.strList(&c.DependsOn),
			"tags":              d.tags(&c.Tags),
			"cronSchedule":      d.str(&c.CronSchedule),
			"drift":             d.drift(&c.Drift),
			"aws":               d.aws(&c.AWS),
			"autoApprove":       d.optBool(&c.AutoApprove),
			"destroy":           d.boolean(&c.Destroy),
			"destroyProtection": d.boolean(&c.DestroyProtection),
			"variablesFile":     d.variablesFile(&c.VariablesFile),
			"overlayFiles":      d.overlayFiles(&c.OverlayFiles),
			"overlayData":       d.overlayData(&c.OverlayData),
			"variables":         d.variables(&c.Variables),
			"secrets":           d.secrets(&c.Secrets),
			"outputs":           d.outputs(&c.Outputs),
			"kubeconfig":        d.kubeconfig(&c.Kubeconfig),
		}, componentHints)
	}
}

func (d *decoder) module(dst **Module) field {
	return func(v *yaml.Node, path string) {
		m := &Module{}
		*dst = m
		d.mapping(v, path, false, map[string]field{
			"source": d.str(&m.Source), "name": d.str(&m.Name), "path": d.str(&m.Path), "version": d.str(&m.Version),
		})
	}
}

func (d *decoder) chart(dst **Chart) field {
	return func(v *yaml.Node, path string) {
		c := &Chart{}
		*dst = c
		d.mapping(v, path, false, map[string]field{
			"path": d.str(&c.Path), "git": d.str(&c.Git), "ref": d.str(&c.Ref),
			"repo": d.str(&c.Repo), "name": d.str(&c.Name), "version": d.str(&c.Version),
			"release": d.str(&c.Release), "namespace": d.str(&c.Namespace),
			"valuesFiles": d.strList(&c.ValuesFiles),
			"wait":        d.boolean(&c.Wait), "timeout": d.str(&c.Timeout),
			"test": d.boolean(&c.Test), "maxHistory": d.integer(&c.MaxHistory),
			"values": func(v *yaml.Node, p string) {
				if m, ok := d.value(v, p, 0).(map[string]any); ok {
					c.Values = m
				} else if resolve(v) != nil && resolve(v).Tag != "!!null" {
					d.mismatch(v, p, "", "expected a mapping of chart values, found %s", kindName(resolve(v)))
				}
			},
		})
	}
}

func (d *decoder) manifests(dst **Manifests) field {
	return func(v *yaml.Node, path string) {
		m := &Manifests{}
		*dst = m
		d.mapping(v, path, false, map[string]field{"path": d.str(&m.Path), "namespace": d.str(&m.Namespace)})
	}
}

func (d *decoder) drift(dst **DriftPolicy) field {
	return func(v *yaml.Node, path string) {
		p := &DriftPolicy{}
		*dst = p
		d.mapping(v, path, false, map[string]field{"schedule": d.str(&p.Schedule), "policy": d.str(&p.Policy)})
	}
}

func (d *decoder) kubeconfig(dst **Kubeconfig) field {
	return func(v *yaml.Node, path string) {
		k := &Kubeconfig{}
		*dst = k
		part := func(dst **KubeValue) field {
			return func(v *yaml.Node, p string) {
				kv := &KubeValue{}
				*dst = kv
				d.mapping(v, p, false, map[string]field{"value": d.str(&kv.Value), "valueFrom": d.str(&kv.ValueFrom)})
			}
		}
		d.mapping(v, path, false, map[string]field{
			"path": d.str(&k.Path), "fromEnv": d.str(&k.FromEnv), "context": d.str(&k.Context), "valueFrom": d.str(&k.ValueFrom),
			"server": part(&k.Server), "ca": part(&k.CA), "token": part(&k.Token),
		})
	}
}

func (d *decoder) script(dst **Script) field {
	return func(v *yaml.Node, path string) {
		s := &Script{}
		*dst = s
		d.mapping(v, path, false, map[string]field{"apply": d.str(&s.Apply), "destroy": d.str(&s.Destroy), "plan": d.str(&s.Plan)})
	}
}

func (d *decoder) tags(dst *[]Tag) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var t Tag
			d.mapping(item, p, false, map[string]field{"name": d.str(&t.Name), "value": d.str(&t.Value)})
			*dst = append(*dst, t)
		})
	}
}

func (d *decoder) aws(dst **AWS) field {
	return func(v *yaml.Node, path string) {
		a := &AWS{}
		*dst = a
		d.mapping(v, path, false, map[string]field{
			"region": d.str(&a.Region),
			"assumeRole": func(v *yaml.Node, p string) {
				r := &AssumeRole{}
				a.AssumeRole = r
				d.mapping(v, p, false, map[string]field{
					"roleArn": d.str(&r.RoleARN), "sessionName": d.str(&r.SessionName), "externalId": d.str(&r.ExternalID),
				})
			},
		})
	}
}

func (d *decoder) variablesFile(dst **VariablesFile) field {
	return func(v *yaml.Node, path string) {
		f := &VariablesFile{}
		*dst = f
		d.mapping(v, path, false, map[string]field{"source": d.str(&f.Source), "path": d.str(&f.Path), "ref": d.str(&f.Ref)})
	}
}

func (d *decoder) overlayFiles(dst *[]OverlayFile) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var o OverlayFile
			d.mapping(item, p, false, map[string]field{"source": d.str(&o.Source), "ref": d.str(&o.Ref), "paths": d.strList(&o.Paths)})
			*dst = append(*dst, o)
		})
	}
}

func (d *decoder) overlayData(dst *[]OverlayData) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var o OverlayData
			d.mapping(item, p, false, map[string]field{"name": d.str(&o.Name), "data": d.str(&o.Data)})
			*dst = append(*dst, o)
		})
	}
}

func (d *decoder) variables(dst *[]Variable) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var vr Variable
			d.mapping(item, p, false, map[string]field{
				"name":      d.str(&vr.Name),
				"value":     func(v *yaml.Node, vp string) { vr.Value = d.value(v, vp, 0) },
				"valueFrom": d.str(&vr.ValueFrom),
			})
			*dst = append(*dst, vr)
		})
	}
}

func (d *decoder) secrets(dst *[]Secret) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var s Secret
			d.mapping(item, p, false, map[string]field{"name": d.str(&s.Name), "scope": d.str(&s.Scope), "key": d.str(&s.Key)})
			*dst = append(*dst, s)
		})
	}
}

func (d *decoder) outputs(dst *[]Output) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var o Output
			d.mapping(item, p, false, map[string]field{"name": d.str(&o.Name), "sensitive": d.boolean(&o.Sensitive), "from": d.str(&o.From)})
			*dst = append(*dst, o)
		})
	}
}
