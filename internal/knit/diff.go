package knit

import (
	"context"
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	"sigs.k8s.io/yaml"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// RevisionDiff is what changed in an environment's file between two
// revisions, as written (YAML, comments kept), grouped by component.
type RevisionDiff struct {
	Env  string `json:"env"`
	A    int    `json:"a"`
	B    int    `json:"b"`
	Same bool   `json:"same"`
	// Groups are the changed parts of the file in the newer file's order:
	// the lines before the components, each component, the lines after.
	Groups []DiffGroup `json:"groups"`
}

// DiffGroup is the changes of one part of the file. Component is empty for
// the lines around the components (Title says which).
type DiffGroup struct {
	Component string     `json:"component,omitempty"`
	Title     string     `json:"title"`
	Hunks     []DiffHunk `json:"hunks"`
}

// DiffHunk is a unified-diff hunk; its Header names the component, as
// "@@ -12,7 +12,7 @@ component web".
type DiffHunk struct {
	Header string     `json:"header"`
	Lines  []DiffLine `json:"lines"`
}

// DiffLine is one line of a hunk: Kind is "ctx", "add" or "del"; Text the
// line with its "+", "-" or " " mark.
type DiffLine struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// diffContext is how many unchanged lines a hunk shows around a change.
const diffContext = 3

// Diff compares revisions a and b of environment ref.
func (rs *Records) Diff(ctx context.Context, ref string, a, b int) (RevisionDiff, error) {
	k := rs.k
	e, err := k.resolveEnv(ctx, ref)
	if err != nil {
		return RevisionDiff{}, err
	}
	ra, err := k.revision(ctx, e.ID, a)
	if err != nil {
		return RevisionDiff{}, err
	}
	rb, err := k.revision(ctx, e.ID, b)
	if err != nil {
		return RevisionDiff{}, err
	}
	d := RevisionDiff{Env: e.ID, A: ra.Number, B: rb.Number, Groups: diffFiles(revisionText(ra), revisionText(rb))}
	if d.Same = len(d.Groups) == 0; d.Same {
		d.Groups = []DiffGroup{}
	}
	return d, nil
}

// revisionText is a revision's file as written; a revision recorded before
// knit kept the file has its spec rendered as YAML instead.
func revisionText(r store.Revision) []byte {
	switch {
	case len(r.File) > 0:
		return r.File
	case r.Errors != "":
		return r.Spec // an invalid file is stored as written
	}
	if y, err := yaml.JSONToYAML(r.Spec); err == nil {
		return y
	}
	return r.Spec
}

// part is a section of one file: its lines and the line number of the first.
type part struct {
	lines []string
	start int
}

// diffFiles diffs two files section by section, matching components by
// name; files that cannot be split are diffed whole.
func diffFiles(a, b []byte) []DiffGroup {
	la, lb := difflib.SplitLines(string(a)), difflib.SplitLines(string(b))
	secA, okA := spec.Sections(a)
	secB, okB := spec.Sections(b)
	if !okA || !okB {
		hunks := diffPart(part{la, 1}, part{lb, 1}, "")
		if len(hunks) == 0 {
			return nil
		}
		return []DiffGroup{{Title: "the whole file (it does not parse as an environment)", Hunks: hunks}}
	}
	type key struct {
		comp string
		head bool
	}
	keyOf := func(s spec.Section) key { return key{s.Component, s.Head} }
	byKey := func(secs []spec.Section, lines []string) map[key]part {
		m := map[key]part{}
		for _, s := range secs {
			lo, hi := min(s.Start-1, len(lines)), min(s.End, len(lines))
			m[keyOf(s)] = part{lines[lo:max(lo, hi)], s.Start}
		}
		return m
	}
	pa, pb := byKey(secA, la), byKey(secB, lb)
	var order []spec.Section
	seen := map[key]bool{}
	for _, s := range append(append([]spec.Section{}, secB...), secA...) {
		if !seen[keyOf(s)] {
			seen[keyOf(s)] = true
			order = append(order, s)
		}
	}
	var out []DiffGroup
	for _, s := range order {
		k := keyOf(s)
		x, y := pa[k], pb[k]
		if x.start == 0 {
			x.start = 1
		}
		if y.start == 0 {
			y.start = 1
		}
		g := DiffGroup{Component: s.Component, Title: sectionTitle(s, pa[k].lines == nil, pb[k].lines == nil)}
		if g.Hunks = diffPart(x, y, hunkLabel(s)); len(g.Hunks) > 0 {
			out = append(out, g)
		}
	}
	return out
}

func sectionTitle(s spec.Section, added, removed bool) string {
	switch {
	case s.Component == "" && s.Head:
		return "environment"
	case s.Component == "":
		return "after the components"
	case added:
		return "component " + s.Component + " (added)"
	case removed:
		return "component " + s.Component + " (removed)"
	}
	return "component " + s.Component
}

func hunkLabel(s spec.Section) string {
	if s.Component != "" {
		return "component " + s.Component
	}
	if s.Head {
		return "environment"
	}
	return ""
}

// diffPart is the unified diff of two parts, with file line numbers and
// label after each hunk's range.
func diffPart(a, b part, label string) []DiffHunk {
	m := difflib.NewMatcher(a.lines, b.lines)
	var out []DiffHunk
	for _, group := range m.GetGroupedOpCodes(diffContext) {
		first, last := group[0], group[len(group)-1]
		h := DiffHunk{Header: fmt.Sprintf("@@ -%s +%s @@", hunkRange(a.start+first.I1, last.I2-first.I1),
			hunkRange(b.start+first.J1, last.J2-first.J1))}
		if label != "" {
			h.Header += " " + label
		}
		for _, op := range group {
			switch op.Tag {
			case 'e':
				h.Lines = appendLines(h.Lines, "ctx", " ", a.lines[op.I1:op.I2])
			case 'r', 'd', 'i':
				h.Lines = appendLines(h.Lines, "del", "-", a.lines[op.I1:op.I2])
				h.Lines = appendLines(h.Lines, "add", "+", b.lines[op.J1:op.J2])
			}
		}
		out = append(out, h)
	}
	return out
}

// hunkRange renders a hunk's start and length as unified diffs do.
func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start-1)
	}
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}

func appendLines(out []DiffLine, kind, mark string, lines []string) []DiffLine {
	for _, l := range lines {
		out = append(out, DiffLine{Kind: kind, Text: mark + strings.TrimRight(l, "\r\n")})
	}
	return out
}
