package cli

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/view"
)

func newDiffCmd(d *deps) *cobra.Command {
	var output string
	var from, to int
	cmd := &cobra.Command{
		Use:   "diff ENV_A [ENV_B]",
		Short: "Show what making ENV_A look like ENV_B would change (or between two revisions of ENV)",
		Long: `Compare the resolved specs of two environments component by component: components
in only one, module source and version, chart version, variables and values,
dependencies, autoApprove and destroyProtection; where a component is applied
in both, its live outputs side by side. Read it as "what would making ENV_A
look like ENV_B change?": each line reads A's value → B's value.

  knit diff shop/prod shop/staging        the environments at their applied revisions
  knit diff shop/dev --from 3 --to 5      two revisions of one environment
  knit diff shop/dev@3 shop/prod@7        any revision of each

Sensitive values (variables the module declares sensitive or whose names say
they hold a credential, sensitive outputs) are masked on both sides.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := diffRequest(args, from, to)
			if err != nil {
				return err
			}
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				diff, err := b.DiffEnvironments(cmd.Context(), req)
				if err != nil {
					return err
				}
				return render(d.stdout, output, diff, printEnvDiff)
			})
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().IntVar(&from, "from", 0, "the revision of ENV_A (default: the one it is applied at)")
	cmd.Flags().IntVar(&to, "to", 0, "the revision of ENV_B, or of ENV when only one is named (default: the applied one)")
	return cmd
}

// diffRequest reads the sides from the arguments: ENV_A [ENV_B], each
// maybe @REV, --from and --to for the revisions.
func diffRequest(args []string, from, to int) (knit.EnvDiffRequest, error) {
	if len(args) == 1 && from == 0 && to == 0 {
		return knit.EnvDiffRequest{}, fmt.Errorf("name two environments (knit diff ENV_A ENV_B) or two revisions of one (knit diff %s --from REV --to REV)", args[0])
	}
	if from < 0 || to < 0 {
		return knit.EnvDiffRequest{}, fmt.Errorf("--from and --to are revision numbers from 1 (knit history ENV lists the runs and their revisions)")
	}
	var req knit.EnvDiffRequest
	var err error
	if req.A, req.ARev, err = knit.ParseDiffSide(args[0]); err != nil {
		return req, err
	}
	req.B, req.BRev = req.A, 0
	if len(args) == 2 {
		if req.B, req.BRev, err = knit.ParseDiffSide(args[1]); err != nil {
			return req, err
		}
	}
	for _, f := range []struct {
		flag int
		rev  *int
		name string
	}{{from, &req.ARev, "--from"}, {to, &req.BRev, "--to"}} {
		if f.flag == 0 {
			continue
		}
		if *f.rev != 0 {
			return req, fmt.Errorf("%s and @REV name the same revision: give one of them", f.name)
		}
		*f.rev = f.flag
	}
	return req, nil
}

// DiffEnvironments asks the server, naming each side team/env[@REV].
func (r *remoteBackend) DiffEnvironments(ctx context.Context, req knit.EnvDiffRequest) (knit.EnvDiff, error) {
	var sides [2]string
	for i, s := range []struct {
		ref string
		rev int
	}{{req.A, req.ARev}, {req.B, req.BRev}} {
		id, err := r.resolve(ctx, s.ref)
		if err != nil {
			return knit.EnvDiff{}, err
		}
		if sides[i] = id; s.rev > 0 {
			sides[i] += "@" + strconv.Itoa(s.rev)
		}
	}
	return r.c.DiffEnvironments(ctx, sides[0], sides[1])
}

// printEnvDiff reads A → B: what making A look like B would change.
func printEnvDiff(w io.Writer, d knit.EnvDiff) {
	a, b := sideName(d.A), sideName(d.B)
	if d.Same {
		fmt.Fprintf(w, "%s and %s are the same: making %s look like %s would change nothing.\n", a, b, d.A.Env, d.B.Env)
		return
	}
	fmt.Fprintf(w, "Making %s look like %s would change (%s → %s):\n", a, b, d.A.Env, d.B.Env)
	if len(d.Environment) > 0 {
		fmt.Fprintln(w, "\n~ environment")
		printFields(w, d.Environment)
	}
	var same []string
	for _, c := range d.Components {
		switch c.Change {
		case view.ComponentAdded:
			fmt.Fprintf(w, "\n+ component %s: only in %s, would be added\n", c.Name, d.B.Env)
			printFields(w, c.Fields)
		case view.ComponentRemoved:
			fmt.Fprintf(w, "\n- component %s: only in %s, would be removed\n", c.Name, d.A.Env)
		case view.ComponentChanged:
			fmt.Fprintf(w, "\n~ component %s\n", c.Name)
			printFields(w, c.Fields)
		default:
			if !c.OutputsDiffer() {
				same = append(same, c.Name)
				continue
			}
			fmt.Fprintf(w, "\n  component %s: same spec\n", c.Name)
		}
		if len(c.Outputs) > 0 {
			fmt.Fprintf(w, "    live outputs (%s | %s):\n", d.A.Env, d.B.Env)
			for _, o := range c.Outputs {
				mark := "~"
				if o.Same {
					mark = "="
				}
				fmt.Fprintf(w, "    %s %s: %s | %s\n", mark, o.Name, o.ShownA(), o.ShownB())
			}
		}
	}
	if len(same) > 0 {
		fmt.Fprintf(w, "\n%s the same in both: %s\n", plural(len(same), "component"), strings.Join(same, ", "))
	}
}

func printFields(w io.Writer, fs []view.FieldDiff) {
	for _, f := range fs {
		fmt.Fprintf(w, "    %s: %s → %s\n", f.Field, f.ShownA(), f.ShownB())
	}
}

func sideName(s view.DiffSide) string {
	n := fmt.Sprintf("%s (revision %d", s.Env, s.Revision)
	switch {
	case s.Applied:
		n += ", applied"
	case s.Revision == s.Latest:
		n += ", newest, not applied"
	}
	return n + ")"
}
