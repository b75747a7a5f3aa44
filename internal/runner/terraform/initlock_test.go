package terraform_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// slowInit is a fake tool whose init logs when it starts and ends, with
// its process id, around a pause long enough for two to overlap.
const slowInit = `
case "$1" in
init) echo "start $$" >> "$(dirname "$0")/inits.log"; sleep 0.8; echo "end $$" >> "$(dirname "$0")/inits.log"; mkdir -p .terraform;;
plan) for a in "$@"; do case "$a" in -out=*) : > "${a#-out=}";; esac; done;;
esac
exit 0
`

// TestInitLockAcrossProcesses runs init in two processes sharing one data
// dir at the same moment. A tool that does not lock the plugin cache
// itself (Terraform) gets the data dir's init lock exclusively: the inits
// never overlap. OpenTofu 1.10 and later lock the cache themselves: the
// lock is shared and the inits run at once.
func TestInitLockAcrossProcesses(t *testing.T) {
	if os.Getenv("KNIT_INIT_HELPER_DATA") != "" {
		initHelper(t)
		return
	}
	for _, tc := range []struct {
		tool    string
		overlap bool
	}{{"Terraform v1.5.7", false}, {"OpenTofu v1.12.6", true}} {
		t.Run(strings.Fields(tc.tool)[0], func(t *testing.T) {
			bin, logs := fakeTool(t, slowInit)
			data := t.TempDir()
			var cmds []*exec.Cmd
			for range 2 {
				cmd := exec.Command(os.Args[0], "-test.run=^TestInitLockAcrossProcesses$", "-test.count=1")
				cmd.Env = append(os.Environ(), "KNIT_INIT_HELPER_DATA="+data, "KNIT_INIT_HELPER_TOOL="+bin.Path,
					"KNIT_INIT_HELPER_VERSION="+tc.tool)
				var out strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				cmds = append(cmds, cmd)
				t.Cleanup(func() {
					if t.Failed() {
						t.Log(out.String())
					}
				})
			}
			for _, cmd := range cmds {
				if err := cmd.Wait(); err != nil {
					t.Fatalf("helper process: %v", err)
				}
			}
			lines := strings.Fields(strings.ReplaceAll(readFile(t, filepath.Join(logs, "inits.log")), "\n", " "))
			// Four events, "start PID" / "end PID" pairs: without overlap
			// each start is followed by its own end.
			if len(lines) != 8 {
				t.Fatalf("inits.log: %v, want two inits", lines)
			}
			overlapped := lines[2] != "end"
			if overlapped != tc.overlap {
				t.Errorf("%s: inits overlapped = %v, want %v (%v)", tc.tool, overlapped, tc.overlap, lines)
			}
		})
	}
}

// initHelper is one of TestInitLockAcrossProcesses's processes: it plans
// one component, which runs init, in the shared data dir.
func initHelper(t *testing.T) {
	envDir := t.TempDir()
	testtools.WriteFiles(t, envDir, map[string]string{"mod/main.tf": "# fake"})
	def := &spec.Component{Name: "app", Type: spec.TypeTerraform, Module: &spec.Module{Source: "./mod"}}
	env := &spec.Environment{Dir: envDir, File: filepath.Join(envDir, "env.yaml"),
		Spec: spec.EnvSpec{TeamName: "team", EnvName: "e" + filepath.Base(envDir), Components: []*spec.Component{def}}}
	data := os.Getenv("KNIT_INIT_HELPER_DATA")
	r := terraform.New(terraform.Binary{Path: os.Getenv("KNIT_INIT_HELPER_TOOL")},
		terraform.Options{DataDir: data, ToolVersion: os.Getenv("KNIT_INIT_HELPER_VERSION")})
	c := runner.Component{Env: env.ID(), Spec: env, Def: def, WorkDir: filepath.Join(envDir, "work"), Log: os.Stderr}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := r.Plan(ctx, c, nil, runner.PlanOptions{}); err != nil {
		t.Fatal(err)
	}
}
