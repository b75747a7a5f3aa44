package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/runner"
)

// logTail is how many lines of a failed component's tool output are shown.
const logTail = 40

// printResult renders a run's outcome: one line per component, then a summary.
func printResult(stdout io.Writer, r *engine.Result) {
	width := 9
	for _, c := range r.Components {
		width = max(width, len(c.Name))
	}
	// A plan of an environment never applied has no revision yet: say none.
	rev := ""
	if r.Revision > 0 {
		rev = fmt.Sprintf(", revision %d", r.Revision)
	}
	fmt.Fprintf(stdout, "%s %s (run %s%s): %s\n", r.Kind, r.Env, r.RunID, rev, r.Status)
	for _, c := range r.Components {
		line := fmt.Sprintf("  %-*s  %-18s", width, c.Name, c.Status)
		took := "" // a component that never ran took no time: show none, not "0s"
		if el := c.Elapsed.Round(10 * time.Millisecond); el > 0 {
			took = el.String()
		}
		line += fmt.Sprintf(" %7s", took)
		if s := planCounts(c.Plan); s != "" {
			line += "  " + s
		}
		why, more := splitReason(c)
		if why != "" {
			line += "  " + why
		}
		fmt.Fprintln(stdout, strings.TrimRight(line, " "))
		for _, l := range more {
			fmt.Fprintf(stdout, "%s    %s\n", strings.Repeat(" ", width), l)
		}
		if c.Plan != nil && (r.Kind == engine.KindPlan || showsResources(r, c)) {
			printPlanHeader(stdout, width, c.Plan)
		}
		if showsResources(r, c) {
			printResources(stdout, width, c.Plan)
		}
	}
	fmt.Fprintln(stdout, summary(r))
	printKept(stdout, r)
	printVerdict(stdout, r.Policy)
	if d := destroys(r); d > 0 && r.Kind != engine.KindTeardown {
		fmt.Fprintf(stdout, "  !! %s would be DESTROYED: check the lines marked \"-\" above\n", plural(d, "resource"))
	}
	if cs := r.ChangeSet; cs != nil {
		what := "approve the whole change at once with"
		if r.Kind == engine.KindPlan {
			what = "waits for a decision (knit approvals " + r.Env + "):"
		}
		fmt.Fprintf(stdout, "change set #%d %s (%s): %s knit approve %s --change %s\n",
			cs.ID, shortChecksum(cs.Checksum), plural(len(cs.Components), "component"), what, r.Env, shortChecksum(cs.Checksum))
	}
}

// printPlanHeader says where a plan applies and, for a module its source
// chose (a registry version), which module it was made with.
func printPlanHeader(w io.Writer, indent int, p *runner.Plan) {
	pad := strings.Repeat(" ", indent+4)
	if p.Target != "" {
		fmt.Fprintf(w, "%son %s\n", pad, p.Target)
	}
	if p.Module != "" {
		fmt.Fprintf(w, "%smodule %s\n", pad, p.Module)
	}
}

// maxReasonLines bounds the lines of a failed component's reason shown
// below it (a tool's diagnostic, a chart's schema errors).
const maxReasonLines = 20

// splitReason is c's reason for its line, and, for a component in an
// error status, the rest of a multi-line reason to show below it, whole
// up to maxReasonLines (a values schema error names the field on its
// second line: cut at the first, it said nothing). Others keep one line.
func splitReason(c *engine.ComponentResult) (string, []string) {
	if !c.Status.IsError() {
		return reasonAfter(c.Status, c.Reason), nil
	}
	why := strings.TrimPrefix(c.Reason, string(c.Status)+": ")
	first, rest, _ := strings.Cut(why, "\n")
	var more []string
	for _, l := range strings.Split(strings.TrimRight(rest, "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			more = append(more, strings.TrimRight(l, " \t"))
		}
	}
	if n := len(more) - maxReasonLines; n > 0 {
		more = append(more[:maxReasonLines], fmt.Sprintf("… %d more lines (-o json has them all)", n))
	}
	return first, more
}

// showsResources: plans and drift checks list the resources each plan
// touches; applies list them only where a person must decide (and for
// what waits behind, planned ahead for the change set).
func showsResources(r *engine.Result, c *engine.ComponentResult) bool {
	if !c.Plan.HasChanges() {
		return false
	}
	return r.Kind == engine.KindPlan || r.Kind == engine.KindDrift || c.Status == engine.Awaiting || c.Status == engine.Waiting
}

