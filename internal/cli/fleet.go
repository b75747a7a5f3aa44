package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/fleet"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/view"
)

func newFleetCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{Use: "fleet", Short: "Environment sets rolled out in waves (spec.rollout.waves)"}
	var output, selector string
	status := &cobra.Command{
		Use:   "status SET",
		Short: "A set's rollout in waves: each environment's release, health and wave, and why the next wave waits",
		Long: `SET is a set's TEAM/NAME, or its NAME when one set has it. The waves, in order, with the
step each comes from (a selector such as upgrade_testing=true, or a percentage), then each
environment: its wave, where it stands in the rollout (waiting, applying, verified, failed,
skipped), the release it runs (its applied revision and that revision's commit), its status
and its verification. --selector KEY=VALUE,… shows only the environments whose labels match.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				f, err := b.FleetStatus(cmd.Context(), args[0], selector)
				if err != nil {
					return err
				}
				return render(d.stdout, output, f, printFleet)
			})
		},
	}
	outputFlag(status, &output)
	status.Flags().StringVar(&selector, "selector", "", "only environments whose labels match KEY=VALUE[,KEY=VALUE…]")
	cmd.AddCommand(status)
	for _, a := range []struct{ name, short string }{
		{fleet.ActResume, "Let a halted rollout go on, accepting the failures so far"},
		{fleet.ActRetry, "Apply the rollout's failed environments again, in their turn"},
		{fleet.ActSkip, "Pass over the current wave: its waiting environments keep their release"},
		{fleet.ActAbort, "End the rollout: every environment not reached keeps its release"},
	} {
		cmd.AddCommand(fleetActionCmd(d, a.name, a.short))
	}
	return cmd
}

func fleetActionCmd(d *deps, action, short string) *cobra.Command {
	var output, reason string
	c := &cobra.Command{
		Use:   action + " SET",
		Short: short + " (operators; audited)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				f, err := b.FleetAct(cmd.Context(), args[0], action, d.actor(), reason)
				if err != nil {
					return err
				}
				return render(d.stdout, output, f, printFleet)
			})
		},
	}
	outputFlag(c, &output)
	c.Flags().StringVar(&reason, "reason", "", "why, for the audit trail")
	return c
}

func (l localBackend) FleetStatus(ctx context.Context, ref, selector string) (view.Fleet, error) {
	sel, err := spec.ParseSelector(selector)
	if err != nil {
		return view.Fleet{}, err
	}
	return knit.NewFleetReads(l.Knit).Status(ctx, ref, sel)
}

func (l localBackend) FleetAct(ctx context.Context, ref, action, actor, reason string) (view.Fleet, error) {
	return knit.NewFleetAction(l.Knit, knit.FleetOptions{Set: ref, Action: action, Actor: actor, Reason: reason}).Run(ctx)
}

func (r *remoteBackend) FleetStatus(ctx context.Context, ref, selector string) (view.Fleet, error) {
	return r.c.Fleet(ctx, ref, selector)
}

// FleetAct is recorded as the token's name on the server.
func (r *remoteBackend) FleetAct(ctx context.Context, ref, action, _, reason string) (view.Fleet, error) {
	return r.c.FleetAct(ctx, ref, action, reason)
}

func printFleet(w io.Writer, f view.Fleet) {
	r := f.Rollout
	if r == nil {
		fmt.Fprintf(w, "set %s: no rollout yet\n", f.Set)
		return
	}
	fmt.Fprintf(w, "set %s: rollout of %s, %s\n", f.Set, oneLine(r.Reason), r.Status)
	if r.Replaced != "" {
		fmt.Fprintf(w, "  (it superseded the rollout of commit %s)\n", shortHash(r.Replaced))
	}
	fmt.Fprintf(w, "%s\n\n", r.Why)
	tw := newTable(w)
	fmt.Fprintln(tw, "WAVE\tSTEP\tENVIRONMENTS\tNOTE")
	for i, wv := range r.Waves {
		mark := " "
		if i == r.Wave && r.Status == view.FleetRolling {
			mark = ">"
		}
		note := wv.Note
		if wv.Skipped {
			note = strings.TrimPrefix(note+"; skipped", "; ")
		}
		fmt.Fprintf(tw, "%s%d\t%s\t%d\t%s\n", mark, i+1, wv.Step, len(wv.IDs), note)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "ENV\tWAVE\tSTATE\tRELEASE\tSTATUS\tVERIFICATION\tLABELS\tMESSAGE")
	for _, e := range f.Envs {
		release := "-"
		if e.Revision > 0 {
			release = fmt.Sprintf("rev %d @%s", e.Revision, shortHash(e.Commit))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Wave, e.State, release, e.Status, dash(e.Verification), labelsOf(e.Labels), oneLine(e.Message))
	}
	tw.Flush()
}

func labelsOf(m map[string]string) string {
	if len(m) == 0 {
		return "-"
	}
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
