package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/spec"
)

func newRenderCmd(d *deps) *cobra.Command {
	var file, output string
	var explain bool
	cmd := &cobra.Command{
		Use:   "render -f FILE [-o yaml|json] [--explain]",
		Short: "Print the environment a file resolves to: template, parameters, extends and overrides applied",
		Long: `Load an environment file as plan and apply do, with its template or the
file it extends and its overrides applied, and print the environment that
will run. With --explain, every value names the file:line it came from
(YAML: a comment on the line; JSON: an "origins" map by field path).
An invalid file prints every problem and exits 1.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "yaml" && output != "json" {
				return fmt.Errorf("unknown output format %q: use yaml or json", output)
			}
			env, err := d.loadEnv(file)
			if err != nil {
				return err
			}
			out, err := spec.Render(env, output, explain)
			if err != nil {
				return err
			}
			_, err = d.stdout.Write(out)
			return err
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "environment file (required)")
	_ = cmd.MarkFlagRequired("file")
	cmd.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml or json")
	cmd.Flags().BoolVar(&explain, "explain", false, "name the file:line each value came from")
	return cmd
}
