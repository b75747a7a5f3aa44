package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/store"
)

const masked = "(sensitive)"

func newOutputCmd(d *deps) *cobra.Command {
	var output string
	var showSensitive bool
	cmd := &cobra.Command{
		Use:   "output ENV [COMPONENT [NAME]]",
		Short: "Show the outputs of an environment's components (sensitive values masked)",
		Long: `Show stored outputs: all of an environment's, one component's, or one value.
One value is printed raw (strings without quotes), for scripts. Sensitive
values are masked unless --show-sensitive is given.`,
		Args: cobra.RangeArgs(1, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withStore(cmd.Context(), output, func(st store.Store) error {
				view, err := outputs(cmd.Context(), st, args, showSensitive)
				if err != nil {
					return err
				}
				if len(args) == 3 {
					return render(d.stdout, output, view[args[1]][args[2]], printRaw)
				}
				return render(d.stdout, output, view, printOutputs)
			})
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().BoolVar(&showSensitive, "show-sensitive", false, "print sensitive values in plain text")
	return cmd
}

// outputs reads ENV [COMP [NAME]]'s outputs, masking sensitive values
// unless showSensitive.
func outputs(ctx context.Context, st store.Store, args []string, showSensitive bool) (map[string]map[string]outputView, error) {
	e, err := findEnv(ctx, st, args[0])
	if err != nil {
		return nil, err
	}
	states, err := st.ComponentStates(ctx, e.ID)
	if err != nil {
		return nil, err
	}
	view := map[string]map[string]outputView{}
	for name, s := range states {
		if len(args) == 1 || name == args[1] {
			view[name] = outputsView(s.Outputs, showSensitive)
		}
	}
	if len(args) > 1 && view[args[1]] == nil {
		return nil, fmt.Errorf("%s has no component %q with outputs", e.ID, args[1])
	}
	if len(args) == 3 {
		if _, ok := view[args[1]][args[2]]; !ok {
			return nil, fmt.Errorf("%s.%s has no output %q", e.ID, args[1], args[2])
		}
	}
	return view, nil
}

type outputView struct {
	Value     any  `json:"value"`
	Sensitive bool `json:"sensitive,omitempty"`
}

func outputsView(outs map[string]store.OutputValue, showSensitive bool) map[string]outputView {
	m := make(map[string]outputView, len(outs))
	for name, o := range outs {
		v := outputView{Sensitive: o.Sensitive, Value: masked}
		if !o.Sensitive || showSensitive {
			_ = json.Unmarshal(o.Value, &v.Value)
		}
		m[name] = v
	}
	return m
}

func printRaw(w io.Writer, o outputView) {
	if s, ok := o.Value.(string); ok {
		fmt.Fprintln(w, s)
		return
	}
	b, _ := json.Marshal(o.Value)
	fmt.Fprintln(w, string(b))
}

func printOutputs(w io.Writer, view map[string]map[string]outputView) {
	comps := make([]string, 0, len(view))
	for c := range view {
		comps = append(comps, c)
	}
	sort.Strings(comps)
	for _, c := range comps {
		names := make([]string, 0, len(view[c]))
		for n := range view[c] {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			b, _ := json.Marshal(view[c][n].Value)
			if view[c][n].Sensitive && view[c][n].Value == masked {
				b = []byte(masked)
			}
			fmt.Fprintf(w, "%s.%s = %s\n", c, n, b)
		}
	}
}
