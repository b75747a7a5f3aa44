package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"knit.dev/knit/internal/schedule"

	"knit.dev/knit/internal/diag"
)

// errAt builds an error at the field path+"."+sub; the position is the
// nearest ancestor field that was written (a missing field has no position).
func errAt(env *Environment, path, sub, msg, hint string) diag.Diagnostic {
	field := path
	if sub != "" {
		field = join(path, sub)
	}
	return diag.Diagnostic{Severity: diag.Error, Pos: env.nearestPos(field), Field: field, Message: msg, Hint: hint}
}

func warnAt(env *Environment, path, msg, hint string) diag.Diagnostic {
	d := errAt(env, path, "", msg, hint)
	d.Severity = diag.Warning
	return d
}

func (e *Environment) nearestPos(path string) diag.Pos {
	for p := path; p != ""; p = parentPath(p) {
		if pos, ok := e.pos[p]; ok {
			return pos
		}
	}
	if pos, ok := e.pos[""]; ok {
		return pos
	}
	return diag.Pos{File: e.File}
}

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// validator accumulates every problem of one environment.
type validator struct {
	env   *Environment
	diags diag.Diagnostics
	names map[string]int // component name → index
	mods  map[*Component]*moduleView
	// modFiles are the modules read, by folder, shared by the components
	// that use them.
	modFiles map[string]*moduleView
	// schemas are the chart values to check against their schemas, all
	// at once at the end (chartSchemas).
	schemas []chartSchema
}

func (v *validator) err(path, sub, msg, hint string) {
	v.diags = append(v.diags, errAt(v.env, path, sub, msg, hint))
}

// missing reports the required field path.sub as missing, unless it (or
// a field around it) was written but could not be decoded: that error
// already says what is wrong.
func (v *validator) missing(path, sub, hint string) {
	if !v.undecodable(join(path, sub)) {
		v.err(path, sub, "missing required field", hint)
	}
}

// undecodable reports whether the field at path, or one around it, was
// written but could not be decoded.
func (v *validator) undecodable(path string) bool {
	for p := path; p != ""; p = parentPath(p) {
		if v.env.bad[p] {
			return true
		}
	}
	return false
}

func (v *validator) warn(path, msg, hint string) {
	v.diags = append(v.diags, warnAt(v.env, path, msg, hint))
}

func validate(env *Environment) diag.Diagnostics {
	v := &validator{env: env, names: map[string]int{}}
	v.header()
	v.componentNames()
	v.driftPolicy("spec.drift", env.Spec.Drift)
	v.ttl()
	v.rollout()
	if env.Spec.Approval != nil && env.APIVersion != APIVersionKnit {
		v.err("spec.approval", "", "approval needs apiVersion: "+APIVersionKnit, "change apiVersion to "+APIVersionKnit)
	}
	if len(env.Spec.Policies) > 0 && env.APIVersion != APIVersionKnit {
		v.err("spec.policies", "", "policies needs apiVersion: "+APIVersionKnit, "change apiVersion to "+APIVersionKnit)
	}
	for i, p := range env.Spec.Policies {
		if _, err := env.LocalPath(p); err != nil {
			v.err(fmt.Sprintf("spec.policies[%d]", i), "", err.Error(), "name a folder of Rego files inside the environment's folder")
		}
	}
	for i, c := range env.Spec.Components {
		p := fmt.Sprintf("spec.components[%d]", i)
		v.component(p, c)
		v.driftPolicy(p+".drift", c.Drift)
	}
	v.health()
	v.exports()
	v.cycles()
	v.chartSchemas()
	return v.diags
}

// driftPolicy checks a drift block: knit.dev/v1 only, a known policy.
// Schedules are parsed where they are used (the server), which reports a
// bad one against the file.
func (v *validator) driftPolicy(path string, d *DriftPolicy) {
	if d == nil {
		return
	}
	if v.env.APIVersion != APIVersionKnit {
		v.err(path, "", "drift needs apiVersion: "+APIVersionKnit, "change apiVersion to "+APIVersionKnit+", or use cronSchedule on a component")
		return
	}
	switch d.Policy {
	case "", DriftReconcile, DriftApprove, DriftAlert:
	default:
		v.err(path, "policy", fmt.Sprintf("unknown drift policy %q", d.Policy), "use reconcile, approve or alert")
	}
	v.schedule(path+".schedule", d.Schedule)
}

