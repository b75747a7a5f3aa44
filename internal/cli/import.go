package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/tgimport"
)

func newImportCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "import",
		Short: "Translate another tool's configuration into knit environments",
	}
	cmd.AddCommand(newImportTerragruntCmd(d))
	return cmd
}

// importFlags are knit import terragrunt's flags.
type importFlags struct {
	output, out, team string
	envPer            int
	force             bool
}

func newImportTerragruntCmd(d *deps) *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "terragrunt DIR [-o text|yaml|json] [--env-per FOLDER-LEVEL] [--out DIR] [--team NAME]",
		Short: "Write a knit environment per environment folder of a Terragrunt tree",
		Long: `Read the Terragrunt tree under DIR with Terragrunt's own configuration parser
(include, expose, locals, find_in_parent_folders, read_terragrunt_config and
dependency evaluate as Terragrunt evaluates them) and write one knit
Environment per environment folder, one terraform component per unit.

The environment folder of a unit is the folder --env-per levels below DIR;
by default, the nearest folder above the unit holding an env.hcl, else the
unit's parent folder. Everything the import cannot carry (hooks, run_cmd,
mock outputs, a dependency on another environment) is listed with its
file:line. The import never runs what the configuration asks for: run_cmd,
hooks, dependency output fetches and cloud look-ups are not called.

  -o text   write OUT/ENV.yaml for each environment (OUT: --out, default
            DIR) and print what was written and what was not carried
  -o yaml   print the environments as YAML documents; the report goes to stderr
  -o json   print the environments and the report as one JSON object

Every environment is validated as knit validate would the written file;
when one is invalid, nothing is written and the command exits 1.
See docs/terragrunt.md for the mapping.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImportTerragrunt(cmd, d, args[0], f)
		},
	}
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "text (write files), yaml or json")
	cmd.Flags().IntVar(&f.envPer, "env-per", 0, "the folder level below DIR that is an environment (0: the folder holding env.hcl, else the unit's parent)")
	cmd.Flags().StringVar(&f.out, "out", "", "folder the environment files are written to, and local module paths are relative to (default DIR)")
	cmd.Flags().StringVar(&f.team, "team", "", "teamName of every environment (default: DIR's folder name)")
	cmd.Flags().BoolVar(&f.force, "force", false, "replace environment files that exist")
	return cmd
}

func runImportTerragrunt(cmd *cobra.Command, d *deps, dir string, f importFlags) error {
	if f.output != "text" && f.output != "yaml" && f.output != "json" {
		return fmt.Errorf("unknown output format %q: use text, yaml or json", f.output)
	}
	if f.envPer < 0 {
		return fmt.Errorf("--env-per %d: give a folder level, 1 or more (0: find env.hcl)", f.envPer)
	}
	bin, err := tgimport.Locate()
	if err != nil {
		return err
	}
	desc, err := tgimport.Describe(cmd.Context(), bin, dir)
	if err != nil {
		return err
	}
	out := f.out
	if out == "" {
		out = desc.Root
	}
	if out, err = filepath.Abs(out); err != nil {
		return err
	}
	res, err := tgimport.Translate(desc, tgimport.Options{EnvLevel: f.envPer, Team: f.team, Dir: out, HasEnvFile: envFileIn(desc.Root)})
	if err != nil {
		return err
	}
	diags := tgimport.Check(res, out, d.specOptions())
	if err := diags.Err(); err != nil {
		tgimport.PrintReport(d.stderr, res, "")
		return err
	}
	switch f.output {
	case "json":
		return writeJSON(d.stdout, res)
	case "yaml":
		if err := tgimport.WriteYAML(d.stdout, res); err != nil {
			return err
		}
		tgimport.PrintReport(d.stderr, res, "")
		return nil
	}
	if err := tgimport.WriteFiles(res, out, f.force); err != nil {
		return err
	}
	tgimport.PrintReport(d.stdout, res, out)
	return nil
}

// envFileIn reports whether a folder of the tree at root holds an env.hcl.
func envFileIn(root string) func(string) bool {
	return func(folder string) bool {
		st, err := os.Stat(filepath.Join(root, filepath.FromSlash(folder), "env.hcl"))
		return err == nil && !st.IsDir()
	}
}
