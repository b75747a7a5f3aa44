package terraform

import (
	"fmt"
	"strings"
)

// The cause of a failure is the tool's first error diagnostic, in one line:
// its summary, the first sentence of its detail (which names the variable,
// resource or argument), and where. Plans and applies give diagnostics as
// JSON (stream.line); other commands print them on stderr (stderrCause).

// diagnosticCause renders one error diagnostic as a cause.
func diagnosticCause(summary, detail, where string) string {
	cause := strings.TrimSpace(summary)
	if d := firstSentence(detail); d != "" {
		cause += ": " + d
	}
	if where != "" {
		cause += " (" + where + ")"
	}
	return cause
}

// firstSentence is s up to its first full stop that ends a sentence, on
// one line.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// stderrCause finds the first error diagnostic in the tool's human output
// (text is the end of its stderr):
//
//	╷
//	│ Error: No value for required variable
//	│
//	│   on main.tf line 1:
//	│    1: variable "storage_gb" {
//	│
//	│ The root module input variable "storage_gb" is not set, and has no default
//	│ value. Use a -var or -var-file command line argument to provide a value.
//	╵
//
// It is "" when there is none.
func stderrCause(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		summary, ok := strings.CutPrefix(unboxed(l), "Error: ")
		if !ok {
			continue
		}
		where, detail := diagnosticBody(lines[i+1:])
		return diagnosticCause(summary, detail, where)
	}
	return ""
}

// diagnosticBody reads the paragraphs after a diagnostic's summary: the
// source location ("on main.tf line 1:" and its snippet) and the detail,
// up to the diagnostic's end.
func diagnosticBody(lines []string) (where, detail string) {
	var para []string
	flush := func() bool {
		defer func() { para = para[:0] }()
		if len(para) == 0 {
			return false
		}
		if loc, ok := strings.CutPrefix(para[0], "on "); ok && strings.HasSuffix(loc, ":") {
			if where == "" {
				where = strings.TrimSuffix(loc, ":")
			}
			return false
		}
		detail = strings.Join(para, " ")
		return true
	}
	for _, l := range lines {
		raw := strings.TrimSpace(l)
		u := unboxed(l)
		switch {
		case raw == "╵" || strings.HasPrefix(u, "Error: ") || strings.HasPrefix(u, "Warning: "):
			flush()
			return where, detail
		case u == "":
			if flush() {
				return where, detail
			}
		default:
			para = append(para, u)
		}
	}
	flush()
	return where, detail
}

// unboxed is a line of a diagnostic without the box OpenTofu draws around
// it, trimmed.
func unboxed(l string) string {
	l = strings.TrimSpace(l)
	for _, box := range []string{"│", "╷", "╵"} {
		l = strings.TrimPrefix(l, box)
	}
	return strings.TrimSpace(l)
}

// where renders a diagnostic's range as the human output does.
func where(file string, line int) string {
	if file == "" {
		return ""
	}
	return fmt.Sprintf("%s line %d", file, line)
}
