package script_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/script"
	"knit.dev/knit/internal/spec"
)

// testKey stands for the subkey knit derives from its key file.
var testKey = bytes.Repeat([]byte{7}, 32)

func component(t *testing.T, s spec.Script, outputs ...spec.Output) (runner.Component, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	def := &spec.Component{Name: "job", Type: spec.TypeScript, Script: &s, Outputs: outputs}
	return runner.Component{Env: "t/e", Def: def, WorkDir: t.TempDir(), Log: &log}, &log
}

func TestApplyPassesInputsAndReadsOutputs(t *testing.T) {
	c, log := component(t, spec.Script{
		// Inputs arrive as JSON on stdin and as KNIT_VAR_*; outputs are the JSON printed on stdout.
		Apply: `echo "stdin: $(cat)" >&2; printf '{"greeting": "hello %s", "n": %s, "token": "t0k3n"}' "$KNIT_VAR_WHO" "$KNIT_VAR_COUNT"`,
	}, spec.Output{Name: "token", Sensitive: true})
	r := script.New(script.Options{Key: testKey})
	ctx := context.Background()
	in := runner.Inputs{"who": "world", "count": 3, "tags": []any{"a"}}
	p, err := r.Plan(ctx, c, in, runner.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.HasChanges() || p.Add != 1 {
		t.Fatalf("plan without a plan command: %+v", p)
	}
	outs, err := r.Apply(ctx, c, p)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if outs["greeting"].Value != "hello world" || outs["n"].Value != float64(3) {
		t.Errorf("outputs %+v", outs)
	}
	if !outs["token"].Sensitive || outs["greeting"].Sensitive {
		t.Errorf("sensitivity %+v", outs)
	}
	if !strings.Contains(log.String(), `stdin: {"count":3,"tags":["a"],"who":"world"}`) {
		t.Errorf("inputs not on stdin as JSON:\n%s", log)
	}
	again, err := r.Outputs(ctx, c)
	if err != nil || again["greeting"].Value != "hello world" {
		t.Errorf("stored outputs %+v %v", again, err)
	}
}

func TestPlanCommandExitCodes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		plan    string
		changes bool
		fails   bool
	}{{"exit 0", false, false}, {"exit 2", true, false}, {"exit 1", false, true}} {
		c, _ := component(t, spec.Script{Apply: "true", Plan: "[ ! -e applied ] || { " + tc.plan + "; }"})
		r := script.New(script.Options{})
		first, err := r.Plan(ctx, c, runner.Inputs{}, runner.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Apply(ctx, c, first); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(c.WorkDir, "applied"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := r.Plan(ctx, c, runner.Inputs{}, runner.PlanOptions{})
		if (err != nil) != tc.fails {
			t.Errorf("%s: err %v", tc.plan, err)
			continue
		}
		if err == nil && p.HasChanges() != tc.changes {
			t.Errorf("%s: changes %v", tc.plan, p.HasChanges())
		}
	}
}

// Before its first apply a script is created, whatever its plan command
// says: "no changes" from a command that cannot know must not leave it
// unapplied and its consumers without its outputs. A failing plan
// command still fails the plan.
func TestAScriptNeverAppliedIsCreatedWhateverItsPlanSays(t *testing.T) {
	ctx := context.Background()
	c, _ := component(t, spec.Script{Apply: `echo '{"name": "n1"}'`, Plan: "exit 0"}, spec.Output{Name: "name"})
	r := script.New(script.Options{})
	p, err := r.Plan(ctx, c, runner.Inputs{}, runner.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Add != 1 || p.Resources[0].Action != runner.ActionCreate || len(p.OutputChanges) != 1 {
		t.Fatalf("first plan: %+v", p)
	}
	if _, err := r.Apply(ctx, c, p); err != nil {
		t.Fatal(err)
	}
	if p, err = r.Plan(ctx, c, runner.Inputs{}, runner.PlanOptions{}); err != nil || p.HasChanges() {
		t.Errorf("after the apply, plan says %+v, %v; want its plan command's no changes", p, err)
	}
	c2, _ := component(t, spec.Script{Apply: "true", Plan: "exit 1"})
	if _, err := r.Plan(ctx, c2, runner.Inputs{}, runner.PlanOptions{}); err == nil {
		t.Error("a failing plan command passed the first plan")
	}
}

// A script without a plan command is judged by its commands and inputs:
// created first, then unchanged until they change. Its plans say that
// reality was not checked.
func TestAScriptWithoutPlanIsJudgedByItsInputs(t *testing.T) {
	ctx := context.Background()
	c, _ := component(t, spec.Script{Apply: `echo '{}'`})
	r := script.New(script.Options{})
	in := runner.Inputs{"size": 1}
	plan := func(in runner.Inputs) *runner.Plan {
		t.Helper()
		p, err := r.Plan(ctx, c, in, runner.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := plan(in)
	if p.Add != 1 {
		t.Fatalf("first plan: %+v", p)
	}
	if _, err := r.Apply(ctx, c, p); err != nil {
		t.Fatal(err)
	}
	if p := plan(in); p.HasChanges() || !p.Unchecked {
		t.Errorf("same inputs: %+v; want no changes, unchecked", p)
	}
	if p := plan(runner.Inputs{"size": 2}); p.Change != 1 || p.Resources[0].Action != runner.ActionUpdate {
		t.Errorf("other inputs: %+v; want an update", p)
	}
	if err := r.Destroy(ctx, c, in); err != nil {
		t.Fatal(err)
	}
	if p := plan(in); p.Add != 1 {
		t.Errorf("after destroy: %+v; want a create", p)
	}
}

// TestAScriptWithoutPlanFollowsTheStoresApplied: on replicas, this host's
// work dir may hold an older apply's fingerprint than the store's. The
// plan compares with the store's (Component.Applied): a rollback to what
// this host applied last is a change when another replica applied since,
// and a host that never applied it sees an update, not a first create.
func TestAScriptWithoutPlanFollowsTheStoresApplied(t *testing.T) {
	ctx := context.Background()
	r := script.New(script.Options{})
	c, _ := component(t, spec.Script{Apply: `echo '{}'`})
	v1, v2 := runner.Inputs{"v": 1}, runner.Inputs{"v": 2}
	p, err := r.Plan(ctx, c, v1, runner.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Apply(ctx, c, p); err != nil { // this host applied v1
		t.Fatal(err)
	}
	fp2, err := r.Fingerprint(ctx, c, v2)
	if err != nil {
		t.Fatal(err)
	}
	c.Applied = fp2 // then another replica applied v2
	if p, err := r.Plan(ctx, c, v1, runner.PlanOptions{}); err != nil || p.Change != 1 || !p.Unchecked {
		t.Errorf("back to v1 after another host applied v2: %+v, %v; want an update", p, err)
	}
	if p, err := r.Plan(ctx, c, v2, runner.PlanOptions{}); err != nil || p.HasChanges() {
		t.Errorf("v2 as the store says applied: %+v, %v; want no changes", p, err)
	}
	fresh, _ := component(t, spec.Script{Apply: `echo '{}'`}) // a host that never ran it
	fresh.Applied = fp2
	if p, err := r.Plan(ctx, fresh, v1, runner.PlanOptions{}); err != nil || p.Change != 1 || p.Add != 0 {
		t.Errorf("a host that never applied it: %+v, %v; want an update", p, err)
	}
}

func TestApplyAppliesExactlyThePlannedInputs(t *testing.T) {
	c, _ := component(t, spec.Script{Apply: `cat > applied.json`})
	r := script.New(script.Options{})
	ctx := context.Background()
	p, err := r.Plan(ctx, c, runner.Inputs{"v": 1}, runner.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.File, []byte(`{"v":2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Apply(ctx, c, p); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("a tampered plan was applied: %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.WorkDir, "applied.json")); err == nil {
		t.Error("apply command ran")
	}
}

func TestDestroyRunsDestroyCommandAndForgetsOutputs(t *testing.T) {
	c, _ := component(t, spec.Script{Apply: `echo '{"x": 1}'`, Destroy: `touch destroyed`})
	r := script.New(script.Options{})
	ctx := context.Background()
	p, _ := r.Plan(ctx, c, runner.Inputs{}, runner.PlanOptions{})
	if _, err := r.Apply(ctx, c, p); err != nil {
		t.Fatal(err)
	}
	dp, err := r.Plan(ctx, c, runner.Inputs{}, runner.PlanOptions{Destroy: true})
	if err != nil || dp.Destroy != 1 {
		t.Fatalf("destroy plan %+v %v", dp, err)
	}
	if _, err := r.Apply(ctx, c, dp); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(c.WorkDir, "destroyed")); err != nil {
		t.Error("destroy command did not run")
	}
	if outs, _ := r.Outputs(ctx, c); len(outs) != 0 {
		t.Errorf("outputs after destroy: %v", outs)
	}
}

func TestBadOutputIsAClearError(t *testing.T) {
	c, _ := component(t, spec.Script{Apply: `echo not json`})
	r := script.New(script.Options{})
	p, _ := r.Plan(context.Background(), c, runner.Inputs{}, runner.PlanOptions{})
	if _, err := r.Apply(context.Background(), c, p); err == nil || !strings.Contains(err.Error(), "JSON object") {
		t.Errorf("err = %v", err)
	}
}

func TestFingerprintFollowsCommandsAndInputs(t *testing.T) {
	r := script.New(script.Options{})
	ctx := context.Background()
	c1, _ := component(t, spec.Script{Apply: "a"})
	c2, _ := component(t, spec.Script{Apply: "b"})
	f1, _ := r.Fingerprint(ctx, c1, runner.Inputs{"x": 1})
	f1again, _ := r.Fingerprint(ctx, c1, runner.Inputs{"x": 1})
	f2, _ := r.Fingerprint(ctx, c2, runner.Inputs{"x": 1})
	f3, _ := r.Fingerprint(ctx, c1, runner.Inputs{"x": 2})
	if f1 != f1again || f1 == f2 || f1 == f3 {
		t.Errorf("fingerprints %s %s %s %s", f1, f1again, f2, f3)
	}
}

func TestCommandsSeeTheToolEnvironmentAndTheirInputsOnly(t *testing.T) {
	// knit's own settings and secrets, a stale input variable inherited from
	// knit's environment, and a variable nobody allowed.
	t.Setenv("KNIT_TOKEN", "t0k3n")
	t.Setenv("KNIT_DB", "/secret/knit.db")
	t.Setenv("KNIT_VAR_STALE", "inherited")
	t.Setenv("UNLISTED", "x")
	t.Setenv("ALLOWED_BY_USER", "y")
	c, log := component(t, spec.Script{Apply: `env > env.txt; echo '{}'`})
	r := script.New(script.Options{ExtraEnv: []string{"ALLOWED_BY_USER", "KNIT_TOKEN"}})
	ctx := context.Background()
	p, err := r.Plan(ctx, c, runner.Inputs{"who": "world", "count": 3}, runner.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Apply(ctx, c, p); err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	b, err := os.ReadFile(filepath.Join(c.WorkDir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(string(b), "\n")
	for _, want := range []string{"PATH=" + os.Getenv("PATH"), "KNIT_VAR_WHO=world", "KNIT_VAR_COUNT=3", "ALLOWED_BY_USER=y"} {
		if !slices.Contains(env, want) {
			t.Errorf("the command does not see %s", want)
		}
	}
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if name == "UNLISTED" || strings.HasPrefix(name, "KNIT_") && name != "KNIT_VAR_WHO" && name != "KNIT_VAR_COUNT" {
			t.Errorf("the command sees %s", kv)
		}
	}
}

func TestApplyOutputsNeverReachTheLog(t *testing.T) {
	c, log := component(t, spec.Script{
		Plan:  `echo checking the database; exit 2`,
		Apply: `echo creating the database >&2; echo '{"password": "s3cr3t-pw"}'`,
	}, spec.Output{Name: "password", Sensitive: true})
	r := script.New(script.Options{Key: testKey})
	ctx := context.Background()
	p, err := r.Plan(ctx, c, runner.Inputs{}, runner.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := r.Apply(ctx, c, p)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if outs["password"].Value != "s3cr3t-pw" {
		t.Errorf("outputs %+v", outs)
	}
	if strings.Contains(log.String(), "s3cr3t") {
		t.Errorf("apply's outputs are in the log:\n%s", log)
	}
	// What commands say to the user still is: stderr, and plan's stdout.
	for _, want := range []string{"creating the database", "checking the database"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// TestAnApplyFloodingStdoutFailsWithAHint: stdout is for outputs; a script
// printing its progress there fails with a hint, its stdout bounded in
// knit's memory.
func TestAnApplyFloodingStdoutFailsWithAHint(t *testing.T) {
	c, _ := component(t, spec.Script{Apply: `seq 1 5000000`})
	r := script.New(script.Options{})
	ctx := context.Background()
	p, err := r.Plan(ctx, c, runner.Inputs{}, runner.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Apply(ctx, c, p)
	if err == nil || !strings.Contains(err.Error(), "print progress on stderr") {
		t.Fatalf("apply: %v", err)
	}
}

// pem is a 3-line sensitive value, as a private key is.
const pem = "-----BEGIN TEST KEY-----\nc2VjcmV0LWtleS1tYXRlcmlhbA==\n-----END TEST KEY-----"

// Sensitive inputs (from upstream sensitive outputs) and sensitive outputs
// reach the commands, and are kept between plan, apply and outputs, but no
// file in the work dir holds them, nor any line of them, in clear.
func TestSecretsAreNeverInTheWorkDirInClear(t *testing.T) {
	c, log := component(t, spec.Script{
		Apply: `printf '%s' "$KNIT_VAR_KEY" > "$KNIT_VAR_OUT"; printf '{"token": "tok-%s"}' "$(printf '%s' "$KNIT_VAR_KEY" | wc -l | tr -d ' ')"`,
	}, spec.Output{Name: "token", Sensitive: true})
	c.Sensitive = map[string]bool{"key": true}
	seen := filepath.Join(t.TempDir(), "seen") // where the command shows what it got, outside the work dir
	r := script.New(script.Options{Key: testKey})
	ctx := context.Background()
	in := runner.Inputs{"key": pem, "out": seen}
	fp, err := r.Fingerprint(ctx, c, in)
	if err != nil {
		t.Fatal(err)
	}
	p, err := r.Plan(ctx, c, in, runner.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outs, err := r.Apply(ctx, c, p)
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if got, _ := os.ReadFile(seen); string(got) != pem {
		t.Errorf("the command got %q, want the planned PEM", got)
	}
	if outs["token"].Value != "tok-2" {
		t.Errorf("outputs %+v", outs)
	}
	if again, err := script.New(script.Options{Key: testKey}).Outputs(ctx, c); err != nil || again["token"].Value != "tok-2" {
		t.Errorf("recorded outputs %+v, %v", again, err)
	}
	secrets := append(strings.Split(pem, "\n"), "tok-2")
	entries, _ := os.ReadDir(c.WorkDir)
	if len(entries) < 2 {
		t.Fatalf("work dir holds %d files; want the plan and the outputs", len(entries))
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(c.WorkDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range append(secrets, fp) {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds %q in clear", e.Name(), s)
			}
		}
	}
	// The fingerprint is keyed: equal for equal inputs, telling nothing
	// without the key.
	other, _ := script.New(script.Options{Key: bytes.Repeat([]byte{8}, 32)}).Fingerprint(ctx, c, in)
	if again, _ := r.Fingerprint(ctx, c, in); again != fp || other == fp {
		t.Errorf("fingerprints %s %s %s", fp, again, other)
	}
	// A sealed file moved to another component does not open there.
	moved := c
	moved.Def = &spec.Component{Name: "other", Type: spec.TypeScript, Script: c.Def.Script, Outputs: c.Def.Outputs}
	if _, err := r.Apply(ctx, moved, p); err == nil || !strings.Contains(err.Error(), "cannot decrypt") {
		t.Errorf("a plan of another component was applied: %v", err)
	}
}

// Without a key, a component that handles secrets is refused before any
// command runs; one that does not keeps plain files as before.
func TestSecretsWithoutAKeyAreRefused(t *testing.T) {
	ctx := context.Background()
	c, _ := component(t, spec.Script{Plan: "touch planned; exit 2", Apply: "echo '{}'"}, spec.Output{Name: "pw", Sensitive: true})
	if _, err := script.New(script.Options{}).Plan(ctx, c, runner.Inputs{}, runner.PlanOptions{}); err == nil || !strings.Contains(err.Error(), "no key") {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(c.WorkDir, "planned")); err == nil {
		t.Error("the plan command ran")
	}
}

// TestAFailureLeadsWithTheScriptsOwnWords: a failed command's error starts
// with the first line its output begins with "error", else its last line;
// the log keeps everything.
func TestAFailureLeadsWithTheScriptsOwnWords(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ name, cmd, want string }{
		{"first error line", `echo "creating bucket"; echo "Error: bucket quota exceeded" >&2; echo "error: second" >&2; exit 1`, "Error: bucket quota exceeded"},
		{"last line", `echo "step 1" >&2; echo "cannot reach db.internal:5432" >&2; exit 3`, "cannot reach db.internal:5432"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, log := component(t, spec.Script{Apply: tc.cmd})
			r := script.New(script.Options{})
			p, err := r.Plan(ctx, c, runner.Inputs{}, runner.PlanOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Apply(ctx, c, p)
			if err == nil {
				t.Fatal("a failing apply command succeeded")
			}
			first, rest, _ := strings.Cut(err.Error(), "\n")
			if first != "apply command: "+tc.want || !strings.Contains(rest, "exit status") {
				t.Errorf("error = %q, want the first line %q then the exit status", err, "apply command: "+tc.want)
			}
			if !strings.Contains(log.String(), "error: second") && tc.name == "first error line" {
				t.Errorf("the log lost output:\n%s", log)
			}
		})
	}
}
