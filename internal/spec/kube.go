package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Reserved input names: the engine resolves a kubeconfig's valueFrom parts
// into the component's inputs under these names, beside its variables. No
// variable can take them: variable names never start with "@".
const (
	InputKubeconfig       = "@kubeconfig"
	InputKubeconfigServer = "@kubeconfig.server"
	InputKubeconfigCA     = "@kubeconfig.ca"
	InputKubeconfigToken  = "@kubeconfig.token"
)

// IsKubernetes reports whether the component runs against a cluster.
func (c *Component) IsKubernetes() bool { return c.Type == TypeHelm || c.Type == TypeManifests }

// InputVariables is every input the engine resolves for the component: its
// variables, then one per valueFrom of its kubeconfig, named by the reserved
// Input* names.
func (c *Component) InputVariables() []Variable {
	out := append([]Variable(nil), c.Variables...)
	k := c.Kubeconfig
	if k == nil || !c.IsKubernetes() {
		return out
	}
	if k.ValueFrom != "" {
		out = append(out, Variable{Name: InputKubeconfig, ValueFrom: k.ValueFrom})
	}
	for _, part := range []struct {
		name string
		v    *KubeValue
	}{{InputKubeconfigServer, k.Server}, {InputKubeconfigCA, k.CA}, {InputKubeconfigToken, k.Token}} {
		if part.v != nil && part.v.ValueFrom != "" {
			out = append(out, Variable{Name: part.name, ValueFrom: part.v.ValueFrom})
		}
	}
	return out
}

// inheritKubeconfig gives every helm and manifests component that sets no
// kubeconfig a copy of the environment's.
func inheritKubeconfig(env *Environment) {
	k := env.Spec.Kubeconfig
	if k == nil {
		return
	}
	for _, c := range env.Spec.Components {
		if c.Kubeconfig == nil && c.IsKubernetes() {
			cp := *k
			cp.inherited = true
			c.Kubeconfig = &cp
		}
	}
}

// DefaultNamespace is the namespace of a helm release or of namespaced
// manifests that name none: TEAM-ENV, cut to a valid namespace name.
func (e *Environment) DefaultNamespace() string {
	ns := strings.ToLower(e.Spec.TeamName + "-" + e.Spec.EnvName)
	ns = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			return r
		}
		return '-'
	}, ns)
	if len(ns) > 63 {
		ns = ns[:63]
	}
	return strings.Trim(ns, "-")
}

// Namespace returns the namespace a helm or manifests component works in.
func (e *Environment) Namespace(c *Component) string {
	switch {
	case c.Chart != nil && c.Chart.Namespace != "":
		return c.Chart.Namespace
	case c.Manifests != nil && c.Manifests.Namespace != "":
		return c.Manifests.Namespace
	}
	return e.DefaultNamespace()
}

// ReleaseName returns a helm component's release name: chart.release, else
// the component's name.
func (c *Component) ReleaseName() string {
	if c.Chart != nil && c.Chart.Release != "" {
		return c.Chart.Release
	}
	return c.Name
}

// ObjectField is a parsed output `from`: a field of one live object.
type ObjectField struct {
	// Kind is the object's kind, optionally with its API group after a dot
	// (Deployment, Deployment.apps); Namespace is empty for the
	// component's own namespace (or a cluster-scoped object).
	Kind, Namespace, Name string
	// Path is the field's path, as keys and list indexes.
	Path []PathElem
	// Text is the path as written, for messages.
	Text string
}

// PathElem is one step of an ObjectField path: a map key, or a list index
// when Key is empty.
type PathElem struct {
	Key   string
	Index int
}

var (
	objectRefRe = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9]*(\.[a-z0-9.-]+)?)/(([a-z0-9][-a-z0-9.]*)/)?([a-z0-9][-a-z0-9.]*)$`)
	pathStepRe  = regexp.MustCompile(`^\.([A-Za-z0-9_-]+)|^\[(\d+)\]|^\["([^"]+)"\]`)
)