// schedule checks a drift schedule's syntax (empty: none). How short an
// interval may be is the server's setting, checked there.
func (v *validator) schedule(path, expr string) {
	if expr == "" {
		return
	}
	if _, err := schedule.Parse(expr, schedule.MinEvery(time.Nanosecond)); err != nil {
		v.err(path, "", err.Error(), `use "@every 30m", "@hourly" or five-field cron ("*/15 * * * *")`)
	}
}

// ttl checks spec.ttl: knit.dev/v1 only, a duration within TTL bounds.
func (v *validator) ttl() {
	if v.env.Spec.TTL == "" {
		return
	}
	if v.env.APIVersion != APIVersionKnit {
		v.err("spec.ttl", "", "ttl needs apiVersion: "+APIVersionKnit, "change apiVersion to "+APIVersionKnit)
		return
	}
	if _, err := ParseTTL(v.env.Spec.TTL); err != nil {
		v.err("spec.ttl", "", err.Error(), `write a duration between 1s and 8760h, e.g. "72h" or "30m"`)
	}
}

func (v *validator) header() {
	s := &v.env.Spec
	if _, ok := v.env.pos["spec"]; !ok {
		v.missing("", "spec", "add spec: with teamName, envName and components")
		return
	}
	for _, f := range []struct{ name, value string }{{"teamName", s.TeamName}, {"envName", s.EnvName}} {
		switch {
		case f.value == "":
			v.missing("spec", f.name, "")
		default:
			if why := checkName(f.value); why != "" {
				v.err("spec."+f.name, "", why, nameHint)
			}
		}
	}
	if len(s.Components) == 0 && !v.undecodable("spec.components") {
		v.err("spec", "components", "an environment needs at least one component", "")
	}
	if sr := s.SelectiveReconcile; sr != nil {
		if sr.TagName == "" {
			v.missing("spec.selectiveReconcile", "tagName", "")
		}
		if len(sr.TagValues) == 0 {
			v.missing("spec.selectiveReconcile", "tagValues", "list the tag values to reconcile")
		}
	}
	if k := s.Kubeconfig; k != nil {
		if isCloudKnitAPI(v.env.APIVersion) {
			v.err("spec.kubeconfig", "", "kubeconfig needs apiVersion: "+APIVersionKnit, "")
		} else {
			v.kubeconfig("spec.kubeconfig", k, nil)
		}
	}
	if s.Workspace != "" {
		v.warn("spec.workspace", "not yet supported: knit keeps the field but does not act on it", "")
	}
}

func (v *validator) componentNames() {
	for i, c := range v.env.Spec.Components {
		p := fmt.Sprintf("spec.components[%d]", i)
		if c.Name == "" {
			v.missing(p, "name", "")
			continue
		}
		if why := checkName(c.Name); why != "" {
			v.err(p+".name", "", why, nameHint)
		}
		if first, dup := v.names[c.Name]; dup {
			v.err(p+".name", "", fmt.Sprintf("component %q is declared twice", c.Name),
				fmt.Sprintf("the first is spec.components[%d] (line %d)", first, v.env.nearestPos(fmt.Sprintf("spec.components[%d]", first)).Line))
			continue
		}
		v.names[c.Name] = i
	}
}

