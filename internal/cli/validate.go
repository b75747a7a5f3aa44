package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/diag"
	"knit.dev/knit/internal/policy"
	"knit.dev/knit/internal/spec"
)

// kindPolicies is what validate's JSON calls a folder of policies (it has
// no kind: of its own).
const kindPolicies = "policies"

func newValidateCmd(d *deps) *cobra.Command {
	var file, output string
	cmd := &cobra.Command{
		Use:   "validate -f FILE|DIR",
		Short: "Check a file knit reads (environment, template, set, pipeline) or a folder of policies",
		Long: `Parse and validate what -f names, by the kind: of its document:

  Environment          the environment, its template and overrides
  EnvironmentTemplate  the template on its own (its defaults, and a
                       placeholder for each parameter without one)
  EnvironmentSet       every environment the set generates (an
                       environments generator: over the live
                       environments of the data dir, or of --server)
  Pipeline             the pipeline and each stage's environment file
                       (relative to the pipeline file's folder)

A folder (or a .rego file) is a folder of policies: every .rego file
under it but the *_test.rego ones, parsed and compiled as the server
loads them.

Every problem is reported, each as file:line:col: field: message, with a
hint where one helps. Exit 0 when valid (warnings allowed), 1 when not.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			v := validate(cmd.Context(), file, d.specOptions(), d.liveEnvironments)
			if err := d.checkEnvReads(cmd.Context(), file, d.specOptions(), &v); err != nil {
				return err
			}
			if output == "json" {
				if err := writeJSON(d.stdout, v); err != nil {
					return err
				}
			} else {
				v.print(d.stdout)
			}
			if !v.Valid {
				return &ExitError{Code: ExitFailure}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "the file (or folder of policies) to check (required)")
	_ = cmd.MarkFlagRequired("file")
	outputFlag(cmd, &output)
	return cmd
}

// validateView is what knit validate found: the verdict, what the file
// holds, and every problem.
type validateView struct {
	File  string `json:"file"`
	Kind  string `json:"kind,omitempty"`
	Valid bool   `json:"valid"`
	// Environment is an environment file's team/env.
	Environment string `json:"environment,omitempty"`
	// Pipeline is a pipeline file's name; Stages, how many stages it has.
	Pipeline string `json:"pipeline,omitempty"`
	Stages   int    `json:"stages,omitempty"`
	// Environments is how many environments a set generates.
	Environments int `json:"environments,omitempty"`
	// Policies is how many policy files a folder holds.
	Policies    int              `json:"policies,omitempty"`
	Components  int              `json:"components"`
	Errors      int              `json:"errors"`
	Warnings    int              `json:"warnings"`
	Diagnostics diag.Diagnostics `json:"diagnostics"`
	// summary says what a valid file is, after "valid: ".
	summary string
}

// validate checks what file names, by its kind (a folder or a .rego file:
// policies).
func validate(ctx context.Context, file string, opts spec.Options, live liveSource) validateView {
	if info, err := os.Stat(file); err == nil && info.IsDir() || strings.HasSuffix(file, ".rego") {
		return validatePolicies(ctx, file)
	}
	env, diags := spec.LoadWith(file, opts)
	if env == nil {
		return newValidateView(file, "", diags, "")
	}
	switch env.Kind {
	case spec.KindTemplate:
		return validateTemplate(file, opts)
	case spec.KindSet:
		return validateSet(ctx, file, opts, live)
	case spec.KindPipeline:
		return validatePipeline(file, opts)
	}
	v := newValidateView(file, env.Kind, diags, fmt.Sprintf("environment %s, %s", env.ID(), plural(len(env.Spec.Components), "component")))
	v.Environment, v.Components = env.ID(), len(env.Spec.Components)
	return v
}

func newValidateView(file, kind string, diags diag.Diagnostics, summary string) validateView {
	v := validateView{
		File: file, Kind: kind, Valid: !diags.HasErrors(), Diagnostics: diags,
		Errors: len(diags.Errors()), Warnings: len(diags.Warnings()), summary: summary,
	}
	if v.Diagnostics == nil {
		v.Diagnostics = diag.Diagnostics{}
	}
	return v
}

// print writes every diagnostic, then a one-line verdict.
func (v validateView) print(w io.Writer) {
	for _, dg := range v.Diagnostics {
		fmt.Fprintln(w, dg.String())
	}
	if v.Valid {
		fmt.Fprintf(w, "%s: valid: %s, %s\n", v.File, v.summary, plural(v.Warnings, "warning"))
		return
	}
	fmt.Fprintf(w, "%s: invalid: %s, %s\n", v.File, plural(v.Errors, "error"), plural(v.Warnings, "warning"))
}

// validateTemplate checks a template on its own (spec.CheckTemplate).
func validateTemplate(file string, opts spec.Options) validateView {
	env, diags := spec.CheckTemplate(file, opts)
	n := 0
	if env != nil {
		n = len(env.Spec.Components)
	}
	v := newValidateView(file, spec.KindTemplate, diags, "environment template of "+plural(n, "component"))
	v.Components = n
	return v
}

// validateSet checks an environment set: every environment it generates
// (without a server's branches; over the live environments of the store
// the flags name, when it has an environments generator), reported like
// one file's.
func validateSet(ctx context.Context, file string, opts spec.Options, live liveSource) validateView {
	var envs []*spec.Environment
	set, diags := spec.LoadSet(file, opts)
	if !diags.HasErrors() {
		in, err := setInputs(ctx, set, nil, live)
		if err != nil {
			diags = append(diags, diag.Diagnostic{Severity: diag.Error, Pos: diag.Pos{File: file}, Field: "spec.generators", Message: err.Error(),
				Hint: "an environments generator reads the live environments of the local data dir (--data-dir) or of the server (--server)"})
		} else {
			envs, diags = set.ExpandOver(in)
		}
	}
	v := newValidateView(file, spec.KindSet, diags, "environment set of "+plural(len(envs), "environment"))
	v.Environments = len(envs)
	for _, env := range envs {
		v.Components += len(env.Spec.Components)
	}
	return v
}

// validatePipeline checks a pipeline file with every stage's environment
// file, reported like one file's.
func validatePipeline(file string, opts spec.Options) validateView {
	p, diags := spec.LoadPipeline(file, opts)
	if p == nil {
		return newValidateView(file, spec.KindPipeline, diags, "")
	}
	v := newValidateView(file, spec.KindPipeline, diags,
		fmt.Sprintf("pipeline %s of team %s, %s", p.Metadata.Name, p.Spec.TeamName, plural(len(p.Spec.Stages), "stage")))
	v.Pipeline, v.Stages = p.Metadata.Name, len(p.Spec.Stages)
	return v
}

// validatePolicies compiles a folder of policies as the server loads them.
func validatePolicies(ctx context.Context, dir string) validateView {
	files, diags := policy.Check(ctx, dir)
	if !diags.HasErrors() && len(files) == 0 {
		diags = append(diags, diag.Diagnostic{Severity: diag.Error, Pos: diag.Pos{File: dir}, Message: "no policy file (*.rego, tests aside) in this folder",
			Hint: "knit validate -f DIR checks a folder of policies; to check an Environment, EnvironmentTemplate, EnvironmentSet or Pipeline, name its file"})
	}
	v := newValidateView(dir, kindPolicies, diags, "policies, "+plural(len(files), "file"))
	v.Policies = len(files)
	return v
}
