package cli

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/view"
)

func newStatusCmd(d *deps) *cobra.Command {
	var output, team, status, after string
	var limit int
	cmd := &cobra.Command{
		Use:   "status [ENV]",
		Short: "Show environments, or one environment's components, as knit last saw them",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				if len(args) == 0 {
					page, err := b.Environments(cmd.Context(), knit.EnvironmentFilter{Team: team, Status: status, After: after, Limit: limit})
					if err != nil {
						return err
					}
					if page.Next != "" && output == "text" {
						defer fmt.Fprintf(d.stderr, "more: knit status --after %s\n", page.Next)
					}
					return render(d.stdout, output, page.Items, printEnvironments)
				}
				v, err := b.Environment(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				return render(d.stdout, output, v, printEnvironmentStatus)
			})
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&team, "team", "", "only this team's environments")
	cmd.Flags().StringVar(&status, "status", "", "only environments with this status (applied, failed, awaiting-approval, rejected, drifted, interrupted, torn-down)")
	cmd.Flags().StringVar(&after, "after", "", "list environments after this one (the cursor a previous page printed)")
	cmd.Flags().IntVar(&limit, "limit", 100, "how many environments (at most 1000)")
	return cmd
}

// render writes v as JSON, or with the human printer.
func render[T any](w io.Writer, output string, v T, human func(io.Writer, T)) error {
	if output == "json" {
		return writeJSON(w, v)
	}
	human(w, v)
	return nil
}

func printEnvironments(w io.Writer, envs []knit.EnvironmentSummary) {
	if len(envs) == 0 {
		fmt.Fprintln(w, "no environments yet: knit apply -f FILE")
		return
	}
	fmt.Fprintf(w, "%-32s %-18s %-8s %s\n", "ENVIRONMENT", "STATUS", "REVISION", "LAST RUN")
	for _, e := range envs {
		last := "-"
		if r := e.LastRun; r != nil {
			last = fmt.Sprintf("%s %s %s ago", r.Kind, r.Status, ago(r.StartedAt))
		}
		applied := revisions(e.Environment, nil)
		if e.Invalid != nil {
			applied = strconv.Itoa(e.AppliedRevision) // the line below says the rest
		}
		fmt.Fprintf(w, "%-32s %-18s %-8s %s\n", e.ID, engine.EnvLabel(e.Status), applied, last)
		printInvalid(w, "  ", e.Invalid)
	}
}

// printInvalid says that the newest revision does not validate, where it
// came from, and every one of its errors, each indented by indent.
func printInvalid(w io.Writer, indent string, inv *knit.InvalidRevision) {
	if inv == nil {
		return
	}
	from := inv.File
	if inv.Commit != "" {
		from += " at commit " + shortHash(inv.Commit)
		if subject, _, _ := strings.Cut(inv.Message, "\n"); subject != "" {
			from += " (" + subject + ")"
		}
	}
	fmt.Fprintf(w, "%sINVALID: revision %d from %s does not validate; nothing of it runs:\n", indent, inv.Number, from)
	for _, e := range inv.Errors {
		fmt.Fprintf(w, "%s  %s\n", indent, strings.ReplaceAll(e, "\n", "\n"+indent+"  "))
	}
}

func shortHash(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	return h
}

// revisions shows the applied revision, and the latest seen when it
// differs (saying so when it is invalid).
func revisions(e view.Environment, inv *knit.InvalidRevision) string {
	if inv != nil {
		return fmt.Sprintf("%d (%d invalid)", e.AppliedRevision, inv.Number)
	}
	if e.Revision != e.AppliedRevision {
		return fmt.Sprintf("%d (latest %d)", e.AppliedRevision, e.Revision)
	}
	return strconv.Itoa(e.AppliedRevision)
}

