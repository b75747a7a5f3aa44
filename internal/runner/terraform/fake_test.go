package terraform_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/spec"
)

// fakeTool writes a shell script standing in for tofu: it records each
// command line in argv.log (and body may record more), and
// answers version, plan, show and output the way tofu would. It returns the
// binary and the folder holding the logs.
func fakeTool(t *testing.T, body string) (terraform.Binary, string) {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
echo "$*" >> ` + dir + `/argv.log
case "$1" in
version) echo 'OpenTofu v1.12.6'; echo 'on linux_amd64'; exit 0;;
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

// fakeCommands answers like tofu with -json: every command records its
// TF_ environment in env-<command>.log; plan saves its argv as the plan
// file and reports one output change; apply reports it created.
const fakeCommands = `
env | grep -E '^(TF_|CHECKPOINT_DISABLE=|KNIT_)' | sort > "$(dirname "$0")/env-$1.log"
case "$1" in
init) mkdir -p .terraform;;
plan)
  for a in "$@"; do case "$a" in -out=*) echo "$*" > "${a#-out=}";; esac; done
  echo '{"@message":"Plan: 0 to add","type":"change_summary","changes":{"add":0,"change":0,"remove":0,"operation":"plan"}}'
  echo '{"@message":"Outputs: 1","type":"outputs","outputs":{"o":{"sensitive":false,"action":"create"}}}';;
show) echo '{"format_version":"1.2","terraform_version":"1.12.6","output_changes":{"o":{"actions":["create"]}}}';;
apply)
  echo '{"@message":"Apply complete!","type":"change_summary","changes":{"add":0,"change":0,"remove":0,"operation":"apply"}}'
  echo '{"@message":"Outputs: 1","type":"outputs","outputs":{"o":{"sensitive":false,"type":"string","value":"v"}}}';;
output) echo '{"o":{"sensitive":false,"type":"string","value":"v"}}';;
esac
exit 0
`

