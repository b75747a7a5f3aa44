package view

import (
	"encoding/json"
	"fmt"

	"knit.dev/knit/internal/plan"
)

// EnvDiff answers "what would making A look like B change?": the resolved
// specs of two environments (or two revisions of one) compared component
// by component, and, where a component is applied on both sides, its live
// outputs side by side. Sensitive values never appear in it: they are
// Masked on both sides.
type EnvDiff struct {
	A DiffSide `json:"a"`
	B DiffSide `json:"b"`
	// Same is true when nothing differs: no field, no component, no output.
	Same bool `json:"same"`
	// Environment holds the differences of environment-wide fields.
	Environment []FieldDiff `json:"environment"`
	// Components are every component of either side, in B's order then
	// those only in A.
	Components []ComponentDiff `json:"components"`
}

// DiffSide is one side of a diff: an environment at a revision.
type DiffSide struct {
	Env      string `json:"env"`
	Revision int    `json:"revision"`
	// Applied is true when Revision is the revision the environment is
	// applied at; Latest is the newest revision knit has seen of it.
	Applied bool   `json:"applied"`
	Latest  int    `json:"latest"`
	Status  string `json:"status"`
}

// Component changes: what making A look like B would do to a component.
const (
	ComponentAdded   = "added"   // only in B
	ComponentRemoved = "removed" // only in A
	ComponentChanged = "changed" // in both, some field differs
	ComponentSame    = "same"    // in both, no field differs
)

// ComponentDiff is one component compared. Outputs are set when the
// component is applied on both sides.
type ComponentDiff struct {
	Name    string       `json:"name"`
	Change  string       `json:"change"`
	Fields  []FieldDiff  `json:"fields"`
	Outputs []OutputDiff `json:"outputs,omitempty"`
}

// FieldDiff is one field whose value differs: A's value and B's. Field is
// a path such as "module.version", "variables.size" or "dependsOn".
type FieldDiff struct {
	Field string `json:"field"`
	Sides
}

// OutputDiff is one live output of a component applied on both sides,
// side by side; Same says whether the values are equal (a sensitive one's
// too, though neither is shown).
type OutputDiff struct {
	Name string `json:"name"`
	Sides
	Same bool `json:"same"`
}

// Sides is a value on each side. A side that lacks it is named by Missing
// ("a" or "b") and its value is null; a sensitive value is Masked on both
// sides.
type Sides struct {
	A         any    `json:"a"`
	B         any    `json:"b"`
	Missing   string `json:"missing,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
}

// ShownA and ShownB are each side as a person reads it: JSON, "(unset)"
// when the side lacks it, the mask as is.
func (s Sides) ShownA() string { return shown(s.A, s.Missing == "a", s.Sensitive) }
func (s Sides) ShownB() string { return shown(s.B, s.Missing == "b", s.Sensitive) }

// OutputsDiffer reports whether any live output differs between the sides.
func (c ComponentDiff) OutputsDiffer() bool {
	for _, o := range c.Outputs {
		if !o.Same {
			return true
		}
	}
	return false
}

func shown(v any, missing, sensitive bool) string {
	switch {
	case missing:
		return "(unset)"
	case sensitive:
		return plan.MaskedValue
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