// revisionNote says which revision the environment is at: the one applied,
// or, when its last run did not get there, the one it is converging to and
// the last one an apply of succeeded.
func revisionNote(v knit.EnvironmentView) string {
	switch v.Status {
	case engine.EnvApplied, engine.EnvTornDown:
		return "revision " + revisions(v.Environment, v.Invalid)
	}
	note := "revision " + revisions(v.Environment, v.Invalid) + "; "
	if v.SucceededRevision == 0 {
		return note + "never applied"
	}
	return note + fmt.Sprintf("last applied revision %d", v.SucceededRevision)
}

func printEnvironmentStatus(w io.Writer, v knit.EnvironmentView) {
	fmt.Fprintf(w, "%s: %s (%s)\n", v.ID, engine.EnvLabel(v.Status), revisionNote(v))
	printInvalid(w, "", v.Invalid)
	if len(v.Consumers) > 0 {
		fmt.Fprintf(w, "read by %s (they follow its exported outputs)\n", strings.Join(v.Consumers, ", "))
	}
	if !v.ExpiresAt.IsZero() {
		fmt.Fprintf(w, "expires at %s (%s): knit ttl %s --extend 24h keeps it longer\n", v.ExpiresAt.Local().Format(time.DateTime), until(v.ExpiresAt), v.ID)
	}
	if l := v.Lock; l != nil {
		fmt.Fprintf(w, "locked by run %s (%s, pid %d on %s) until %s\n", l.RunID, l.Owner, l.PID, l.Host, l.Expires.Local().Format(time.DateTime))
	}
	if r := v.LastRun; r != nil {
		fmt.Fprintf(w, "last run: %s %s, %s ago by %s (run %s)\n", r.Kind, r.Status, ago(r.StartedAt), r.Actor, r.ID)
	}
	if d := v.LastDrift; d != nil {
		found := "everything in sync"
		if len(d.Drifted)+len(d.Affected) > 0 {
			found = "drifted: " + nameList(append(append([]string{}, d.Drifted...), d.Affected...))
		}
		if len(d.Failed) > 0 {
			found += "; check failed: " + nameList(d.Failed)
		}
		fmt.Fprintf(w, "last drift check: %s ago: %s (run %s)\n", ago(d.CheckedAt), found, d.RunID)
	}
	if h := v.Health; h != nil {
		fmt.Fprintf(w, "health: %s, checked %s ago%s\n", h.Verdict, ago(h.CheckedAt), healthNote(*h))
	}
	fmt.Fprintf(w, "\n  %-24s %-18s %-8s %-10s %s\n", "COMPONENT", "STATUS", "REVISION", "UPDATED", "WHY")
	for _, c := range v.Components {
		updated := "-"
		if !c.UpdatedAt.IsZero() {
			updated = ago(c.UpdatedAt) + " ago"
		}
		why := "-"
		if c.LastRun != nil && c.Code != "" && c.Code != c.LastRun.Status { // a reason, not a bare status
			why = c.Code
		}
		if c.Removed {
			why = "removed from file"
		}
		fmt.Fprintf(w, "  %-24s %-18s %-8d %-10s %s\n", c.Name, c.Status, c.Revision, updated, why)
	}
}

// healthNote names the checks that did not succeed, each with what it
// saw, and the run a verification was of.
func healthNote(h view.Health) string {
	var bad []string
	for _, c := range h.Checks {
		if c.Verdict != "Successful" {
			bad = append(bad, fmt.Sprintf("%s %s (%s)", checkName(c), c.Verdict, c.Evidence))
		}
	}
	note := ""
	if h.RunID != "" {
		note = " after run " + h.RunID
	}
	if len(bad) > 0 {
		note += ": " + nameList(bad)
	}
	return note
}

// ago renders a duration since t for people: 4s, 3m, 2h, 5d.
func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// nameList renders names sorted, at most ten of them, for one line.
func nameList(names []string) string {
	names = append([]string(nil), names...)
	sort.Strings(names)
	if len(names) > 10 {
		return strings.Join(names[:10], ", ") + fmt.Sprintf(" and %d more (knit status -o json lists all)", len(names)-10)
	}
	return strings.Join(names, ", ")
}
