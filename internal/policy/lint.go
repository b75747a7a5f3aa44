package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"knit.dev/knit/internal/diag"
)

// knitPackage is the package whose rules make decisions.
const knitPackage = "knit"

// lint reports what compiles yet decides nothing, as warnings: a package
// named like knit but not it (package knt), a rule of package knit named
// like a decision rule but not one (denny), and policies with no decision
// rule at all. A policy that silently decides nothing is a gate that is
// not there.
func lint(dir string, modules map[string]*ast.Module, files []string) diag.Diagnostics {
	var ds diag.Diagnostics
	warn := func(loc *ast.Location, file, msg, hint string) {
		d := diag.Diagnostic{Severity: diag.Warning, Pos: diag.Pos{File: file}, Message: msg, Hint: hint}
		if loc != nil {
			d.Pos.Line, d.Pos.Col = loc.Row, loc.Col
		}
		ds = append(ds, d)
	}
	decides := false
	for _, f := range files {
		m := modules[f]
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		if pkg != knitPackage {
			if s := diag.DidYouMean(pkg, []string{knitPackage}); s != "" {
				warn(m.Package.Location, f, fmt.Sprintf("package %s makes no decision: knit's decisions are the rules of package %s", pkg, knitPackage), s)
			}
			continue
		}
		for _, r := range m.Rules {
			name := r.Head.Name.String()
			if len(r.Head.Reference) > 0 {
				name = r.Head.Reference[0].Value.String()
			}
			if slices.Contains(decisionRules, name) {
				decides = true
				continue
			}
			if s := diag.DidYouMean(name, decisionRules); s != "" {
				warn(r.Location, f, fmt.Sprintf("rule %s makes no decision: only %s do", name, decisionNames()), s)
			}
		}
	}
	if !decides && len(files) > 0 {
		warn(nil, dir, fmt.Sprintf("no %s rule in package %s: these policies decide nothing", decisionNames(), knitPackage),
			"write deny contains msg if { … } (or warn, require_approval) in package knit")
	}
	return ds
}

// decisionNames is "deny, warn or require_approval".
func decisionNames() string {
	n := len(decisionRules)
	return strings.Join(decisionRules[:n-1], ", ") + " or " + decisionRules[n-1]
}
