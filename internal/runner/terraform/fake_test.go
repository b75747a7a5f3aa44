package terraform_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
)

// fakeTool writes a shell script standing in for tofu: it records each
// command line in argv.log and the TF_ environment of init in env.log, and
// answers version, plan, show and output the way tofu would. It returns the
// binary and the folder holding the logs.
func fakeTool(t *testing.T, body string) (terraform.Binary, string) {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
echo "$*" >> ` + dir + `/argv.log
case "$1" in
version) echo '{"terraform_version":"1.12.6","platform":"linux_amd64","provider_selections":{}}'; exit 0;;
esac
` + body
	p := filepath.Join(dir, "tofu")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	rc := filepath.Join(dir, "tofurc")
	if err := os.WriteFile(rc, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return terraform.Binary{Path: p, CLIConfig: rc}, dir
}

const fakeCommands = `
case "$1" in
init) env | grep -E '^(TF_|CHECKPOINT_DISABLE=)' | sort > "$(dirname "$0")/env.log"; mkdir -p .terraform;;
plan) for a in "$@"; do case "$a" in -out=*) echo "$*" > "${a#-out=}";; esac; done
  echo '{"type":"outputs","outputs":{"o":{"sensitive":false,"action":"create"}}}'; exit 2;;
apply) echo '{"@message":"Outputs: 1","type":"outputs","outputs":{"o":{"sensitive":false,"type":"string","value":"v"}}}';;
show) echo '{"format_version":"1.2","terraform_version":"1.12.6","output_changes":{"o":{"actions":["create"]}}}';;
output) echo '{"o":{"sensitive":false,"type":"string","value":"v"}}';;
esac
exit 0
`

// TestToolCommandLines checks the argv and environment knit gives the tool
// (through terraform-exec) for every operation.
func TestToolCommandLines(t *testing.T) {
	t.Setenv("TF_VAR_leak", "from the environment")
	t.Setenv("TF_CLI_CONFIG_FILE", "/missing/rc")
	bin, logs := fakeTool(t, fakeCommands)
	f := newFixture(t, bin, map[string]string{"mod/main.tf": "# fake"}, localModule("mod"))
	ctx := context.Background()
	wd := f.c.WorkDir
	planPath := filepath.Join(wd, "plan.tfplan")

	p := f.plan(runner.Inputs{"x": 1}, runner.PlanOptions{KnownOutputs: true})
	if !p.HasChanges() || len(p.OutputChanges) != 1 {
		t.Errorf("plan = %+v, want the fake's output change", p)
	}
	f.plan(nil, runner.PlanOptions{Destroy: true})
	f.plan(nil, runner.PlanOptions{RefreshOnly: true})
	p = f.plan(nil, runner.PlanOptions{})
	if out := f.apply(p); out["o"].Value != "v" {
		t.Errorf("outputs = %v", out)
	}
	if err := os.WriteFile(filepath.Join(wd, "terraform.tfstate"), []byte(`{"resources":[{}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.r.Destroy(ctx, f.c, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Plan(ctx, f.c, nil, runner.PlanOptions{Destroy: true, RefreshOnly: true}); err == nil {
		t.Error("a destroy refresh-only plan was accepted")
	}

	// The runner knows the tool's version (Options.ToolVersion), so tfexec
	// never has to ask the tool: no `version` process per command.
	cmds := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(logs, "argv.log"))), "\n")
	// show -json runs only when the caller asks for what the stream lacks
	// (planned output values here), output -json only for sensitive outputs.
	plan := "plan -no-color -input=false -detailed-exitcode -lock-timeout=0s -out=" + planPath + " -lock=true -parallelism=10 -refresh=true"
	want := []string{
		"init -no-color -input=false -backend=true -get=true -upgrade=false",
		plan + " -json",
		"show -json -no-color " + planPath,
		plan + " -destroy -json",
		plan + " -refresh-only -json",
		plan + " -json",
		"apply -no-color -auto-approve -input=false -lock=true -parallelism=10 -refresh=true -json " + planPath,
		"destroy -no-color -auto-approve -input=false -lock-timeout=0s -lock=true -parallelism=10 -refresh=true",
	}
	if strings.Join(cmds, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(cmds, "\n"), strings.Join(want, "\n"))
	}

	env := readFile(t, filepath.Join(logs, "env.log"))
	for _, kv := range []string{
		"TF_CLI_CONFIG_FILE=" + bin.CLIConfig,
		"TF_PLUGIN_CACHE_DIR=" + filepath.Join(f.data, "plugin-cache"),
		"TF_PLUGIN_CACHE_MAY_BREAK_DEPENDENCY_LOCK_FILE=true",
		"TF_IN_AUTOMATION=1",
		"CHECKPOINT_DISABLE=1",
	} {
		if !strings.Contains(env, kv+"\n") {
			t.Errorf("tool environment lacks %s:\n%s", kv, env)
		}
	}
	if strings.Contains(env, "TF_VAR_leak") || strings.Contains(env, "/missing/rc") {
		t.Errorf("the caller's TF_VAR_/TF_CLI_CONFIG_FILE reached the tool:\n%s", env)
	}
}

// TestCancelKillsAfterGracePeriod: a tool that ignores SIGINT gets it, and
// is killed once the grace period is over.
func TestCancelKillsAfterGracePeriod(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH: cannot build the stub tool (CI always has it)")
	}
	dir := t.TempDir()
	bin := terraform.Binary{Path: filepath.Join(dir, "tofu")}
	if out, err := exec.Command(goBin, "build", "-o", bin.Path, "./testdata/stubborn").CombinedOutput(); err != nil {
		t.Fatalf("build stub: %v\n%s", err, out)
	}
	f := newFixture(t, bin, map[string]string{"mod/main.tf": "# fake"}, localModule("mod"))
	f.r = terraform.New(bin, terraform.Options{DataDir: f.data, GracePeriod: 300 * time.Millisecond})
	if err := os.MkdirAll(f.moduleFile(".terraform"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// The stub never exits on its own: Outputs returns only because the tool
	// is killed once the grace period is over (the guard just avoids a hang).
	done := make(chan error, 1)
	go func() { _, err := f.r.Outputs(ctx, f.c); done <- err }()
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the tool was never killed")
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
	if s, _ := os.ReadFile(filepath.Join(dir, "signals.log")); !strings.Contains(string(s), "interrupted") {
		t.Error("the tool got no SIGINT before being killed")
	}
}
