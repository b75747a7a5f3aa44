package cli

import (
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// newTable writes tab-separated rows as aligned columns, each as wide as
// its widest cell: a long value (an actor "Jane van der Berg") never
// pushes the columns after it out of line. Flush it when done.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
}

// cell is a value for a table column before the last: "-" when empty,
// quoted when it holds blanks, so every row splits into the same fields.
func cell(s string) string {
	if s == "" {
		return "-"
	}
	if strings.ContainsAny(s, " \t\n") {
		return strconv.Quote(s)
	}
	return s
}

// lastCell is a value for a table's last column, free text on one line.
func lastCell(s string) string {
	return strings.ReplaceAll(firstLine(s), "\t", " ")
}
