package cli_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"knit.dev/knit/internal/cli"
	"knit.dev/knit/internal/runner/external"
	"knit.dev/knit/internal/spec/valuesschema"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/scripts/*.txtar")

// TestMain lets the test binary act as the knit command inside scripts,
// and as knit-kube's values-check.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"knit": func() {
			os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
		// knit-kube's values-check, which knit validate asks for charts'
		// values.schema.json (found on PATH, as beside knit).
		"knit-kube": func() {
			if len(os.Args) != 2 || os.Args[1] != external.OpValuesCheck {
				fmt.Fprintln(os.Stderr, "this test's knit-kube only does", external.OpValuesCheck)
				os.Exit(2)
			}
			if err := valuesschema.Serve(os.Stdin, os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		},
	})
}

// TestScripts runs the CLI scenarios in testdata/scripts: each is a txtar
// archive of commands, the files they read, and the exact output a person
// sees (the golden files). Run with -update to rewrite the expected output.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/scripts",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			// Keep the host's configuration out of the scripts.
			for _, k := range []string{"KNIT_TF_BINARY", "KNIT_SERVER", "KNIT_TOKEN", "KNIT_TF_CLI_CONFIG", "TF_CLI_CONFIG_FILE"} {
				e.Setenv(k, "")
			}
			e.Setenv("KNIT_DATA_DIR", e.WorkDir+"/.knit")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits": exits,
		},
	})
}

// exits N CMD ARGS... runs CMD like exec and fails unless it exits with
// status N: knit's exit codes (1 error, 2 changes, 3 approval) are part of
// its interface, and "! exec" only says "not 0".
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits STATUS COMMAND [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad status %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}
