package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

func newApprovalsCmd(d *deps) *cobra.Command {
	var output string
	var all, changes bool
	cmd := &cobra.Command{
		Use:   "approvals [ENV]",
		Short: "List plans and change sets waiting for a person's approval",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				statuses := []string{store.ApprovalPending}
				if all {
					statuses = nil
				}
				sets, err := b.ChangeSets(cmd.Context(), optionalArg(args), statuses...)
				if err != nil {
					return err
				}
				if changes {
					return render(d.stdout, output, orEmpty(sets), printChangeSets)
				}
				list, err := b.Approvals(cmd.Context(), optionalArg(args), statuses...)
				if err != nil {
					return err
				}
				views := make([]approvalView, 0, len(list))
				for _, a := range list {
					views = append(views, newApprovalView(a))
				}
				return render(d.stdout, output, views, func(w io.Writer, views []approvalView) {
					printChangeSets(w, sets)
					printApprovals(w, views)
				})
			})
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().BoolVar(&all, "all", false, "include decided, applied and stale approvals")
	cmd.Flags().BoolVar(&changes, "change-sets", false, "list change sets (whole changes to approve at once) only")
	return cmd
}

func orEmpty[T any](list []T) []T {
	if list == nil {
		return []T{}
	}
	return list
}

// printChangeSets lists change sets, each with its components' plans and
// the command that approves it whole.
func printChangeSets(w io.Writer, sets []view.ChangeSet) {
	for _, cs := range sets {
		fmt.Fprintf(w, "CHANGE SET #%d  %s  %s  checksum %s  %s\n", cs.ID, cs.Env, cs.Status, shortChecksum(cs.Checksum), ago(cs.CreatedAt))
		for _, c := range cs.Components {
			what := fmt.Sprintf("+%d ~%d -%d", c.Add, c.Change, c.Destroy)
			switch {
			case c.KnownAfterApply != "":
				what = "known after apply: " + c.KnownAfterApply
			case c.PlanError != "":
				what = "not planned: " + c.PlanError
			case len(c.Placeholders) > 0:
				what += " (planned with " + strings.Join(c.Placeholders, ", ") + " known after apply)"
			}
			gate := "planned ahead"
			if c.ApprovalID != 0 {
				gate = fmt.Sprintf("approval #%d", c.ApprovalID)
			} else if !c.Gated {
				gate = "auto-approved"
			}
			fmt.Fprintf(w, "  %-20s %-16s %s\n", c.Component, gate, what)
			for _, r := range c.Resources {
				fmt.Fprintf(w, "      %-3s %s\n", actionSymbol(runner.Action(r.Action)), r.Address)
			}
		}
		if cs.Status == store.ChangeSetPending {
			fmt.Fprintf(w, "  approve it all at once: knit approve %s --change %s\n", cs.Env, shortChecksum(cs.Checksum))
		}
		fmt.Fprintln(w)
	}
}

type approvalView struct {
	view.Approval
	Plan runner.Plan `json:"plan"`
}

func newApprovalView(a view.Approval) approvalView {
	v := approvalView{Approval: a}
	_ = json.Unmarshal(a.Plan, &v.Plan)
	v.Approval.Plan = nil
	return v
}

func printApprovals(w io.Writer, list []approvalView) {
	if len(list) == 0 {
		fmt.Fprintln(w, "nothing waits for approval")
		return
	}
	fmt.Fprintf(w, "%-5s %-24s %-20s %-10s %-12s %-14s %-6s %s\n", "ID", "ENVIRONMENT", "COMPONENT", "STATUS", "CHECKSUM", "PLAN", "AGE", "RESOURCES")
	for _, a := range list {
		var addrs []string
		for _, r := range a.Plan.Resources {
			addrs = append(addrs, fmt.Sprintf("%s %s", actionSymbol(r.Action), r.Address))
		}
		res := fmt.Sprint(len(addrs))
		if len(addrs) > 0 {
			res = addrs[0]
			if len(addrs) > 1 {
				res += fmt.Sprintf(" (+%d more)", len(addrs)-1)
			}
		}
		fmt.Fprintf(w, "%-5d %-24s %-20s %-10s %-12s %-14s %-6s %s\n", a.ID, a.Env, a.Component, a.Status,
			shortChecksum(a.PlanChecksum), fmt.Sprintf("+%d ~%d -%d", a.Plan.Add, a.Plan.Change, a.Plan.Destroy), ago(a.CreatedAt), res)
	}
}

