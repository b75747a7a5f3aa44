package cli

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
)

// argKind is what a positional argument names, for shell completion.
type argKind int

const (
	argEnv       argKind = iota // an environment (team/env)
	argComponent                // one of the environment's components
	argAwaiting                 // a component whose plan awaits approval
)

// completedArgs says what each command's positional arguments are.
var completedArgs = map[string][]argKind{
	"status": {argEnv}, "history": {argEnv}, "audit": {argEnv}, "approvals": {argEnv}, "graph": {argEnv},
	"plan": {argEnv}, "apply": {argEnv}, "drift": {argEnv}, "teardown": {argEnv},
	"output": {argEnv, argComponent}, "logs": {argEnv, argComponent},
	"approve": {argEnv, argAwaiting}, "reject": {argEnv, argAwaiting},
	"diff": {argEnv, argEnv},
}

// registerCompletions makes the shell complete environment names,
// component names (also of -c) and waiting approvals (their checksums for
// --checksum), from this machine's store or, with --server, the server's API.
func registerCompletions(d *deps, root *cobra.Command) {
	for _, cmd := range root.Commands() {
		kinds, ok := completedArgs[cmd.Name()]
		if !ok {
			continue
		}
		cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) >= len(kinds) {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			return d.completions(cmd, kinds[len(args)], args, prefix), cobra.ShellCompDirectiveNoFileComp
		}
		if cmd.Flags().Lookup("component") != nil {
			_ = cmd.RegisterFlagCompletionFunc("component", func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return d.completions(cmd, argComponent, args, prefix), cobra.ShellCompDirectiveNoFileComp
			})
		}
		if cmd.Flags().Lookup("checksum") != nil {
			_ = cmd.RegisterFlagCompletionFunc("checksum", func(cmd *cobra.Command, args []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
				return d.completeChecksums(cmd, args, prefix), cobra.ShellCompDirectiveNoFileComp
			})
		}
	}
}

// completions lists what an argument of kind may be, each with a word on
// where it stands; args are the arguments before it. Completion never
// fails out loud: an unreachable server or an empty store offers nothing.
func (d *deps) completions(cmd *cobra.Command, kind argKind, args []string, prefix string) []cobra.Completion {
	var out []cobra.Completion
	d.completing(cmd, func(ctx context.Context, b backend) error {
		switch {
		case kind == argEnv:
			page, err := b.Environments(ctx, knit.EnvironmentFilter{Limit: 1000})
			for _, e := range page.Items {
				out = append(out, cobra.CompletionWithDesc(e.ID, engine.EnvLabel(e.Status)))
			}
			return err
		case len(args) == 0:
			return nil // a component needs its environment first
		case kind == argComponent:
			v, err := b.Environment(ctx, args[0])
			for _, c := range v.Components {
				out = append(out, cobra.CompletionWithDesc(c.Name, c.Status))
			}
			return err
		}
		as, err := b.Approvals(ctx, args[0], store.ApprovalPending)
		for _, a := range as {
			out = append(out, cobra.CompletionWithDesc(a.Component, fmt.Sprintf("approval #%d, plan %s", a.ID, shortChecksum(a.PlanChecksum))))
		}
		return err
	})
	return keepPrefixed(out, prefix)
}

// completeChecksums offers the checksums of the plans waiting for approval
// (of ENV, and COMPONENT when given), each named by its approval ID.
func (d *deps) completeChecksums(cmd *cobra.Command, args []string, prefix string) []cobra.Completion {
	if len(args) == 0 {
		return nil
	}
	var out []cobra.Completion
	d.completing(cmd, func(ctx context.Context, b backend) error {
		as, err := b.Approvals(ctx, args[0], store.ApprovalPending)
		for _, a := range as {
			if len(args) < 2 || a.Component == args[1] {
				out = append(out, cobra.CompletionWithDesc(shortChecksum(a.PlanChecksum), fmt.Sprintf("approval #%d of %s", a.ID, a.Component)))
			}
		}
		return err
	})
	return keepPrefixed(out, prefix)
}

// completing runs fn on the backend unless there is nothing to ask: no
// server named and no store on this machine yet (completion must not
// create one).
func (d *deps) completing(cmd *cobra.Command, fn func(context.Context, backend) error) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	if d.serverURL() == "" {
		dir, err := d.dataDir()
		if err != nil {
			return
		}
		if _, err := os.Stat(dir); err != nil {
			return
		}
	}
	b, err := d.backend(ctx)
	if err != nil {
		cobra.CompDebugln("knit: "+err.Error(), true)
		return
	}
	defer b.Close()
	if err := fn(ctx, b); err != nil {
		cobra.CompDebugln("knit: "+err.Error(), true)
	}
}

func keepPrefixed(cs []cobra.Completion, prefix string) []cobra.Completion {
	out := cs[:0]
	for _, c := range cs {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}