// printResources lists a plan's resources, destroys marked so they stand out.
func printResources(w io.Writer, indent int, p *runner.Plan) {
	pad := strings.Repeat(" ", indent+4)
	for _, rc := range p.Resources {
		mark := ""
		switch rc.Action {
		case runner.ActionDelete, runner.ActionReplace:
			mark = "   <-- DESTROY"
		case runner.ActionKeep:
			mark = "   (kept: " + rc.Reason + ")"
		}
		attrs := ""
		if len(rc.Attributes) > 0 && len(rc.Changes) == 0 {
			attrs = " (" + strings.Join(rc.Attributes, ", ") + ")"
		}
		fmt.Fprintf(w, "%s%-3s %s%s%s\n", pad, actionSymbol(rc.Action), rc.Address, attrs, mark)
		for _, v := range rc.Changes {
			fmt.Fprintf(w, "%s      %s\n", pad, v)
		}
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "%s!   %s\n", pad, n)
	}
	for _, o := range p.OutputChanges {
		fmt.Fprintf(w, "%s%-3s output.%s\n", pad, "~", o)
	}
}

// destroys counts the resources the run's plans would destroy.
func destroys(r *engine.Result) int {
	n := 0
	for _, c := range r.Components {
		if c.Plan != nil && c.Plan.HasChanges() && c.Status != engine.Applied && c.Status != engine.Destroyed {
			n += c.Plan.Destroy
		}
	}
	return n
}

// printFailureLogs shows the tail of each failed component's tool output.
func printFailureLogs(stderr io.Writer, r *engine.Result) {
	for _, c := range r.Components {
		if c.Status != engine.Failed || c.Log == "" {
			continue
		}
		fmt.Fprintf(stderr, "\n--- %s: last %d lines of tool output (knit logs %s %s) ---\n", c.Name, logTail, r.Env, c.Name)
		fmt.Fprintln(stderr, tail(c.Log, logTail))
	}
}

// planCounts renders "+1 ~0 -2" for a plan with changes.
func planCounts(p *runner.Plan) string {
	if !p.HasChanges() {
		return ""
	}
	return fmt.Sprintf("+%d ~%d -%d", p.Add, p.Change, p.Destroy)
}

// printKept says what the run's teardowns left in place and why (a
// chart's resource-policy keep, the CRDs of its crds/ folder).
func printKept(w io.Writer, r *engine.Result) {
	var lines []string
	for _, c := range r.Components {
		if c.Plan == nil || c.Status != engine.Destroyed {
			continue
		}
		for _, rc := range c.Plan.Resources {
			if rc.Action == runner.ActionKeep {
				lines = append(lines, fmt.Sprintf("    %s: %s: %s", c.Name, rc.Address, rc.Reason))
			}
		}
	}
	if len(lines) > 0 {
		fmt.Fprintf(w, "  left in place (kept, not destroyed): %s\n%s\n", plural(len(lines), "resource"), strings.Join(lines, "\n"))
	}
}

func summary(r *engine.Result) string {
	counts := map[engine.Status]int{}
	var order []engine.Status
	for _, c := range r.Components {
		if counts[c.Status] == 0 {
			order = append(order, c.Status)
		}
		counts[c.Status]++
	}
	parts := make([]string, 0, len(order))
	for _, st := range order {
		parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
	}
	return "  " + plural(len(r.Components), "component") + ": " + strings.Join(parts, ", ")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// resultExit maps a run's outcome to knit's exit codes.
func resultExit(r *engine.Result, detailed bool) error {
	switch {
	case r.Failed():
		return &ExitError{Code: ExitFailure}
	case r.Awaiting():
		return &ExitError{Code: ExitApproval}
	case r.WaitingUpstream(): // a gate too: another environment's output
		return &ExitError{Code: ExitApproval}
	case detailed && r.HasChanges():
		return &ExitError{Code: ExitChanges}
	}
	return nil
}

// printVerdict lists what the policies decided about the run's plan.
func printVerdict(w io.Writer, v *engine.Verdict) {
	if v == nil {
		return
	}
	words := map[string]string{engine.DecisionDeny: "DENY", engine.DecisionWarn: "WARN", engine.DecisionRequireApproval: "REQUIRE APPROVAL"}
	for _, d := range v.Decisions {
		fmt.Fprintf(w, "policy %s: %s\n", words[d.Kind], d)
	}
	if v.Overridden != "" {
		fmt.Fprintf(w, "policy: the denial was overridden by an admin: %s\n", v.Overridden)
	}
}
