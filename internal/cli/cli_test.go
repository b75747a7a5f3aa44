package cli_test

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"knit.dev/knit/internal/cli"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/scripts/*.txtar")

// TestMain lets the test binary act as the knit command inside scripts.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"knit": func() {
			os.Exit(cli.Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
		},
	})
}

// TestScripts runs the CLI scenarios in testdata/scripts: each is a txtar
// archive of commands, the files they read, and the exact output a person
// sees (the golden files). Run with -update to rewrite the expected output.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/scripts",
		UpdateScripts: *update,
		Setup: func(e *testscript.Env) error {
			// Keep the host's configuration out of the scripts.
			for _, k := range []string{"KNIT_TF_BINARY", "KNIT_DATA_DIR", "KNIT_SERVER", "KNIT_TOKEN", "NO_COLOR"} {
				e.Setenv(k, "")
			}
			e.Setenv("KNIT_DATA_DIR", e.WorkDir+"/.knit")
			return nil
		},
	})
}
