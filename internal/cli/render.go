package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/spec"
)

func newRenderCmd(d *deps) *cobra.Command {
	var file, output string
	var explain bool
	var branches []string
	cmd := &cobra.Command{
		Use:   "render -f FILE [-o yaml|json] [--explain] [--branches a,b]",
		Short: "Print the environment a file resolves to: template, parameters, extends and overrides applied",
		Long: `Load an environment file as plan and apply do, with its template or the
file it extends and its overrides applied, and print the environment that
will run. With --explain, every value names the file:line it came from
(YAML: a comment on the line; JSON: an "origins" map by field path).
An invalid file prints every problem and exits 1.

An EnvironmentSet file prints every environment it generates: YAML
documents separated by ---, or a JSON list. A gitBranches generator
matches the branches of the server's repository, which a local render
cannot list: name them with --branches feature/a,feature/b. An
environments generator selects among the live environments of the store
knit is pointed at: the local data dir, or the server of --server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "yaml" && output != "json" {
				return fmt.Errorf("unknown output format %q: use yaml or json", output)
			}
			if isSetFile(file) {
				return renderSet(cmd.Context(), d, file, output, explain, branches, cmd.Flags().Changed("branches"))
			}
			if cmd.Flags().Changed("branches") {
				return fmt.Errorf("--branches is for an EnvironmentSet file with a gitBranches generator; %s is not a set", file)
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
	cmd.Flags().StringSliceVar(&branches, "branches", nil, "an EnvironmentSet's gitBranches generators match these branch names (comma-separated), as the server's repository's")
	return cmd
}

// isSetFile reports whether file is an EnvironmentSet file (a file that
// cannot be read is not: loading it reports why).
func isSetFile(file string) bool {
	f, err := os.Open(file)
	if err != nil {
		return false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, spec.MaxFileSize+1))
	return err == nil && spec.KindOf(data) == spec.KindSet
}

// renderSet prints every environment the set file generates, each as
// render prints one: YAML documents, or one JSON list.
func renderSet(ctx context.Context, d *deps, file, output string, explain bool, branches []string, branchesGiven bool) error {
	set, diags := spec.LoadSet(file, d.specOptions())
	if err := diags.Err(); err != nil {
		return err
	}
	if at, ok := set.BranchGenerator(); ok && !branchesGiven {
		return fmt.Errorf("%s: the gitBranches generator matches the branches of the server's repository, which a local render cannot list; name them with --branches feature/a,feature/b", at)
	}
	in, err := setInputs(ctx, set, branches, d.liveEnvironments)
	if err != nil {
		return err
	}
	envs, diags := set.ExpandOver(in)
	if err := diags.Err(); err != nil {
		return err
	}
	for _, w := range diags.Warnings() {
		fmt.Fprintln(d.stderr, w.String())
	}
	var b bytes.Buffer
	var list []json.RawMessage
	for i, env := range envs {
		out, err := spec.Render(env, output, explain)
		if err != nil {
			return err
		}
		if output == "json" {
			list = append(list, out)
			continue
		}
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(out)
	}
	if output == "json" {
		return writeJSON(d.stdout, orEmpty(list))
	}
	if len(envs) == 0 {
		fmt.Fprintf(d.stderr, "%s generates no environment\n", file)
	}
	_, err = d.stdout.Write(b.Bytes())
	return err
}
