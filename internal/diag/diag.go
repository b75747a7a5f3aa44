// Package diag carries problems found in user input to the person who wrote it:
// what is wrong, where (file, line, column, field path) and how to fix it.
package diag

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Severity says whether a diagnostic stops the input from being used.
type Severity string

// Severities, worst first.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Pos is a place in a file. Line and Col are 1-based; zero means unknown.
type Pos struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"column,omitempty"`
}

// String renders the position as file:line:col, leaving out what is unknown.
func (p Pos) String() string {
	switch {
	case p.Line == 0:
		return p.File
	case p.Col == 0:
		return fmt.Sprintf("%s:%d", p.File, p.Line)
	default:
		return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	}
}

// Diagnostic is one problem: a summary naming the field, an optional hint on
// how to fix it, and where it is.
type Diagnostic struct {
	Severity  Severity `json:"severity"`
	Pos       Pos      `json:"pos"`
	Field     string   `json:"field,omitempty"`
	Message   string   `json:"message"`
	Hint      string   `json:"hint,omitempty"`
	Component string   `json:"component,omitempty"`
}

// String renders "file:line:col: field: message" with the hint on a second line.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(d.Pos.String())
	b.WriteString(": ")
	if d.Severity == Warning {
		b.WriteString("warning: ")
	}
	if d.Field != "" {
		b.WriteString(d.Field)
		b.WriteString(": ")
	}
	b.WriteString(d.Message)
	if d.Hint != "" {
		b.WriteString("\n    hint: ")
		b.WriteString(d.Hint)
	}
	return b.String()
}

// Diagnostics is a list of problems, accumulated so a person sees all of them at once.
type Diagnostics []Diagnostic

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}

// Errors returns only the error diagnostics.
func (ds Diagnostics) Errors() Diagnostics { return ds.filter(Error) }

// Warnings returns only the warnings.
func (ds Diagnostics) Warnings() Diagnostics { return ds.filter(Warning) }

func (ds Diagnostics) filter(s Severity) Diagnostics {
	var out Diagnostics
	for _, d := range ds {
		if d.Severity == s {
			out = append(out, d)
		}
	}
	return out
}

// Sort orders diagnostics by file, line, column, field, then message, so output is stable.
func (ds Diagnostics) Sort() {
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.Pos.File != b.Pos.File {
			return a.Pos.File < b.Pos.File
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line < b.Pos.Line
		}
		if a.Pos.Col != b.Pos.Col {
			return a.Pos.Col < b.Pos.Col
		}
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		return a.Message < b.Message
	})
}

// String renders every diagnostic, one per line (hints indented below).
func (ds Diagnostics) String() string {
	lines := make([]string, len(ds))
	for i, d := range ds {
		lines[i] = d.String()
	}
	return strings.Join(lines, "\n")
}

// Err returns nil when there are no errors, otherwise an *Error holding them all.
func (ds Diagnostics) Err() error {
	if !ds.HasErrors() {
		return nil
	}
	return &ErrorList{Diagnostics: ds.Errors()}
}

// ErrorList is an error made of diagnostics; errors.As finds it through wrapping.
type ErrorList struct {
	Diagnostics Diagnostics
}

func (e *ErrorList) Error() string {
	n := len(e.Diagnostics)
	if n == 1 {
		return e.Diagnostics[0].String()
	}
	return fmt.Sprintf("%d problems:\n%s", n, e.Diagnostics.String())
}

// From returns the diagnostics inside err, if it carries any.
func From(err error) (Diagnostics, bool) {
	var el *ErrorList
	if errors.As(err, &el) {
		return el.Diagnostics, true
	}
	return nil, false
}