func (v *validator) componentList() []string {
	out := make([]string, 0, len(v.names))
	for n := range v.names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

var typesByAPI = map[string][]string{
	APIVersionCloudKnit: {TypeTerraform},
	APIVersionKnit:      {TypeTerraform, TypeHelm, TypeManifests, TypeScript},
}

func (v *validator) component(p string, c *Component) {
	v.componentType(p, c)
	if c.Destroy && v.env.Spec.Teardown {
		v.err(p+".destroy", "", "destroy: true conflicts with spec.teardown: true",
			"teardown destroys every component already; remove destroy from this component")
	}
	seen := map[string]bool{}
	for i, dep := range c.DependsOn {
		dp := fmt.Sprintf("%s.dependsOn[%d]", p, i)
		switch {
		case dep == c.Name:
			v.err(dp, "", fmt.Sprintf("component %q depends on itself", c.Name), "remove it from dependsOn")
		case !v.known(dep):
			v.err(dp, "", fmt.Sprintf("component %q does not exist", dep), suggest(dep, v.componentList()))
		case seen[dep]:
			v.warn(dp, fmt.Sprintf("%q is listed twice in dependsOn", dep), "")
		}
		seen[dep] = true
	}
	v.variables(p, c)
	v.moduleInputs(p, c)
	v.outputs(p, c)
	v.kubernetes(p, c)
	v.files(p, c)
	v.notYetSupported(p, c)
}

func (v *validator) known(name string) bool { _, ok := v.names[name]; return ok }

func (v *validator) componentType(p string, c *Component) {
	allowed := typesByAPI[APIVersionKnit]
	if isCloudKnitAPI(v.env.APIVersion) {
		allowed = typesByAPI[APIVersionCloudKnit]
	}
	switch {
	case c.Type == "":
		v.missing(p, "type", "one of: "+strings.Join(allowed, ", "))
	case !contains(allowed, c.Type):
		hint := "one of: " + strings.Join(allowed, ", ")
		if s := suggest(c.Type, allowed); s != "" {
			hint = s
		} else if contains(typesByAPI[APIVersionKnit], c.Type) {
			hint = fmt.Sprintf("type %s needs apiVersion: %s", c.Type, APIVersionKnit)
		}
		v.err(p+".type", "", fmt.Sprintf("unsupported component type %q", c.Type), hint)
		return // which block it needs depends on a type it does not have
	}
	// Each type takes exactly its own block.
	blocks := []struct {
		typ, name string
		set       bool
	}{
		{TypeTerraform, "module", c.Module != nil},
		{TypeHelm, "chart", c.Chart != nil},
		{TypeManifests, "manifests", c.Manifests != nil},
		{TypeScript, "script", c.Script != nil},
	}
	for _, b := range blocks {
		switch {
		case b.typ == c.Type && !b.set:
			v.missing(p, b.name, fmt.Sprintf("a %s component needs a %s block", c.Type, b.name))
		case b.typ != c.Type && b.set && c.Type != "":
			v.err(p+"."+b.name, "", fmt.Sprintf("%s is only for type %s components", b.name, b.typ), "")
		}
	}
	switch {
	case c.Type == TypeTerraform && c.Module != nil:
		v.module(p+".module", c.Module)
	case c.Type == TypeHelm && c.Chart != nil:
		switch ch := c.Chart; {
		case ch.Path == "" && ch.Git == "" && ch.Repo == "":
			v.missing(p+".chart", "path", "set chart.path to a local chart, chart.git (with ref and path), or chart.repo and chart.name")
		case ch.Git == "":
			v.localPath(p+".chart.path", ch.Path)
			v.chartDependencies(p+".chart.path", ch)
			v.chartValues(p, c)
		}
		switch ch := c.Chart; {
		case ch.Dependencies != "" && ch.Dependencies != DependenciesVendor && ch.Dependencies != DependenciesBuild:
			v.err(p+".chart.dependencies", "", fmt.Sprintf("dependencies %q is neither %q nor %q", ch.Dependencies, DependenciesVendor, DependenciesBuild),
				"vendor: the chart's charts/ folder holds them (the default); build: Helm's dependency build fetches them at each plan")
		case ch.Dependencies == DependenciesBuild && (ch.Path == "" || ch.Repo != ""):
			v.err(p+".chart.dependencies", "", "dependencies: build is for a local or git chart (chart.path)",
				"a chart from a repository comes with its dependencies packaged")
		}
	case c.Type == TypeManifests && c.Manifests != nil:
		if c.Manifests.Path == "" {
			v.missing(p+".manifests", "path", "")
		}
		v.localPath(p+".manifests.path", c.Manifests.Path)
	case c.Type == TypeScript && c.Script != nil:
		if c.Script.Apply == "" {
			v.missing(p+".script", "apply", "the command that creates or updates the component")
		}
	}
}

func (v *validator) module(p string, m *Module) {
	if m.Source == "" {
		v.missing(p, "source", "a local path (./modules/x), a git URL (?ref=), an OCI address (oci://host/repo?tag=), a registry address, or aws with name")
		return
	}
	if escapes(m.Path) {
		v.err(p+".path", "", fmt.Sprintf("path %q must stay inside the module's source", m.Path),
			"module.path is a folder inside the source, written relative to it")
		return
	}
	src, err := v.env.ModuleSource(m)
	switch {
	case err != nil && m.Source == "aws" && m.Name == "":
		v.err(p, "name", err.Error(), "")
	case err != nil && IsLocalPath(m.Source):
		v.err(p+".source", "", err.Error(), "keep modules inside the environment's folder, or use a git source")
	case err != nil && strings.HasPrefix(m.Source, ociScheme):
		v.err(p+".source", "", err.Error(), "write oci://host/repository?tag=T or ?digest=sha256:<64 hex>")
	case err != nil:
		v.err(p+".source", "", err.Error(), "a local path (./modules/x), a git URL (?ref=), an OCI address (oci://host/repo?tag=), a registry address, or aws with name")
	case src.Kind == SourceLocal:
		if st, err := os.Stat(src.Path); err != nil || !st.IsDir() {
			v.err(p+".source", "", fmt.Sprintf("module folder %q does not exist", m.Source), "paths are relative to the environment file's folder")
		} else if dir, err := v.env.LocalPath(m.Source); err == nil {
			// The whole folder is copied for the tool: a link in it
			// must not lead out (in GitOps, out of the commit's files).
			if err := ContainModule(v.env.RootDir(), dir); err != nil {
				v.err(p+".source", "", err.Error(), "keep modules inside the environment's folder, or use a git source")
			}
		}
	}
}

// localPath checks a path that is read from the environment's folder: it
// must stay inside that folder and exist.
func (v *validator) localPath(p, path string) {
	if path == "" {
		return
	}
	full, err := v.env.LocalPath(path)
	if err != nil {
		v.err(p, "", err.Error(), "keep files inside the environment's folder, or use a git source")
		return
	}
	if _, err := os.Stat(full); err != nil {
		v.err(p, "", fmt.Sprintf("%q does not exist", path), "paths are relative to the environment file's folder")
	}
}

func (v *validator) files(p string, c *Component) {
	if vf := c.VariablesFile; vf != nil {
		if vf.Path == "" {
			v.missing(p+".variablesFile", "path", "")
		} else if vf.Source == "" {
			v.localPath(p+".variablesFile.path", vf.Path)
		} else if escapes(vf.Path) {
			v.err(p+".variablesFile.path", "", fmt.Sprintf("path %q must stay inside the repository", vf.Path),
				"write it relative to the repository's root")
		}
	}
	for i, o := range c.OverlayFiles {
		op := fmt.Sprintf("%s.overlayFiles[%d]", p, i)
		if len(o.Paths) == 0 {
			v.missing(op, "paths", "list the files or folders to add to the module")
		}
		for j, path := range o.Paths {
			pp := fmt.Sprintf("%s.paths[%d]", op, j)
			switch {
			case o.Source == "":
				v.localPath(pp, path)
			case escapes(path):
				v.err(pp, "", fmt.Sprintf("path %q must stay inside the repository", path),
					"write it relative to the repository's root")
			}
		}
	}
	for i, o := range c.OverlayData {
		op := fmt.Sprintf("%s.overlayData[%d]", p, i)
		switch {
		case o.Name == "":
			v.missing(op, "name", "")
		case strings.ContainsAny(o.Name, `/\`) || o.Name == "." || o.Name == "..":
			v.err(op+".name", "", fmt.Sprintf("%q must be a plain file name", o.Name), "")
		}
	}
}

func (v *validator) notYetSupported(p string, c *Component) {
	const hint = "knit keeps this field but does not act on it yet"
	if len(c.Secrets) > 0 {
		v.warn(p+".secrets", "not yet supported: secrets", hint)
	}
	if c.AWS != nil {
		v.warn(p+".aws", "not yet supported: aws", hint)
	}
	v.schedule(p+".cronSchedule", c.CronSchedule)
	if c.Subtype != "" {
		v.warn(p+".subtype", "not yet supported: subtype", hint)
	}
	if c.Module != nil && c.Module.Source != "" {
		if src, err := v.env.ModuleSource(c.Module); err == nil && src.Kind == SourceRegistry {
			v.registryVersion(p+".module.version", src.Ref)
		}
	}
}

// cycles reports every dependency cycle, positioned at its first component.
func (v *validator) cycles() {
	g := v.env.Graph()
	for _, cyc := range g.Cycles() {
		path := append(append([]string{}, cyc...), cyc[0])
		p := fmt.Sprintf("spec.components[%d].dependsOn", v.names[cyc[0]])
		v.err(p, "", "cycle: "+strings.Join(path, " → "), "break the cycle by removing one dependsOn or valueFrom")
	}
}

// escapes reports whether p, a path inside some root (a repository, a
// module's source), is absolute or climbs out of that root.
func escapes(p string) bool {
	if p == "" {
		return false
	}
	c := filepath.ToSlash(filepath.Clean(p))
	return filepath.IsAbs(p) || strings.HasPrefix(p, "/") || c == ".." || strings.HasPrefix(c, "../")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
