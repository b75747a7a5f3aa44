package kubecontroller

import (
	"fmt"
	"slices"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// Tenancy says which team each namespace's Environment objects act for,
// and where an object may adopt an environment it did not create. It is
// the controller's configuration, set by whoever runs knit controller (a
// cluster admin), never by an object: Kubernetes RBAC decides who may
// write objects in a namespace, Tenancy which team's environments those
// objects may name.
type Tenancy struct {
	// Teams maps a namespace to its team (--team-for-namespace ns=team).
	Teams map[string]string
	// DefaultTeam is the team of a namespace Teams does not name
	// (--default-team). Empty: such a namespace's objects are refused
	// (Stalled, NamespaceNotMapped) and nothing runs; an unmapped
	// namespace never acts for a team by accident.
	DefaultTeam string
	// AllowAdopt lists the namespaces whose objects may adopt, with the
	// annotation knit.dev/adopt: "true", an environment that GitOps or
	// the CLI applied (--allow-adopt). An annotation alone is never
	// enough: anyone who may write an object may write its annotations.
	AllowAdopt []string
}

// AdoptAnnotation, set to "true" on an Environment of a namespace listed
// in Tenancy.AllowAdopt, lets it take over an environment applied by
// other means (GitOps, the CLI); the adoption is audited.
const AdoptAnnotation = "knit.dev/adopt"

// team returns the team namespace ns acts for, or a refusal (reason and
// message) when it acts for none.
func (t Tenancy) team(ns string) (string, *refusal) {
	if team, ok := t.Teams[ns]; ok {
		return team, nil
	}
	if t.DefaultTeam != "" {
		return t.DefaultTeam, nil
	}
	return "", &refusal{ReasonNamespaceNotMapped, fmt.Sprintf(
		"namespace %s is mapped to no team: nothing runs until the controller's configuration names its team (knit controller --team-for-namespace %s=TEAM, or --default-team TEAM)", ns, ns)}
}

// check refuses an Environment of namespace ns whose spec names another
// team than the namespace's.
func (t Tenancy) check(ns string, env *spec.Environment) (string, *refusal) {
	team, no := t.team(ns)
	if no != nil {
		return "", no
	}
	if env.Spec.TeamName != team {
		return "", &refusal{ReasonOtherTeam, fmt.Sprintf(
			"namespace %s acts for team %s (the controller's --team-for-namespace), and this object names teamName %s: nothing runs; give teamName %s, or create the object in a namespace of team %s",
			ns, team, env.Spec.TeamName, team, env.Spec.TeamName)}
	}
	return team, nil
}

// mayAdopt reports whether the object of namespace ns, with annotations
// ann, may take over an environment it did not create.
func (t Tenancy) mayAdopt(ns string, ann map[string]string) bool {
	return ann[AdoptAnnotation] == "true" && slices.Contains(t.AllowAdopt, ns)
}

// caller is the identity the library sees for an object acting for team:
// an operator limited to that team, so every environment the library
// resolves for it (by name, in an approval, a teardown) is checked at the
// library's door too.
func caller(actor, team string) view.Token {
	return view.Token{Name: actor, Role: store.RoleOperator, Teams: []string{team}}
}

// refusal is why an object may not act: a Stalled condition's reason and
// message.
type refusal struct{ reason, msg string }
