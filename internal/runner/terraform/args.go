package terraform

import "knit.dev/knit/internal/runner"

// The command lines knit runs, built apart from running them. Every command
// that changes or reads state runs with -input=false (the tool never
// prompts) and, where the tool has it, -json: results are read from the
// tool's machine-readable stream, and its human messages from the same
// stream go to the component's log. Defaults the tool already has (-lock=true,
// -refresh=true, -parallelism=10, -lock-timeout=0s) are not repeated.

// initArgs initialises the run folder: providers from the shared plugin
// cache, modules, backend. A changed backend is left as an error for the
// user, never a silent -reconfigure.
func initArgs() []string {
	return []string{"init", "-input=false", "-no-color"}
}

// planArgs saves a plan to file (unless opts.Unsaved); the stream tells
// what it changes.
func planArgs(file string, opts runner.PlanOptions) []string {
	args := []string{"plan", "-json", "-input=false"}
	if !opts.Unsaved {
		args = append(args, "-out="+file)
	}
	if opts.Destroy {
		args = append(args, "-destroy")
	}
	if opts.RefreshOnly {
		args = append(args, "-refresh-only")
	}
	return args
}

// applyArgs applies exactly the saved plan in file.
func applyArgs(file string) []string {
	return []string{"apply", "-json", "-input=false", "-auto-approve", file}
}

// planApplyArgs plans and applies in one process, without a saved plan:
// for components nobody approves.
func planApplyArgs() []string {
	return []string{"apply", "-json", "-input=false", "-auto-approve"}
}

// destroyArgs destroys everything the component manages; the refresh lets
// the tool skip objects already gone.
func destroyArgs() []string {
	return []string{"destroy", "-json", "-input=false", "-auto-approve"}
}

// showPlanArgs prints the saved plan in file as JSON (terraform-json's Plan).
func showPlanArgs(file string) []string {
	return []string{"show", "-json", "-no-color", file}
}

// outputArgs prints every output, sensitive values included, as JSON.
func outputArgs() []string {
	return []string{"output", "-json", "-no-color"}
}
