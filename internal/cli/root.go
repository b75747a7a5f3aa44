// Package cli is knit's command line: one file per command, each copying
// flags into a call on the engine or store and handing the result to a view.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/diag"
)

// Exit codes shared by every command.
const (
	ExitOK       = 0
	ExitFailure  = 1
	ExitChanges  = 2 // changes or drift present
	ExitApproval = 3 // stopped at an approval gate
)

// ExitError carries a specific exit code out of a command. Err, when set, is
// printed to stderr; a nil Err means the command already said what it had to.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// deps is what every command is handed: the streams and the environment.
type deps struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
	global globalFlags
	// progress is the running command's progress display, if any.
	progress *progress
	// watchdog starts the tool watchdog for runs in this process (nil:
	// none, as in tests that run the CLI in their own process).
	watchdog *selfWatchdog
	// kube runs knit controller's work; nil in knit's own binary, which
	// starts knit-kube for it with args, this command's (see Kube).
	kube *Kube
	args []string
	// ownProcess: the command runs as this process (Main), not in a
	// caller's (Run), so it may become another program.
	ownProcess bool
}

type globalFlags struct {
	dataDir   string
	tfBinary  string
	server    string
	tokenFile string
	// store and storeDSNFile name the store (see storeDSN).
	store, storeDSNFile string
	// lockLease is the runs' lock lease (knit serve's --lock-lease; 0:
	// knit's default).
	lockLease time.Duration
}

// Run executes knit with args and returns the process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return RunWith(ctx, args, stdin, stdout, stderr, nil)
}

// RunWith is Run for a binary that adds kube (see Kube).
func RunWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, kube *Kube) int {
	return run(ctx, &deps{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, kube: kube, args: args}, args)
}

func run(ctx context.Context, d *deps, args []string) int {
	root := newRootCmd(d)
	root.SetArgs(args)
	root.SetIn(d.stdin)
	root.SetOut(d.stdout)
	root.SetErr(d.stderr)
	err := root.ExecuteContext(ctx)
	return exitCode(err, d.stderr)
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			printError(stderr, ee.Err)
		}
		return ee.Code
	}
	printError(stderr, err)
	return ExitFailure
}

func printError(w io.Writer, err error) {
	if ds, ok := diag.From(err); ok {
		fmt.Fprintln(w, ds.String())
		return
	}
	fmt.Fprintln(w, "error:", err)
}

func newRootCmd(d *deps) *cobra.Command {
	root := &cobra.Command{
		Use:   "knit",
		Short: "Environment as Code: provision, reconcile and tear down whole environments",
		Long: `knit provisions a whole environment declared in one YAML file (networking,
clusters, databases, apps) with the real tools, in dependency order, keeps it
in sync with that file, and tears it down.

Exit codes: 0 ok, 1 error, 2 changes or drift present, 3 stopped at an approval gate.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&d.global.dataDir, "data-dir", "", "where knit keeps its store and work dirs (env KNIT_DATA_DIR, default $XDG_DATA_HOME/knit)")
	root.PersistentFlags().StringVar(&d.global.tfBinary, "tf-binary", "", "OpenTofu or Terraform binary (env KNIT_TF_BINARY, default tofu then terraform on PATH)")
	root.PersistentFlags().StringVar(&d.global.server, "server", "", "act through the knit server at this URL (env KNIT_SERVER; token from KNIT_TOKEN or --token-file)")
	root.PersistentFlags().StringVar(&d.global.tokenFile, "token-file", "", "file holding the server's API token (default: env KNIT_TOKEN)")
	root.PersistentFlags().StringVar(&d.global.store, "store", "", "keep records in this PostgreSQL database (postgres://…; prefer --store-dsn-file or env KNIT_STORE_DSN for a password; default: SQLite in the data dir)")
	root.PersistentFlags().StringVar(&d.global.storeDSNFile, "store-dsn-file", "", "file holding the PostgreSQL connection string of the store")
	root.AddCommand(
		newValidateCmd(d),
		newRenderCmd(d),
		newGraphCmd(d),
		newPlanCmd(d),
		newApplyCmd(d),
		newTeardownCmd(d),
		newRollbackCmd(d),
		newRolloutCmd(d),
		newTTLCmd(d),
		newPreviewsCmd(d),
		newPipelineCmd(d),
		newFleetCmd(d),
		newReleasesCmd(d),
		newPromoteCmd(d),
		newDriftCmd(d),
		newApprovalsCmd(d),
		newDecideCmd(d, true),
		newDecideCmd(d, false),
		newAuditCmd(d),
		newStatusCmd(d),
		newOutputCmd(d),
		newHealthCmd(d),
		newHistoryCmd(d),
		newDiffCmd(d),
		newLogsCmd(d),
		newServeCmd(d),
		newTokenCmd(d),
		newPolicyCmd(d),
		newStoreCmd(d),
		newControllerCmd(d),
		newImportCmd(d),
		newVersionCmd(d),
	)
	registerCompletions(d, root)
	return root
}

// outputFlag registers -o/--output with text and json.
func outputFlag(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVarP(dst, "output", "o", "text", "output format: text or json")
}

func checkOutput(o string) error {
	if o != "text" && o != "json" {
		return fmt.Errorf("unknown output format %q: use text or json", o)
	}
	return nil
}
