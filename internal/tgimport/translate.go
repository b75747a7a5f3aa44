package tgimport

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"knit.dev/knit/internal/spec"
)

// Options say how a tree becomes environments.
type Options struct {
	// EnvLevel is how many folders below the root name an environment
	// (live/non-prod/us-east-1/qa/mysql with EnvLevel 3: the environment
	// is non-prod/us-east-1/qa). 0: the nearest folder above each unit
	// holding an env.hcl, else the unit's parent folder.
	EnvLevel int
	// Team is every environment's teamName (default: the root folder's name).
	Team string
	// Dir is the folder the environment files are written to; local
	// module paths are made relative to it.
	Dir string
	// HasEnvFile reports whether the folder (relative to the root) holds
	// an env.hcl; used when EnvLevel is 0.
	HasEnvFile func(folder string) bool
}

// Imported is one environment the import writes.
type Imported struct {
	// Folder is the environment folder of the tree; File the file name
	// it is written to (ENV.yaml).
	Folder string            `json:"folder"`
	File   string            `json:"file"`
	Env    *spec.Environment `json:"environment"`
	// Text is the file's content (set by Check).
	Text []byte `json:"-"`
}

// Result is an import: the environments and everything not carried.
type Result struct {
	Environments []Imported `json:"environments"`
	Findings     []Finding  `json:"findings"`
}

// placed is where a unit lands: its environment folder and component name.
type placed struct {
	env, component string
}

// Translate turns d into environments: one per environment folder, a
// terraform component per unit. Whatever it cannot carry is a finding,
// never silently dropped.
func Translate(d *Description, o Options) (*Result, error) {
	if o.Team == "" {
		o.Team = name(path.Base(strings.ReplaceAll(d.Root, "\\", "/")))
	}
	t := &translation{d: d, o: o, res: &Result{}, at: map[string]placed{}, envs: map[string]*spec.Environment{}, pendingOutputs: map[placed][]string{}}
	for _, f := range d.Findings {
		t.res.Findings = append(t.res.Findings, f)
	}
	t.place()
	for i := range d.Units {
		t.unit(&d.Units[i])
	}
	t.finish()
	return t.res, nil
}

type translation struct {
	d    *Description
	o    Options
	res  *Result
	at   map[string]placed // unit path → where it lands
	envs map[string]*spec.Environment
	// names of the environments, by folder
	envNames map[string]string
	// pendingOutputs are outputs read of components not translated yet.
	pendingOutputs map[placed][]string
}

func (t *translation) note(unit, pos, what, why string) {
	t.res.Findings = append(t.res.Findings, Finding{Unit: unit, Pos: pos, What: what, Why: why})
}

// place decides every unit's environment and component name first, so
// that references between units resolve whatever their order.
func (t *translation) place() {
	byEnv := map[string][]string{}
	for _, u := range t.d.Units {
		if u.Error != "" {
			continue
		}
		env, ok := t.envFolder(u.Path)
		if !ok {
			t.note(u.Path, u.File, "unit", fmt.Sprintf("not imported: it is not below an environment folder %d levels down (--env-per)", t.o.EnvLevel))
			continue
		}
		byEnv[env] = append(byEnv[env], u.Path)
	}
	folders := make([]string, 0, len(byEnv))
	for f := range byEnv {
		folders = append(folders, f)
	}
	sort.Strings(folders)
	t.envNames = uniqueNames(folders)
	for _, f := range folders {
		if f == "." {
			t.envNames[f] = t.o.Team
		}
		rels := make([]string, 0, len(byEnv[f]))
		for _, u := range byEnv[f] {
			rels = append(rels, relTo(f, u))
		}
		names := componentNames(rels)
		for i, u := range byEnv[f] {
			t.at[u] = placed{env: f, component: names[rels[i]]}
		}
	}
}

// componentNames names units by their path below the environment folder.
func componentNames(rels []string) map[string]string {
	out := map[string]string{}
	taken := map[string]bool{}
	for _, r := range rels {
		n := name(strings.ReplaceAll(r, "/", "-"))
		if taken[n] {
			n = name(n + "-" + shortHash(r))
		}
		taken[n] = true
		out[r] = n
	}
	return out
}

// envFolder is the environment folder of the unit at p.
func (t *translation) envFolder(p string) (string, bool) {
	parts := strings.Split(p, "/")
	if t.o.EnvLevel > 0 {
		if p == "." || len(parts) <= t.o.EnvLevel {
			return "", false
		}
		return strings.Join(parts[:t.o.EnvLevel], "/"), true
	}
	for d := path.Dir(p); t.o.HasEnvFile != nil; d = path.Dir(d) {
		if t.o.HasEnvFile(d) {
			return d, true
		}
		if d == "." {
			break
		}
	}
	if p == "." {
		return ".", true
	}
	return path.Dir(p), true
}

func relTo(folder, p string) string {
	if folder == "." {
		return p
	}
	return strings.TrimPrefix(p, folder+"/")
}

// env is the environment of folder, made on first use.
func (t *translation) env(folder string) *spec.Environment {
	if e := t.envs[folder]; e != nil {
		return e
	}
	n := t.envNames[folder]
	e := &spec.Environment{
		APIVersion: spec.APIVersionKnit, Kind: spec.KindEnvironment,
		Metadata: spec.Metadata{Name: name(t.o.Team + "-" + n), Annotations: map[string]string{"knit.dev/imported-from": "terragrunt:" + folder}},
		Spec:     spec.EnvSpec{TeamName: t.o.Team, EnvName: n},
	}
	t.envs[folder] = e
	return e
}

// finish orders environments and findings.
func (t *translation) finish() {
	folders := make([]string, 0, len(t.envs))
	for f := range t.envs {
		folders = append(folders, f)
	}
	sort.Strings(folders)
	for _, f := range folders {
		e := t.envs[f]
		sort.Slice(e.Spec.Components, func(i, j int) bool { return e.Spec.Components[i].Name < e.Spec.Components[j].Name })
		for _, c := range e.Spec.Components {
			sort.Slice(c.Outputs, func(i, j int) bool { return c.Outputs[i].Name < c.Outputs[j].Name })
		}
		t.res.Environments = append(t.res.Environments, Imported{Folder: f, File: e.Spec.EnvName + ".yaml", Env: e})
	}
	sort.SliceStable(t.res.Findings, func(i, j int) bool {
		a, b := t.res.Findings[i], t.res.Findings[j]
		if a.Unit != b.Unit {
			return a.Unit < b.Unit
		}
		return a.Pos < b.Pos
	})
}
