package policy

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"

	"knit.dev/knit/internal/diag"
)

// Error is why a set of policies cannot be loaded: every problem OPA found
// parsing or compiling them, each at its file:line:col. Load and its kin
// return it (errors.As finds it through wrapping), so that a caller can
// show each problem as a diagnostic.
type Error struct {
	Problems diag.Diagnostics
}

// Error renders the problems one a line, each as file:line:col: message.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = problemLine(p)
	}
	return strings.Join(lines, "\n")
}

// problemLine is p as file:line:col: message (the message alone when OPA
// gave no place).
func problemLine(p diag.Diagnostic) string {
	if p.Pos.File == "" {
		return p.Message
	}
	return p.Pos.String() + ": " + p.Message
}

// problems turns OPA's errors into diagnostics at their file:line:col (an
// error of another kind into one without a place).
func problems(err error) diag.Diagnostics {
	var aerrs ast.Errors
	if !errors.As(err, &aerrs) {
		var one *ast.Error
		if !errors.As(err, &one) {
			return diag.Diagnostics{{Severity: diag.Error, Message: err.Error()}}
		}
		aerrs = ast.Errors{one}
	}
	out := make(diag.Diagnostics, 0, len(aerrs))
	for _, e := range aerrs {
		d := diag.Diagnostic{Severity: diag.Error, Message: e.Message}
		if e.Location != nil {
			d.Pos = diag.Pos{File: e.Location.File, Line: e.Location.Row, Col: e.Location.Col}
		}
		out = append(out, d)
	}
	return out
}

// located renders OPA's errors as "file:line:col: message", one a line.
func located(err error) []string {
	ps := problems(err)
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = problemLine(p)
	}
	return out
}

// Check loads the policies under dir (a folder, or one .rego file) as Load
// does and reports what stops them from loading, each problem at its
// file:line:col: a file that does not parse, a rule that does not compile,
// a decision rule that is not a set of messages, a folder that cannot be
// read (at the folder); and, as warnings, what decides nothing (lint). It
// returns the policy files it read.
func Check(ctx context.Context, dir string) ([]string, diag.Diagnostics) {
	s, err := Load(ctx, dir)
	if err == nil {
		modules, err := parse(s.Files)
		if err != nil { // they parsed a moment ago: changed since
			return s.Files, problems(err)
		}
		ds := lint(dir, modules, s.Files)
		ds.Sort()
		return s.Files, ds
	}
	var pe *Error
	if errors.As(err, &pe) {
		ds := slices.Clone(pe.Problems)
		ds.Sort()
		return nil, ds
	}
	return nil, diag.Diagnostics{{Severity: diag.Error, Pos: diag.Pos{File: dir}, Message: err.Error()}}
}
