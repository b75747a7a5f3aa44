package knit

import "knit.dev/knit/internal/spec"

// exportsTo reports whether env lets team read output (COMPONENT.OUTPUT).
// Until spec.exports exists nothing is exported.
func exportsTo(env *spec.Environment, output, team string) bool { return false }

// exportsAnything reports whether env exports any output to team.
func exportsAnything(env *spec.Environment, team string) bool { return false }