// TestToolCommandLines checks the argv and environment knit gives the tool
// for every operation, and the number of tool processes each costs.
func TestToolCommandLines(t *testing.T) {
	t.Setenv("TF_VAR_leak", "from the environment")
	t.Setenv("TF_CLI_CONFIG_FILE", "/missing/rc")
	t.Setenv("KNIT_TOKEN", "t0k3n")
	bin, logs := fakeTool(t, fakeCommands)
	f := newFixture(t, bin, map[string]string{"mod/main.tf": "# fake"}, localModule("mod"))
	f.c.Sensitive = map[string]bool{"password": true}
	ctx := context.Background()
	wd := f.c.WorkDir
	planPath := filepath.Join(wd, "plan.tfplan")
	in := runner.Inputs{"x": 1, "password": "SECRET-xyz"}

	p := f.plan(in, runner.PlanOptions{KnownOutputs: true})
	if !p.HasChanges() || len(p.OutputChanges) != 1 {
		t.Errorf("plan = %+v, want the fake's output change", p)
	}
	f.plan(in, runner.PlanOptions{Destroy: true})
	f.plan(in, runner.PlanOptions{RefreshOnly: true})
	p = f.plan(in, runner.PlanOptions{})
	if out := f.apply(p); out["o"].Value != "v" {
		t.Errorf("outputs = %v", out)
	}
	if _, out, err := f.r.PlanApply(ctx, f.c, in); err != nil || out["o"].Value != "v" {
		t.Errorf("PlanApply = %v, %v", out, err)
	}
	if _, err := f.r.Outputs(ctx, f.c); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wd, "terraform.tfstate"), []byte(`{"resources":[{}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := f.r.Destroy(ctx, f.c, in); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.Plan(ctx, f.c, nil, runner.PlanOptions{Destroy: true, RefreshOnly: true}); err == nil {
		t.Error("a destroy refresh-only plan was accepted")
	}

	// One process per command: nothing asks the tool for its version; show
	// -json runs only when the caller asks for what the stream lacks
	// (planned output values here); an apply's outputs come from its stream.
	cmds := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(logs, "argv.log"))), "\n")
	want := []string{
		"init -input=false -no-color",
		"plan -json -input=false -out=" + planPath,
		"show -json -no-color " + planPath,
		"plan -json -input=false -out=" + planPath + " -destroy",
		"plan -json -input=false -out=" + planPath + " -refresh-only",
		"plan -json -input=false -out=" + planPath,
		"apply -json -input=false -auto-approve " + planPath,
		"apply -json -input=false -auto-approve",
		"output -json -no-color",
		"destroy -json -input=false -auto-approve",
	}
	if strings.Join(cmds, "\n") != strings.Join(want, "\n") {
		t.Errorf("commands:\n%s\nwant:\n%s", strings.Join(cmds, "\n"), strings.Join(want, "\n"))
	}

	env := readFile(t, filepath.Join(logs, "env-init.log"))
	for _, kv := range []string{
		"TF_CLI_CONFIG_FILE=" + bin.CLIConfig,
		"TF_PLUGIN_CACHE_DIR=" + filepath.Join(f.data, "plugin-cache"),
		"TF_PLUGIN_CACHE_MAY_BREAK_DEPENDENCY_LOCK_FILE=true",
		"TF_IN_AUTOMATION=1",
		"TF_INPUT=0",
		"CHECKPOINT_DISABLE=1",
	} {
		if !strings.Contains(env, kv+"\n") {
			t.Errorf("tool environment lacks %s:\n%s", kv, env)
		}
	}
	if strings.Contains(env, "TF_VAR_leak") || strings.Contains(env, "/missing/rc") || strings.Contains(env, "KNIT_") {
		t.Errorf("the caller's TF_VAR_/TF_CLI_CONFIG_FILE/KNIT_ reached the tool:\n%s", env)
	}
	// The sensitive input reaches plan, apply (no saved plan) and destroy
	// through the environment only; the saved plan's apply needs none.
	for cmd, want := range map[string]bool{"plan": true, "destroy": true, "output": false} {
		if got := strings.Contains(readFile(t, filepath.Join(logs, "env-"+cmd+".log")), "TF_VAR_password=SECRET-xyz\n"); got != want {
			t.Errorf("%s got TF_VAR_password: %v, want %v", cmd, got, want)
		}
	}
	if strings.Contains(readFile(t, filepath.Join(logs, "argv.log")), "SECRET") {
		t.Error("the sensitive input is on a command line")
	}
	if strings.Contains(readFile(t, f.moduleFile("knit.auto.tfvars.json")), "SECRET") {
		t.Error("the sensitive input is in the inputs file")
	}
	if strings.Contains(f.log.String(), "warning") {
		t.Errorf("OpenTofu warned:\n%s", f.log)
	}
}

// TestTerraformWarnsWhichFilesHoldSecrets: Terraform cannot encrypt, so a
// component with secrets gets one line naming the files that hold them.
func TestTerraformWarnsWhichFilesHoldSecrets(t *testing.T) {
	bin, _ := fakeTool(t, fakeCommands)
	for _, tc := range []struct {
		name      string
		sensitive map[string]bool
		output    bool
		warns     bool
	}{
		{"sensitive input", map[string]bool{"password": true}, false, true},
		{"sensitive output", nil, true, true},
		{"no secrets", nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def := localModule("mod")
			if tc.output {
				def.Outputs = []spec.Output{{Name: "token", Sensitive: true}}
			}
			f := newFixture(t, bin, map[string]string{"mod/main.tf": "# fake"}, def)
			f.r = terraform.New(bin, terraform.Options{DataDir: f.data, ToolVersion: "Terraform v1.5.7", EncryptionKey: make([]byte, 32)})
			f.c.Sensitive = tc.sensitive
			f.plan(runner.Inputs{"password": "p"}, runner.PlanOptions{})
			log := f.log.String()
			state, plan := filepath.Join(f.c.WorkDir, "terraform.tfstate"), filepath.Join(f.c.WorkDir, "plan.tfplan")
			warned := strings.Count(log, "knit: warning:") == 1 && strings.Contains(log, state) && strings.Contains(log, plan)
			if warned != tc.warns {
				t.Errorf("warned = %v, want %v; log:\n%s", warned, tc.warns, log)
			}
			if env := readFile(t, filepath.Join(filepath.Dir(bin.Path), "env-plan.log")); strings.Contains(env, "TF_ENCRYPTION") {
				t.Error("Terraform was given TF_ENCRYPTION")
			}
		})
	}
}

// TestCancelKillsAfterGracePeriod: a tool that ignores SIGINT gets it, and
// is killed once the grace period is over, with every process it started
// (its process group): nothing it left behind keeps running.
func TestCancelKillsAfterGracePeriod(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("go not on PATH: cannot build the stub tool")
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
	pid, err := strconv.Atoi(readFile(t, filepath.Join(dir, "child.pid")))
	if err != nil {
		t.Fatal(err)
	}
	// The group's SIGKILL may land a moment after the tool's exit returned.
	deadline := time.Now().Add(30 * time.Second)
	for running(pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if running(pid) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Error("the tool's child, which ignores SIGINT, was left running")
	}
}

// running reports whether pid is a live process (not gone, not a zombie
// waiting for a parent that no longer reaps).
func running(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	// The state follows the command name in parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestAPlanAfterItsFingerprintReadsTheModuleOnce: the engine fingerprints a
// component and then plans (or destroys) it with the same inputs; the plan uses the
// layout the fingerprint read instead of reading the module again, once,
// and only for the same inputs.
func TestAPlanAfterItsFingerprintReadsTheModuleOnce(t *testing.T) {
	t.Parallel()
	bin, _ := fakeTool(t, fakeCommands)
	f := newFixture(t, bin, map[string]string{"mod/main.tf": "# fake"}, localModule("mod"))
	ctx := context.Background()
	in := runner.Inputs{"n": 1}
	reads := func() int64 { return terraform.LayoutCount(f.r) }
	if _, err := f.r.Fingerprint(ctx, f.c, in); err != nil {
		t.Fatal(err)
	}
	f.plan(in, runner.PlanOptions{})
	if n := reads(); n != 1 {
		t.Errorf("fingerprint then plan read the module %d times, want 1", n)
	}
	f.plan(in, runner.PlanOptions{})
	if n := reads(); n != 2 {
		t.Errorf("a second plan read the module %d times in all, want 2: the fingerprint's layout serves once", n)
	}
	if _, err := f.r.Fingerprint(ctx, f.c, in); err != nil {
		t.Fatal(err)
	}
	f.plan(runner.Inputs{"n": 2}, runner.PlanOptions{})
	if n := reads(); n != 4 {
		t.Errorf("a plan with other inputs than its fingerprint's: %d reads in all, want 4", n)
	}
	if got := readFile(t, filepath.Join(f.c.WorkDir, "module", "knit.auto.tfvars.json")); !strings.Contains(got, `"n": 2`) {
		t.Errorf("the plan ran with the fingerprint's inputs: %s", got)
	}
	// A destroy after its fingerprint (a teardown) likewise.
	if _, err := f.r.Fingerprint(ctx, f.c, in); err != nil {
		t.Fatal(err)
	}
	if err := f.r.Destroy(ctx, f.c, in); err != nil {
		t.Fatal(err)
	}
	if n := reads(); n != 5 {
		t.Errorf("fingerprint then destroy: %d reads in all, want 5", n)
	}
}