// ParseObjectField parses "Kind/name:path" or "Kind/namespace/name:path".
// The path is a jq-like selector: .spec.clusterIP, .spec.ports[0].port, or
// .data["app.url"] for keys with dots.
func ParseObjectField(s string) (ObjectField, error) {
	ref, path, ok := strings.Cut(s, ":")
	if !ok {
		return ObjectField{}, fmt.Errorf("%q has no field path: write Kind/name:.path, e.g. Service/web:.spec.clusterIP", s)
	}
	m := objectRefRe.FindStringSubmatch(ref)
	if m == nil {
		return ObjectField{}, fmt.Errorf("%q is not Kind/name or Kind/namespace/name", ref)
	}
	f := ObjectField{Kind: m[1], Namespace: m[4], Name: m[5], Text: path}
	rest := path
	if rest == "" || rest == "." {
		return ObjectField{}, fmt.Errorf("field path of %q is empty: e.g. .spec.clusterIP", s)
	}
	for rest != "" {
		sm := pathStepRe.FindStringSubmatch(rest)
		if sm == nil {
			return ObjectField{}, fmt.Errorf("cannot read the field path %q at %q: write .key, [index] or [\"key.with.dots\"]", path, rest)
		}
		switch {
		case sm[1] != "":
			f.Path = append(f.Path, PathElem{Key: sm[1]})
		case sm[3] != "":
			f.Path = append(f.Path, PathElem{Key: sm[3]})
		default:
			n, err := strconv.Atoi(sm[2])
			if err != nil {
				return ObjectField{}, fmt.Errorf("index %q in %q: %w", sm[2], path, err)
			}
			f.Path = append(f.Path, PathElem{Index: n})
		}
		rest = rest[len(sm[0]):]
	}
	return f, nil
}

// helmBuiltinOutputs are the outputs a helm component has without `from`.
var helmBuiltinOutputs = []string{"namespace", "release", "revision", "status"}

// HelmBuiltinOutputs lists the outputs every helm component has: its
// release's namespace, name, revision and status.
func HelmBuiltinOutputs() []string { return append([]string(nil), helmBuiltinOutputs...) }

var valuesPathRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$`)

// kubernetes validates the knit.dev/v1 blocks of helm and manifests
// components: variable names, outputs, cluster access.
func (v *validator) kubernetes(p string, c *Component) {
	if c.Kubeconfig != nil && !c.Kubeconfig.inherited {
		if !c.IsKubernetes() {
			v.err(p+".kubeconfig", "", "kubeconfig is only for helm and manifests components", "")
		} else {
			v.kubeconfig(p+".kubeconfig", c.Kubeconfig, c)
		}
	}
	if c.Chart != nil && c.Type == TypeHelm {
		v.chart(p+".chart", c.Chart)
	}
	for i, vr := range c.Variables {
		if c.IsKubernetes() && vr.Name != "" && !valuesPathRe.MatchString(vr.Name) {
			hint := "a dotted path into the chart's values, e.g. image.tag"
			if c.Type == TypeManifests {
				hint = "letters, digits, _ and -; the files use it as ${var.NAME}"
			}
			v.err(fmt.Sprintf("%s.variables[%d].name", p, i), "", fmt.Sprintf("%q is not a valid variable name", vr.Name), hint)
		}
	}
	for i, o := range c.Outputs {
		op := fmt.Sprintf("%s.outputs[%d]", p, i)
		switch {
		case o.From != "" && !c.IsKubernetes():
			v.err(op+".from", "", "from is only for helm and manifests components", "")
		case o.From != "":
			if _, err := ParseObjectField(o.From); err != nil {
				v.err(op+".from", "", err.Error(), `e.g. from: "Service/web:.spec.clusterIP"`)
			}
		case c.Type == TypeHelm && o.Name != "" && !contains(helmBuiltinOutputs, o.Name):
			v.err(op, "", fmt.Sprintf("helm output %q needs from: (a field of a live object)", o.Name),
				"built-in outputs are "+strings.Join(helmBuiltinOutputs, ", ")+`; otherwise e.g. from: "Service/web:.spec.clusterIP"`)
		case c.Type == TypeManifests && o.Name != "":
			v.err(op, "", fmt.Sprintf("manifests output %q needs from: (a field of a live object)", o.Name),
				`e.g. from: "ConfigMap/settings:.data.url"`)
		}
	}
}

func (v *validator) chart(p string, ch *Chart) {
	sources := 0
	for _, set := range []bool{ch.Path != "" && ch.Git == "", ch.Git != "", ch.Repo != ""} {
		if set {
			sources++
		}
	}
	if sources > 1 {
		v.err(p, "", "set one chart source: path (local), git (with ref and path), or repo (with name)", "")
	}
	if ch.Git != "" && escapes(ch.Path) {
		v.err(p+".path", "", fmt.Sprintf("path %q must stay inside the repository", ch.Path), "write it relative to the repository's root")
	}
	if ch.Repo != "" && ch.Name == "" && !strings.HasPrefix(ch.Repo, "oci://") {
		v.missing(p, "name", "the chart's name in the repository")
	}
	if ch.Repo != "" && !strings.HasPrefix(ch.Repo, "https://") && !strings.HasPrefix(ch.Repo, "http://") && !strings.HasPrefix(ch.Repo, "oci://") {
		v.err(p+".repo", "", fmt.Sprintf("%q is not a chart repository URL", ch.Repo), "an https:// chart repository or an oci:// registry; a git repository goes in chart.git")
	}
	if ch.Ref != "" && ch.Git == "" {
		v.err(p+".ref", "", "ref is only for a chart from git", "set chart.git to the repository")
	}
	for i, f := range ch.ValuesFiles {
		v.localPath(fmt.Sprintf("%s.valuesFiles[%d]", p, i), f)
	}
	if ch.Timeout != "" {
		if _, err := parseDuration(ch.Timeout); err != nil {
			v.err(p+".timeout", "", fmt.Sprintf("%q is not a duration", ch.Timeout), "e.g. 90s or 5m")
		}
	}
	if ch.MaxHistory < 0 {
		v.err(p+".maxHistory", "", fmt.Sprintf("maxHistory %d is negative", ch.MaxHistory), "how many revisions Helm keeps: 1 or more (default 10)")
	}
	if ch.Release != "" {
		if why := checkName(ch.Release); why != "" || len(ch.Release) > 53 {
			v.err(p+".release", "", fmt.Sprintf("%q is not a valid release name", ch.Release), "lower-case letters, digits and -, at most 53 characters")
		}
	}
}

// envName is an environment variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (v *validator) kubeconfig(p string, k *Kubeconfig, c *Component) {
	parts := k.Server != nil || k.CA != nil || k.Token != nil
	ways := 0
	for _, set := range []bool{k.Path != "", k.FromEnv != "", k.ValueFrom != "", parts} {
		if set {
			ways++
		}
	}
	switch {
	case ways > 1:
		v.err(p, "", "set one of: path, fromEnv, valueFrom, or server with ca and token", "context may go with path, fromEnv or valueFrom")
	case ways == 0 && k.Context == "":
		v.err(p, "", "empty kubeconfig", "set path, fromEnv, context, valueFrom, or server with ca and token")
	case parts && k.Context != "":
		v.err(p+".context", "", "context goes with path, fromEnv or valueFrom, not with server", "")
	}
	if k.FromEnv != "" && (!envName.MatchString(k.FromEnv) || !strings.Contains(k.FromEnv, "KUBECONFIG")) {
		v.err(p+".fromEnv", "", fmt.Sprintf("%q is not a kubeconfig variable", k.FromEnv),
			"name a variable of knit's environment holding a kubeconfig's path: KUBECONFIG, or a name containing KUBECONFIG")
	}
	if k.ValueFrom != "" {
		v.valueFrom(p+".valueFrom", k.ValueFrom, c)
	}
	if parts {
		if k.Server == nil {
			v.missing(p, "server", "the API server's URL, e.g. {valueFrom: cluster.endpoint}")
		}
		for _, part := range []struct {
			name string
			kv   *KubeValue
		}{{"server", k.Server}, {"ca", k.CA}, {"token", k.Token}} {
			if part.kv == nil {
				continue
			}
			pp := p + "." + part.name
			switch {
			case part.kv.Value != "" && part.kv.ValueFrom != "":
				v.err(pp, "", "set value or valueFrom, not both", "")
			case part.kv.ValueFrom != "":
				v.valueFrom(pp+".valueFrom", part.kv.ValueFrom, c)
			case part.kv.Value == "":
				v.err(pp, "", "set value or valueFrom", "")
			}
		}
		if k.Token != nil && k.Token.Value != "" {
			v.warn(p+".token.value", "a token written in the file is readable by anyone who can read the file", "take it from an upstream output: token: {valueFrom: cluster.token}")
		}
	}
}

func parseDuration(s string) (time.Duration, error) { return time.ParseDuration(s) }
