package cli

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/store"
)

func newStatusCmd(d *deps) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status [ENV]",
		Short: "Show environments, or one environment's components, as knit last saw them",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withStore(cmd.Context(), output, func(st store.Store) error {
				if len(args) == 0 {
					v, err := listEnvironments(cmd.Context(), st)
					if err != nil {
						return err
					}
					return render(d.stdout, output, v, printEnvironments)
				}
				v, err := environmentStatus(cmd.Context(), st, args[0])
				if err != nil {
					return err
				}
				return render(d.stdout, output, v, printEnvironmentStatus)
			})
		},
	}
	outputFlag(cmd, &output)
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

type envSummary struct {
	store.Environment
	LastRun *store.Run `json:"lastRun,omitempty"`
}

func listEnvironments(ctx context.Context, st store.Store) ([]envSummary, error) {
	envs, err := st.Environments(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]envSummary, 0, len(envs))
	for _, e := range envs {
		s := envSummary{Environment: e}
		if runs, err := st.Runs(ctx, e.ID, 1); err == nil && len(runs) > 0 {
			s.LastRun = &runs[0]
		}
		out = append(out, s)
	}
	return out, nil
}

func printEnvironments(w io.Writer, envs []envSummary) {
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
		fmt.Fprintf(w, "%-32s %-18s %-8d %s\n", e.ID, e.Status, e.Revision, last)
	}
}

type componentStatus struct {
	Name      string    `json:"name"`
	Status    string    `json:"status"`
	Revision  int       `json:"revision,omitempty"`
	UpdatedAt time.Time `json:"updatedAt,omitzero"`
	Outputs   int       `json:"outputs"`
}

type environmentView struct {
	store.Environment
	Components []componentStatus `json:"components"`
	LastRun    *store.Run        `json:"lastRun,omitempty"`
	LastDrift  *driftStatus      `json:"lastDrift,omitempty"`
}

// driftStatus is the outcome of the environment's latest drift check.
type driftStatus struct {
	RunID     string    `json:"runId"`
	CheckedAt time.Time `json:"checkedAt"`
	Status    string    `json:"status"`
	Drifted   []string  `json:"drifted"`
	Affected  []string  `json:"affected,omitempty"`
	Failed    []string  `json:"failed,omitempty"`
}

// lastDrift finds the newest drift run and what it found per component.
func lastDrift(ctx context.Context, st store.Store, env string) *driftStatus {
	runs, err := st.Runs(ctx, env, 0)
	if err != nil {
		return nil
	}
	for _, r := range runs {
		if r.Kind != "drift" {
			continue
		}
		d := &driftStatus{RunID: r.ID, CheckedAt: r.StartedAt, Status: r.Status, Drifted: []string{}}
		crs, _ := st.ComponentRuns(ctx, r.ID) // in finish order; the lists are sorted for people
		for _, cr := range crs {
			switch cr.Status {
			case "drifted":
				d.Drifted = append(d.Drifted, cr.Component)
			case "affected by upstream drift":
				d.Affected = append(d.Affected, cr.Component)
			case "failed":
				d.Failed = append(d.Failed, cr.Component)
			}
		}
		return d
	}
	return nil
}

func environmentStatus(ctx context.Context, st store.Store, ref string) (environmentView, error) {
	e, err := findEnv(ctx, st, ref)
	if err != nil {
		return environmentView{}, err
	}
	v := environmentView{Environment: e, Components: []componentStatus{}}
	states, err := st.ComponentStates(ctx, e.ID)
	if err != nil {
		return v, err
	}
	if env, err := envFromStore(ctx, st, e.ID); err == nil {
		for _, c := range env.Spec.Components {
			if _, ok := states[c.Name]; !ok {
				states[c.Name] = store.ComponentState{Component: c.Name, Status: "pending"}
			}
		}
	}
	for name, s := range states {
		v.Components = append(v.Components, componentStatus{Name: name, Status: s.Status, Revision: s.Revision, UpdatedAt: s.UpdatedAt, Outputs: len(s.Outputs)})
	}
	sort.Slice(v.Components, func(i, j int) bool { return v.Components[i].Name < v.Components[j].Name })
	if runs, err := st.Runs(ctx, e.ID, 1); err == nil && len(runs) > 0 {
		v.LastRun = &runs[0]
	}
	v.LastDrift = lastDrift(ctx, st, e.ID)
	return v, nil
}

func printEnvironmentStatus(w io.Writer, v environmentView) {
	fmt.Fprintf(w, "%s: %s (revision %d)\n", v.ID, v.Status, v.Revision)
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
	fmt.Fprintf(w, "\n  %-24s %-18s %-8s %s\n", "COMPONENT", "STATUS", "REVISION", "UPDATED")
	for _, c := range v.Components {
		updated := "-"
		if !c.UpdatedAt.IsZero() {
			updated = ago(c.UpdatedAt) + " ago"
		}
		fmt.Fprintf(w, "  %-24s %-18s %-8d %s\n", c.Name, c.Status, c.Revision, updated)
	}
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
