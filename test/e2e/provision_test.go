package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/keyfile"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/testtools"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// node is a module standing in for real infrastructure: a terraform_data
// resource whose local-exec provisioners append "start/end/destroy NAME TIME"
// to a shared event log, with an optional delay standing in for cloud latency.
const nodeModule = `
variable "name" { type = string }
variable "events" { type = string }
variable "delay" {
  type    = number
  default = 0
}
variable "fail" {
  type    = bool
  default = false
}
resource "terraform_data" "this" {
  input = { name = var.name, events = var.events }
  provisioner "local-exec" {
    command = "echo start ${var.name} $(date +%s%N) >> ${var.events}; sleep ${var.delay}; ${var.fail ? "echo failing on purpose >&2; exit 3" : "true"}; echo end ${var.name} $(date +%s%N) >> ${var.events}"
  }
  provisioner "local-exec" {
    when    = destroy
    command = "echo destroy ${self.input.name} $(date +%s%N) >> ${self.input.events}"
  }
}
output "id" { value = "${var.name}-${terraform_data.this.id}" }
`

// event is one line of the event log.
type event struct {
	kind, name string
	at         int64
}

func (w *world) events() []event {
	w.t.Helper()
	data, err := os.ReadFile(w.path("events.log"))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	var out []event
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		at, _ := strconv.ParseInt(f[2], 10, 64)
		out = append(out, event{f[0], f[1], at})
	}
	return out
}

func (w *world) eventTimes(kind string) map[string]int64 {
	m := map[string]int64{}
	for _, e := range w.events() {
		if e.kind == kind {
			m[e.name] = e.at
		}
	}
	return m
}

// envFile renders an environment whose components all use ./modules/node
// unless extra YAML says otherwise; comps are YAML component bodies.
func envFile(name string, comps ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: knit.dev/v1\nkind: Environment\nmetadata: {name: %s}\nspec:\n  teamName: qa\n  envName: %s\n  autoApprove: true\n  components:\n", name, name)
	for _, c := range comps {
		b.WriteString(c)
	}
	return b.String()
}

// node renders one component using the node module.
func node(name, extra string) string {
	return fmt.Sprintf(`    - name: %[1]s
      type: terraform
      module: {source: ./modules/node}
      outputs: [{name: id}]
      variables:
        - {name: name, value: %[1]s}
        - {name: events, value: EVENTS}
%[2]s`, name, extra)
}

func (w *world) writeEnv(doc string) {
	w.write(map[string]string{"env.yaml": strings.ReplaceAll(doc, "EVENTS", w.path("events.log"))})
}

func TestDiamondAppliesInOrderInParallelWithTypedInputs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{
		"modules/node/main.tf": nodeModule,
		"modules/lists/main.tf": nodeModule + `
output "zones" { value = ["${var.name}-z0", "${var.name}-z1", "${var.name}-z2"] }
`,
		"modules/sink/main.tf": nodeModule + `
variable "url" { type = string }
variable "zone" { type = string }
variable "replicas" { type = any }
variable "labels" { type = any }
variable "ports" { type = any }
output "seen" { value = "${var.url}|${var.zone}" }
output "encoded" { value = jsonencode({ replicas = var.replicas, labels = var.labels, ports = var.ports }) }
`,
	})
	w.writeEnv(envFile("diamond",
		node("a", ""),
		node("b", "        - {name: delay, value: 1}\n      dependsOn: [a]\n"),
		strings.Replace(node("c", "        - {name: delay, value: 1}\n      dependsOn: [a]\n      outputs: [{name: id}, {name: zones}]\n"), "./modules/node}\n      outputs: [{name: id}]", "./modules/lists}", 1),
		strings.Replace(node("d", `        - {name: url, valueFrom: b.id}
        - {name: zone, valueFrom: "c.zones[1]"}
        - {name: replicas, value: 2}
        - {name: labels, value: {tier: web}}
        - {name: ports, value: [80, 443]}
      outputs: [{name: seen}, {name: encoded}]
`), "./modules/node}\n      outputs: [{name: id}]", "./modules/sink}", 1),
	))
	w.ok("apply", "-f", "env.yaml", "--parallelism", "4")

	start, end := w.eventTimes("start"), w.eventTimes("end")
	for _, e := range [][2]string{{"a", "b"}, {"a", "c"}, {"b", "d"}, {"c", "d"}} {
		if start[e[1]] < end[e[0]] {
			t.Errorf("%s started before %s ended", e[1], e[0])
		}
	}
	if !(start["b"] < end["c"] && start["c"] < end["b"]) {
		t.Errorf("b [%d,%d] and c [%d,%d] did not overlap", start["b"], end["b"], start["c"], end["c"])
	}
	seen := strings.TrimSpace(w.ok("output", "qa/diamond", "d", "seen").stdout)
	if !strings.HasPrefix(seen, "b-") || !strings.HasSuffix(seen, "|c-z1") {
		t.Errorf("d saw %q, want b's id and c's zones[1]", seen)
	}
	enc := strings.TrimSpace(w.ok("output", "qa/diamond", "d", "encoded").stdout)
	if enc != `{"labels":{"tier":"web"},"ports":[80,443],"replicas":2}` {
		t.Errorf("typed inputs arrived as %s", enc)
	}
}

