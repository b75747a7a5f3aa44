package spec

import (
	"fmt"
	"strings"
)

// envValueFrom checks valueFrom {environment, output}: knit.dev/v1, a
// producer named TEAM/ENV (never a metadata name, which could name two
// environments), another environment than this one, an output written
// COMPONENT.OUTPUT. Whether the producer exports it to this team is the
// store's to answer (knit.CheckEnvOutputs), not the file's.
func (v *validator) envValueFrom(fp string, value ValueFrom) {
	if v.env.APIVersion != APIVersionKnit {
		v.err(fp, "", "valueFrom {environment, output} needs apiVersion: "+APIVersionKnit, "change apiVersion to "+APIVersionKnit)
		return
	}
	env, out := value.parts()
	team, name, ok := strings.Cut(env, "/")
	switch {
	case env == "":
	case !ok || checkName(team) != "" || checkName(name) != "" || strings.Contains(name, "/"):
		v.err(fp+".environment", "", fmt.Sprintf("%q is not of the form TEAM/ENV", env),
			"name the producer by its teamName and envName, e.g. environment: platform/eu-1 (a metadata name is not accepted here)")
	case team == v.env.Spec.TeamName && name == v.env.Spec.EnvName:
		v.err(fp+".environment", "", fmt.Sprintf("%s is this environment", env),
			"read this environment's own outputs with valueFrom: COMPONENT.OUTPUT")
	}
	if _, ok := ParseValueFrom(ValueFrom(out)); out != "" && !ok {
		v.err(fp+".output", "", fmt.Sprintf("%q is not of the form COMPONENT.OUTPUT or COMPONENT.OUTPUT[N]", out),
			"e.g. output: cluster.endpoint, a component of the producer and an output it exports")
	}
}

// exports checks spec.exports: knit.dev/v1, each a declared output
// (COMPONENT.OUTPUT, no index) exported once, to teams named once each.
func (v *validator) exports() {
	ex := v.env.Spec.Exports
	if len(ex) == 0 {
		return
	}
	if v.env.APIVersion != APIVersionKnit {
		v.err("spec.exports", "", "exports needs apiVersion: "+APIVersionKnit, "change apiVersion to "+APIVersionKnit)
		return
	}
	seen := map[string]bool{}
	for i, e := range ex {
		p := fmt.Sprintf("spec.exports[%d]", i)
		v.export(p, e)
		if e.Output != "" && seen[e.Output] {
			v.err(p+".output", "", fmt.Sprintf("%s is exported twice", e.Output), "list every team that may read it in one entry's teams")
		}
		seen[e.Output] = true
	}
}

func (v *validator) export(p string, e Export) {
	ref, ok := ParseValueFrom(ValueFrom(e.Output))
	switch {
	case e.Output == "":
		v.missing(p, "output", "e.g. output: cluster.endpoint")
	case !ok || ref.Index != nil:
		v.err(p+".output", "", fmt.Sprintf("%q is not of the form COMPONENT.OUTPUT", e.Output),
			"export a whole output of one of this environment's components, e.g. output: cluster.endpoint")
	default:
		v.declaredOutput(p+".output", ref)
	}
	if len(e.Teams) == 0 {
		v.missing(p, "teams", "list the teams whose environments may read it, e.g. teams: [shop]")
	}
	teams := map[string]bool{}
	for j, t := range e.Teams {
		tp := fmt.Sprintf("%s.teams[%d]", p, j)
		if why := checkName(t); why != "" {
			v.err(tp, "", why, "a team is a teamName: "+nameHint)
		} else if teams[t] {
			v.err(tp, "", fmt.Sprintf("team %q is listed twice", t), "remove one of them")
		}
		teams[t] = true
	}
}