func newDecideCmd(d *deps, approve bool) *cobra.Command {
	var reason, output, checksum, change string
	var noApply bool
	use, short := "reject ENV (COMPONENT | --change CHECKSUM) [--reason …]", "Reject the plan or change set waiting for approval"
	if approve {
		use, short = "approve ENV [COMPONENT | --change CHECKSUM] [--reason …]", "Approve the exact plan or change set waiting for approval, then apply it (ENV alone: accept its paused rollout)"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Long: short + `.

Who and why are recorded in the audit trail. Approving applies the saved plan
file itself, byte for byte, at once (unless --no-apply), and carries on with
the components that waited on it. If anything changed since the plan (a new
revision, new upstream outputs, the state), the approval is stale: knit
refuses to apply it and makes a fresh plan that needs approval.

knit approve ENV alone accepts ENV's paused rollout (an apply whose health
checks were Inconclusive, or Failed with rollout.onFailure: pause): its revision
counts as verified from then on, and the environment as applied.

The decision names the plan by its checksum (knit approvals shows its first
12 characters, -o json all of it): --checksum is the plan you reviewed, in
full or those 12 characters or more; without it, the plan waiting now.

--change CHECKSUM decides the whole change set instead (knit approvals shows
it): every waiting plan in it, and the plans of the components behind them,
which are planned again in their turn and go on without asking while they do
what the change set showed; one that differs stops and says how.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case approve && change == "" && len(args) == 1:
				return nil // accept ENV's paused rollout
			case change != "" && len(args) != 1:
				return fmt.Errorf("--change decides the whole change set of ENV: give ENV only, not a component (knit approvals ENV shows the change set)")
			case change == "" && len(args) != 2:
				return fmt.Errorf("name ENV and COMPONENT, or ENV and --change CHECKSUM for the whole change set (knit approvals ENV shows both)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			if approve && change == "" && len(args) == 1 {
				return d.accept(cmd.Context(), args[0], reason)
			}
			return d.run(cmd.Context(), runView{output: output}, func(b backend) (knit.RunRequest, error) {
				req := knit.DecideRequest{EnvRef: args[0], Approve: approve, Actor: d.actor(), Reason: reason, Source: "cli", ChangeChecksum: change}
				what := "change set"
				if change == "" {
					sum, err := namedChecksum(cmd.Context(), b, args[0], args[1], checksum)
					if err != nil {
						return knit.RunRequest{}, err
					}
					req.Component, req.PlanChecksum, what = args[1], sum, args[1]
				}
				// Here, the apply runs in the foreground once the decision is told.
				fg := &foreground{}
				var submit knit.Submitter = fg
				if noApply {
					submit = nil
				}
				dec, runID, err := b.Decide(cmd.Context(), req, submit)
				if err != nil {
					return knit.RunRequest{}, err
				}
				env := dec.Approval.Env
				if cs := dec.ChangeSet; cs != nil {
					env = cs.Env
					fmt.Fprintf(d.stderr, "%s: change set #%d (%s, %s) %s by %s\n", cs.Env, cs.ID, shortChecksum(cs.Checksum),
						plural(len(cs.Components), "component"), cs.Status, cs.DecidedBy)
				} else {
					a := dec.Approval
					fmt.Fprintf(d.stderr, "%s: approval #%d of %s %s by %s\n", a.Env, a.ID, what, a.Status, a.DecidedBy)
				}
				if noApply && runID != "" {
					fmt.Fprintf(d.stderr, "the server applies it: run %s (knit history %s)\n", runID, env)
				}
				if !approve || noApply {
					return knit.RunRequest{}, errDecided
				}
				if runID != "" { // a server has started the apply: follow it
					return knit.RunRequest{Kind: engine.KindApply, EnvRef: env, Reason: reason, RunID: runID}, nil
				}
				if fg.req == nil {
					return knit.RunRequest{}, errDecided
				}
				return *fg.req, nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded in the audit trail")
	cmd.Flags().StringVar(&checksum, "checksum", "", "the checksum of the plan you reviewed (knit approvals; default: the plan waiting now)")
	cmd.Flags().StringVar(&change, "change", "", "decide the whole change set with this checksum (knit approvals), not one component's plan")
	outputFlag(cmd, &output)
	if approve {
		cmd.Flags().BoolVar(&noApply, "no-apply", false, "record the approval only; the next knit apply (or the server) applies it")
	}
	return cmd
}

// minChecksumPrefix is the fewest characters of a checksum --checksum takes.
const minChecksumPrefix = 12

func shortChecksum(sum string) string {
	if len(sum) > minChecksumPrefix {
		return sum[:minChecksumPrefix]
	}
	return sum
}

// namedChecksum is the full checksum of the plan a decision names: named
// itself, the waiting plan's when named is a prefix of it (as knit
// approvals shows it), or the waiting plan's when named is empty. A prefix
// of another plan is sent as it is, and refused as the wrong plan.
func namedChecksum(ctx context.Context, b backend, ref, component, named string) (string, error) {
	if named != "" && len(named) < minChecksumPrefix {
		return "", fmt.Errorf("--checksum %q: give at least %d characters of the plan's checksum (knit approvals %s)", named, minChecksumPrefix, ref)
	}
	waiting, err := waitingChecksum(ctx, b, ref, component)
	switch {
	case named == "":
		return waiting, err
	case err == nil && strings.HasPrefix(waiting, named):
		return waiting, nil
	}
	return named, nil
}

// waitingChecksum is the checksum of the plan of component waiting in
// ref: a decision always names the plan it is about.
func waitingChecksum(ctx context.Context, b backend, ref, component string) (string, error) {
	pending, err := b.Approvals(ctx, ref, store.ApprovalPending)
	if err != nil {
		return "", err
	}
	for _, a := range pending {
		if a.Component == component {
			return a.PlanChecksum, nil
		}
	}
	// None waits: name the component's latest plan, so that the library
	// says why (a stale approval is refused with its reason).
	all, err := b.Approvals(ctx, ref)
	if err != nil {
		return "", err
	}
	var latest *view.Approval
	for i, a := range all {
		if a.Component == component && (latest == nil || a.ID > latest.ID) {
			latest = &all[i]
		}
	}
	if latest != nil && latest.Status == store.ApprovalStale {
		return latest.PlanChecksum, nil
	}
	return "", fmt.Errorf("%w: no plan of %s in %s is pending (knit approvals %s)", engine.ErrNothingToApprove, component, ref, ref)
}

// optionalArg is the first argument, or "".
func optionalArg(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// foreground is the local CLI's knit.Submitter: it keeps the apply that
// carries out an approval, which the command then runs here, in the
// foreground, with its progress.
type foreground struct{ req *knit.RunRequest }

func (f *foreground) Enqueue(req knit.RunRequest, _ string) (string, error) {
	f.req = &req
	return "", nil
}

// errDecided ends a decide command that does not run the engine, successfully.
var errDecided = &ExitError{Code: ExitOK}

func actionSymbol(a runner.Action) string {
	switch a {
	case runner.ActionCreate:
		return "+"
	case runner.ActionUpdate:
		return "~"
	case runner.ActionDelete:
		return "-"
	case runner.ActionReplace:
		return "-/+"
	case runner.ActionKeep:
		return "="
	}
	return "<="
}

func newAuditCmd(d *deps) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "audit [ENV]",
		Short: "Show who did what, when and why: applies, approvals, drift findings, teardowns",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				page, err := b.Audit(cmd.Context(), knit.AuditFilter{Env: optionalArg(args)})
				if err != nil {
					return err
				}
				return render(d.stdout, output, page.Items, printAudit)
			})
		},
	}
	outputFlag(cmd, &output)
	return cmd
}

func printAudit(w io.Writer, events []view.AuditEvent) {
	t := newTable(w)
	defer t.Flush()
	fmt.Fprintln(t, "TIME\tENVIRONMENT\tACTOR\tACTION\tCOMPONENT\tREV\tREASON / DETAIL")
	for _, e := range events {
		why := e.Reason
		if e.Detail != "" {
			if why != "" {
				why += " — "
			}
			why += e.Detail
		}
		rev := "-"
		if e.Revision > 0 {
			rev = strconv.Itoa(e.Revision)
		}
		fmt.Fprintf(t, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Time.Local().Format("2006-01-02 15:04:05"),
			cell(e.Env), cell(e.Actor), cell(e.Action), cell(e.Component), rev, lastCell(why))
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