func TestFailureSkipsDependentsAndRerunCompletesOnlyWhatIsLeft(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/node/main.tf": nodeModule})
	doc := envFile("fail",
		node("a", ""),
		node("b", "        - {name: fail, value: FAIL}\n      dependsOn: [a]\n"),
		node("c", "      dependsOn: [b]\n"),
		node("other", ""),
	)
	w.writeEnv(strings.Replace(doc, "FAIL", "true", 1))
	r := w.knit("apply", "-f", "env.yaml", "-o", "json")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := componentStatuses(t, r.stdout)
	want := map[string]string{"a": "applied", "b": "failed", "c": "skipped", "other": "applied"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	if !strings.Contains(r.stderr, "failing on purpose") {
		t.Errorf("stderr lacks the failed tool's output:\n%s", r.stderr)
	}
	var status struct {
		Components []struct{ Name, Status string }
	}
	if err := json.Unmarshal([]byte(w.ok("status", "qa/fail", "-o", "json").stdout), &status); err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, c := range status.Components {
		states[c.Name] = c.Status
	}
	if states["b"] != "failed" || states["a"] != "applied" {
		t.Errorf("stored states %v: want b failed, a applied", states)
	}

	w.writeEnv(strings.Replace(doc, "FAIL", "false", 1))
	r = w.ok("apply", "-f", "env.yaml", "-o", "json")
	got = componentStatuses(t, r.stdout)
	want = map[string]string{"a": "up to date", "b": "applied", "c": "applied", "other": "up to date"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("re-run statuses %v, want %v", got, want)
	}
	starts := 0
	for _, e := range w.events() {
		if e.kind == "start" && e.name == "a" {
			starts++
		}
	}
	if starts != 1 {
		t.Errorf("a was provisioned %d times, want once", starts)
	}
}

func componentStatuses(t *testing.T, out string) map[string]string {
	t.Helper()
	var res struct {
		Components []struct{ Name, Status string }
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("bad JSON result: %v\n%s", err, out)
	}
	m := map[string]string{}
	for _, c := range res.Components {
		m[c.Name] = c.Status
	}
	return m
}

func TestReapplyOfUnchangedEnvironmentRunsNoTool(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// A tofu that counts its own invocations.
	w.write(map[string]string{
		"modules/node/main.tf": nodeModule,
		"bin/tofu":             fmt.Sprintf("#!/bin/sh\necho \"$1\" >> %s\nexec %s \"$@\"\n", w.path("calls.log"), tofuBin),
	})
	if err := os.Chmod(w.path("bin/tofu"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "KNIT_TF_BINARY="+w.path("bin/tofu"), "KNIT_TF_CLI_CONFIG="+filepath.Join(repo, ".tools", "tofurc"))
	var comps []string
	for i := 0; i < 10; i++ {
		extra := ""
		if i > 0 {
			extra = fmt.Sprintf("      dependsOn: [n%d]\n", (i-1)/2)
		}
		comps = append(comps, node(fmt.Sprintf("n%d", i), extra))
	}
	w.writeEnv(envFile("noop", comps...))
	w.ok("apply", "-f", "env.yaml")
	before := w.read("calls.log")
	r := w.ok("apply", "-f", "env.yaml", "-o", "json")
	for name, st := range componentStatuses(t, r.stdout) {
		if st != "up to date" {
			t.Errorf("%s: %s on re-apply", name, st)
		}
	}
	if after := w.read("calls.log"); after != before {
		t.Errorf("re-apply ran tofu: %q", strings.TrimPrefix(after, before))
	}
}

// startSlowApply starts `knit apply` in the background on first → slow →
// last, where slow's provisioner sleeps delay seconds, and returns once slow
// has started. stderr, if set, receives knit's stderr.
func (w *world) startSlowApply(env string, delay int, stderr io.Writer) *exec.Cmd {
	w.t.Helper()
	w.write(map[string]string{"modules/node/main.tf": nodeModule})
	w.writeEnv(envFile(env,
		node("first", ""),
		node("slow", fmt.Sprintf("        - {name: delay, value: %d}\n      dependsOn: [first]\n", delay)),
		node("last", "      dependsOn: [slow]\n"),
	))
	cmd := exec.Command(knitBin, "apply", "-f", "env.yaml")
	cmd.Dir, cmd.Env, cmd.Stderr = w.dir, w.env, stderr
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { _ = cmd.Process.Kill() })
	waitFor(w.t, 60*time.Second, func() bool { _, ok := w.eventTimes("start")["slow"]; return ok })
	return cmd
}

func TestKilledApplyResumesAndConcurrentApplyIsRefused(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cmd := w.startSlowApply("kill", 8, nil)

	r := w.knit("apply", "-f", "env.yaml")
	if r.code != 1 || !strings.Contains(r.stderr, "locked by run") || !strings.Contains(r.stderr, fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Errorf("concurrent apply: exit %d, stderr:\n%s", r.code, r.stderr)
	}

	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	r = w.ok("apply", "-f", "env.yaml", "-o", "json")
	for name, st := range componentStatuses(t, r.stdout) {
		if st != "applied" && st != "up to date" && st != "no changes" {
			t.Errorf("%s: %s after resume", name, st)
		}
	}
	hist := w.ok("history", "qa/kill", "-o", "json").stdout
	if !strings.Contains(hist, `"status": "interrupted"`) {
		t.Errorf("the killed run is not recorded as interrupted:\n%s", hist)
	}
	// No duplicated resources: each component's state holds exactly one.
	for _, c := range []string{"first", "slow", "last"} {
		if n := stateResources(t, w, "kill", c); n != 1 {
			t.Errorf("%s: %d resources in state, want 1", c, n)
		}
	}
}

func waitFor(t *testing.T, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s", limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stateResources counts the resources in a component's state, which knit
// keeps encrypted: OpenTofu reads it with knit's key.
func stateResources(t *testing.T, w *world, env, component string) int {
	t.Helper()
	master, err := keyfile.Load(w.dataDir)
	if err != nil {
		t.Fatal(err)
	}
	key := keyfile.Derive(master, adapters.StateKeyPurpose)
	wd := filepath.Join(w.dataDir, "work", "qa", env, component)
	file := filepath.Join(wd, "terraform.tfstate")
	if w.dsn() != "" { // on PostgreSQL the state is in the store (issue 29)
		data, _, err := w.openStore().TFState(t.Context(), "qa/"+env+"/"+component)
		if err != nil {
			t.Fatalf("%s's state in the store: %v", component, err)
		}
		file = filepath.Join(t.TempDir(), "terraform.tfstate")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if data, err := os.ReadFile(file); err != nil || !strings.Contains(string(data), `"encrypted_data"`) {
		t.Fatalf("%s's state is missing or not encrypted (%v)", component, err)
	}
	cmd := exec.Command(tofuBin, "state", "list", "-state="+file)
	cmd.Dir = filepath.Join(wd, "module")
	if w.dsn() != "" {
		cmd.Dir = filepath.Dir(file) // not the module's folder: its backend is knit's HTTP one
	}
	cmd.Env = append(append(os.Environ(), "TF_CLI_CONFIG_FILE="+filepath.Join(repo, ".tools", "tofurc")), terraform.EncryptionEnv(key)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tofu state list: %v\n%s", err, out)
	}
	return len(strings.Fields(string(out)))
}

func TestTeardownIsExactReverseAndHonoursDestroyProtection(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/node/main.tf": nodeModule})
	comps := []string{
		node("net", ""),
		node("db", "      dependsOn: [net]\n"),
		node("app", "      dependsOn: [db]\n"),
		node("web", "      dependsOn: [app]\n"),
	}
	w.writeEnv(envFile("down", comps...))
	w.ok("apply", "-f", "env.yaml")
	r := w.ok("teardown", "qa/down", "--auto-approve", "--parallelism", "4")
	var order []string
	for _, e := range w.events() {
		if e.kind == "destroy" {
			order = append(order, e.name)
		}
	}
	if strings.Join(order, ",") != "web,app,db,net" {
		t.Errorf("destroy order %v, want web,app,db,net\n%s", order, r.stdout)
	}
	status := w.ok("status", "qa/down").stdout
	if !strings.Contains(status, "torn-down") {
		t.Errorf("status after teardown:\n%s", status)
	}
	if hist := w.ok("history", "qa/down").stdout; !strings.Contains(hist, "apply") || !strings.Contains(hist, "teardown") {
		t.Errorf("history lost:\n%s", hist)
	}

	// Protect db: db and net stay, app and web go.
	comps[1] = node("db", "      dependsOn: [net]\n      destroyProtection: true\n")
	w.writeEnv(envFile("down", comps...))
	w.ok("apply", "-f", "env.yaml")
	_ = os.Remove(w.path("events.log"))
	r = w.knit("teardown", "-f", "env.yaml", "--auto-approve", "-o", "json")
	if r.code != 1 {
		t.Errorf("teardown with protection: exit %d, want 1", r.code)
	}
	got := componentStatuses(t, r.stdout)
	want := map[string]string{"app": "destroyed", "db": "refused", "net": "refused", "web": "destroyed"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	destroyed := w.eventTimes("destroy")
	if _, ok := destroyed["db"]; ok {
		t.Error("protected db was destroyed")
	}
	if _, ok := destroyed["net"]; ok {
		t.Error("net, which protected db needs, was destroyed")
	}
	if !strings.Contains(r.stdout, "destroyProtection") {
		t.Errorf("no clear message about destroyProtection:\n%s", r.stdout)
	}
	// Without --auto-approve and no terminal, teardown refuses and changes nothing.
	if r := w.knit("teardown", "qa/down"); r.code != 1 || !strings.Contains(r.stderr, "--auto-approve") {
		t.Errorf("teardown without confirmation: exit %d\n%s", r.code, r.stderr)
	}
}

func TestGitModuleAtTagAndVariablesFileAtBranch(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// A module repository: v1 says "one"; a later commit on main says "two".
	src := w.path("src/mod")
	w.write(map[string]string{"src/mod/main.tf": `
variable "greeting" { type = string }
variable "colour" { type = string }
output "version" { value = "one" }
output "said" { value = "${var.greeting} ${var.colour}" }
`})
	git(t, src, "init", "-q", "-b", "main")
	git(t, src, "add", ".")
	git(t, src, "commit", "-q", "-m", "v1")
	git(t, src, "tag", "v1")
	w.write(map[string]string{"src/mod/main.tf": strings.Replace(w.read("src/mod/main.tf"), `"one"`, `"two"`, 1)})
	git(t, src, "commit", "-q", "-am", "after v1")
	git(t, w.dir, "clone", "-q", "--bare", src, w.path("mod.git"))

	// A config repository: the branch "staging" has colour = "green", main has "red".
	cfg := w.path("src/cfg")
	w.write(map[string]string{"src/cfg/vars/app.tfvars": "greeting = \"hello\"\ncolour = \"red\"\n"})
	git(t, cfg, "init", "-q", "-b", "main")
	git(t, cfg, "add", ".")
	git(t, cfg, "commit", "-q", "-m", "red")
	git(t, cfg, "checkout", "-q", "-b", "staging")
	w.write(map[string]string{"src/cfg/vars/app.tfvars": "greeting = \"hello\"\ncolour = \"green\"\n"})
	git(t, cfg, "commit", "-q", "-am", "green")
	git(t, cfg, "checkout", "-q", "main")
	git(t, w.dir, "clone", "-q", "--bare", cfg, w.path("cfg.git"))

	w.writeEnv(envFile("git", fmt.Sprintf(`    - name: app
      type: terraform
      module: {source: "git::file://%s?ref=v1"}
      variablesFile: {source: "file://%s", path: vars/app.tfvars, ref: staging}
      outputs: [{name: version}, {name: said}]
`, w.path("mod.git"), w.path("cfg.git"))))
	w.ok("apply", "-f", "env.yaml")
	if v := strings.TrimSpace(w.ok("output", "qa/git", "app", "version").stdout); v != "one" {
		t.Errorf("module version %q, want the v1 tag's", v)
	}
	if v := strings.TrimSpace(w.ok("output", "qa/git", "app", "said").stdout); v != "hello green" {
		t.Errorf("variables %q, want the staging branch's", v)
	}
}

func TestSensitiveOutputsNeverAppearInPlainText(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	// The secret is computed by the module, so that it is in no source file
	// knit copies: any copy of it in the data dir is knit's doing.
	sum := sha256.Sum256([]byte("knit-e2e-seed"))
	secret := hex.EncodeToString(sum[:])
	w.write(map[string]string{
		"modules/secret/main.tf": `
resource "terraform_data" "s" { input = "x" }
output "password" {
  value     = sha256("knit-e2e-seed")
  sensitive = true
}
output "public" { value = "visible" }
`,
		// The consumer forgets to mark its variable sensitive and echoes it: knit still masks it.
		"modules/consumer/main.tf": `
variable "password" { type = string }
resource "terraform_data" "c" {
  input = "x"
  provisioner "local-exec" { command = "echo using password ${nonsensitive(var.password)}" }
}
`,
	})
	w.writeEnv(envFile("secret",
		`    - name: vault
      type: terraform
      module: {source: ./modules/secret}
      outputs: [{name: password, sensitive: true}, {name: public}]
    - name: app
      type: terraform
      module: {source: ./modules/consumer}
      variables: [{name: password, valueFrom: vault.password}]
`))
	var seen []string
	for _, args := range [][]string{
		{"apply", "-f", "env.yaml"},
		{"apply", "-f", "env.yaml", "--refresh", "-o", "json"},
		{"output", "qa/secret"},
		{"output", "qa/secret", "-o", "json"},
		{"output", "qa/secret", "vault", "password"},
		{"logs", "qa/secret", "app"},
		{"logs", "qa/secret", "vault"},
		{"status", "qa/secret", "-o", "json"},
		{"history", "qa/secret", "-o", "json"},
	} {
		r := w.ok(args...)
		seen = append(seen, r.stdout+r.stderr)
		if strings.Contains(r.stdout+r.stderr, secret) {
			t.Errorf("knit %s printed the secret", strings.Join(args, " "))
		}
	}
	if !strings.Contains(strings.Join(seen, ""), "visible") {
		t.Error("non-sensitive output not shown")
	}
	if v := strings.TrimSpace(w.ok("output", "qa/secret", "vault", "password", "--show-sensitive").stdout); v != secret {
		t.Errorf("--show-sensitive gave %q", v)
	}
	var dbFiles []string
	entries, _ := os.ReadDir(w.dataDir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "knit.db") {
			dbFiles = append(dbFiles, e.Name())
			data, _ := os.ReadFile(filepath.Join(w.dataDir, e.Name()))
			if strings.Contains(string(data), secret) {
				t.Errorf("%s holds the secret in plain text", e.Name())
			}
		}
	}
	sort.Strings(dbFiles)
	if len(dbFiles) == 0 && w.dsn() == "" {
		t.Error("no database files found to check")
	}
	// Nowhere in the data dir: state, saved plans, work dirs, logs, database.
	holding, checked := testtools.FilesHolding(t, w.dataDir, secret)
	for _, rel := range holding[secret] {
		t.Errorf("%s holds the secret in plain text", rel)
	}
	if checked < 10 {
		t.Errorf("only %d files checked", checked)
	}
}

func TestPlanOfNewEnvironmentPlansWithKnownUpstreamValues(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"modules/node/main.tf": nodeModule + `
output "region" { value = "eu-${var.name}" }
`})
	// base.region is known at plan time; base.id (a resource ID) only after apply.
	w.writeEnv(envFile("fresh", `    - name: base
      type: terraform
      module: {source: ./modules/node}
      outputs: [{name: id}, {name: region}]
      variables: [{name: name, value: base}, {name: events, value: EVENTS}]
    - name: known
      type: terraform
      module: {source: ./modules/node}
      variables: [{name: name, valueFrom: base.region}, {name: events, value: EVENTS}]
    - name: later
      type: terraform
      module: {source: ./modules/node}
      variables: [{name: name, valueFrom: base.id}, {name: events, value: EVENTS}]
`))
	r := w.knit("plan", "-f", "env.yaml", "--detailed-exitcode", "-o", "json")
	if r.code != 2 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	got := componentStatuses(t, r.stdout)
	if got["base"] != "planned" || got["known"] != "planned" || got["later"] != "known after apply" {
		t.Errorf("statuses %v", got)
	}
	if _, err := os.Stat(w.path("events.log")); err == nil {
		t.Error("plan ran a provisioner")
	}
}
