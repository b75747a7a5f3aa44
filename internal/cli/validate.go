package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/diag"
	"knit.dev/knit/internal/spec"
)

func newValidateCmd(d *deps) *cobra.Command {
	var file, output string
	cmd := &cobra.Command{
		Use:   "validate -f FILE",
		Short: "Check an environment file and report every problem at once",
		Long: `Parse and validate an environment file. Every problem is reported, each as
file:line:col: field: message, with a hint where one helps.
Exit 0 when the file is valid (warnings allowed), 1 when it is not.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			env, diags := spec.LoadWith(file, d.specOptions())
			if env != nil && env.Kind == spec.KindTemplate {
				env, diags = spec.CheckTemplate(file, d.specOptions())
			}
			if env != nil && env.Kind == spec.KindSet {
				return validateSet(d.stdout, file, output, d.specOptions())
			}
			if env != nil && env.Kind == spec.KindPipeline {
				return validatePipeline(d.stdout, file, output, d.specOptions())
			}
			var err error
			if output == "json" {
				err = writeJSON(d.stdout, newValidateView(file, env, diags))
			} else {
				printValidate(d.stdout, file, env, diags)
			}
			if err != nil {
				return err
			}
			if diags.HasErrors() {
				return &ExitError{Code: ExitFailure}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "environment file (required)")
	_ = cmd.MarkFlagRequired("file")
	outputFlag(cmd, &output)
	return cmd
}

type validateView struct {
	File        string           `json:"file"`
	Valid       bool             `json:"valid"`
	Environment string           `json:"environment,omitempty"`
	Components  int              `json:"components"`
	Errors      int              `json:"errors"`
	Warnings    int              `json:"warnings"`
	Diagnostics diag.Diagnostics `json:"diagnostics"`
}

func newValidateView(file string, env *spec.Environment, diags diag.Diagnostics) validateView {
	v := validateView{
		File: file, Valid: !diags.HasErrors(), Diagnostics: diags,
		Errors: len(diags.Errors()), Warnings: len(diags.Warnings()),
	}
	if v.Diagnostics == nil {
		v.Diagnostics = diag.Diagnostics{}
	}
	if env != nil {
		v.Environment = env.ID()
		v.Components = len(env.Spec.Components)
	}
	return v
}

func printValidate(w io.Writer, file string, env *spec.Environment, diags diag.Diagnostics) {
	for _, dg := range diags {
		fmt.Fprintln(w, dg.String())
	}
	v := newValidateView(file, env, diags)
	if v.Valid {
		fmt.Fprintf(w, "%s: valid: environment %s, %s, %s\n", file, v.Environment, plural(v.Components, "component"), plural(v.Warnings, "warning"))
		return
	}
	fmt.Fprintf(w, "%s: invalid: %s, %s\n", file, plural(v.Errors, "error"), plural(v.Warnings, "warning"))
}

// validateSet checks an environment set: every environment it generates
// (without a server's branches), reported like one file's.
func validateSet(w io.Writer, file, output string, opts spec.Options) error {
	envs, diags := spec.CheckSet(file, opts)
	if output == "json" {
		v := newValidateView(file, nil, diags)
		for _, env := range envs {
			v.Components += len(env.Spec.Components)
		}
		if err := writeJSON(w, v); err != nil {
			return err
		}
	} else {
		for _, dg := range diags {
			fmt.Fprintln(w, dg.String())
		}
		if diags.HasErrors() {
			fmt.Fprintf(w, "%s: invalid: %s, %s\n", file, plural(len(diags.Errors()), "error"), plural(len(diags.Warnings()), "warning"))
		} else {
			fmt.Fprintf(w, "%s: valid: environment set of %s\n", file, plural(len(envs), "environment"))
		}
	}
	if diags.HasErrors() {
		return &ExitError{Code: ExitFailure}
	}
	return nil
}

// validatePipeline checks a pipeline file with every stage's environment
// file, reported like one file's.
func validatePipeline(w io.Writer, file, output string, opts spec.Options) error {
	p, diags := spec.LoadPipeline(file, opts)
	v := newValidateView(file, nil, diags)
	if output == "json" {
		if err := writeJSON(w, v); err != nil {
			return err
		}
	} else {
		for _, dg := range diags {
			fmt.Fprintln(w, dg.String())
		}
		if v.Valid {
			fmt.Fprintf(w, "%s: valid: pipeline %s of team %s, %s\n", file, p.Metadata.Name, p.Spec.TeamName, plural(len(p.Spec.Stages), "stage"))
		} else {
			fmt.Fprintf(w, "%s: invalid: %s, %s\n", file, plural(v.Errors, "error"), plural(v.Warnings, "warning"))
		}
	}
	if diags.HasErrors() {
		return &ExitError{Code: ExitFailure}
	}
	return nil
}
