package tfstate_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/postgres"
	"knit.dev/knit/internal/testtools"
	"knit.dev/knit/internal/testtools/pgtest"
	"knit.dev/knit/internal/tfstate"
)

const (
	toolVersion = "OpenTofu v1.12.6"
	secret      = "SECRET-shared-state-7f3a"
)

// secretModule keeps a sensitive input in its state and outputs it.
var secretModule = map[string]string{
	"mod/main.tf": `
variable "password" {
  type      = string
  sensitive = true
}
variable "n" { type = number }
resource "terraform_data" "db" { input = { password = var.password, n = var.n } }
output "password" {
  value     = terraform_data.db.output.password
  sensitive = true
}
output "n" { value = terraform_data.db.output.n }
`,
}

var key = bytes.Repeat([]byte{9}, 32)

// replica is one knit process's runner: a data dir of its own, its own
// state server, and a store on the shared database.
type replica struct {
	data string
	srv  *tfstate.Server
	r    *terraform.Runner
	c    runner.Component
	log  *testtools.Log
	st   store.Store
}

func newReplica(t *testing.T, st store.Store, env *spec.Environment) *replica {
	t.Helper()
	srv, err := tfstate.Start(st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if _, err := st.AcquireLock(t.Context(), store.Lock{Env: env.ID(), RunID: replicaRun}, time.Hour, func(store.Lock) bool { return true }); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	log := &testtools.Log{}
	def := env.Spec.Components[0]
	return &replica{data: data, srv: srv, log: log, st: st,
		r: terraform.New(testtools.Tofu(t), terraform.Options{DataDir: data, ToolVersion: toolVersion,
			EncryptionKey: key, States: srv}),
		c: runner.Component{Env: env.ID(), Spec: env, Def: def, WorkDir: filepath.Join(data, "work", def.Name),
			Log: log, Sensitive: map[string]bool{"password": true}, Run: replicaRun},
	}
}

// replicaRun is the run a replica's component works for, holding the
// environment's lock (holdEnv) unless a test says otherwise.
const replicaRun = "run-replicas"

func environment(t *testing.T, files map[string]string) *spec.Environment {
	envDir := t.TempDir()
	testtools.WriteFiles(t, envDir, files)
	def := &spec.Component{Name: "db", Type: spec.TypeTerraform, Module: &spec.Module{Source: "./mod"}}
	return &spec.Environment{Dir: envDir, File: filepath.Join(envDir, "env.yaml"),
		Spec: spec.EnvSpec{TeamName: "team", EnvName: "prod", Components: []*spec.Component{def}}}
}

func openPG(t *testing.T, dsn string) store.Store {
	t.Helper()
	st, err := postgres.Open(t.Context(), dsn, key)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestStateAcrossReplicas: two knit processes (data dirs, state servers
// and store connections of their own) on one PostgreSQL database. A plan
// saved on A is applied on B, which never had the work dir, from the same
// bytes; the state B wrote is the one A reads (A's next plan shows no
// changes), and A's work dir, deleted, is rebuilt. The secret that flows
// into state is nowhere in clear: not in the database dump, not in either
// data dir; neither are the servers' passwords.
func TestStateAcrossReplicas(t *testing.T) {
	pg := pgtest.Start(t)
	dsn := pg.DB(t)
	env := environment(t, secretModule)
	a := newReplica(t, openPG(t, dsn), env)
	b := newReplica(t, openPG(t, dsn), env)
	ctx := context.Background()
	in := runner.Inputs{"password": secret, "n": 1}

	p, err := a.r.Plan(ctx, a.c, in, runner.PlanOptions{})
	if err != nil {
		t.Fatalf("plan on A: %v\n%s", err, a.log)
	}
	planBytes, err := os.ReadFile(p.File)
	if err != nil {
		t.Fatal(err)
	}
	// The plan travels as bytes (the engine keeps them in the store).
	onB := filepath.Join(b.data, "approved.tfplan")
	if err := os.WriteFile(onB, planBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	outs, err := b.r.Apply(ctx, b.c, &runner.Plan{File: onB, Checksum: p.Checksum})
	if err != nil {
		t.Fatalf("apply on B: %v\n%s", err, b.log)
	}
	if outs["password"].Value != secret || outs["n"].Value != float64(1) {
		t.Errorf("outputs on B = %+v", outs)
	}
	if err := os.RemoveAll(a.c.WorkDir); err != nil { // a cache: rebuilt from the source and the store
		t.Fatal(err)
	}
	again, err := a.r.Plan(ctx, a.c, in, runner.PlanOptions{})
	if err != nil {
		t.Fatalf("plan on A after B's apply: %v\n%s", err, a.log)
	}
	if again.HasChanges() {
		t.Errorf("A does not see the state B wrote: plan %+v", again)
	}
	if outs, err := a.r.Outputs(ctx, a.c); err != nil || outs["password"].Value != secret {
		t.Errorf("outputs on A = %+v, %v", outs, err)
	}
	if _, err := os.Stat(filepath.Join(a.c.WorkDir, "terraform.tfstate")); !os.IsNotExist(err) {
		t.Errorf("a local state file exists in A's work dir: %v", err)
	}

	dump := pg.Dump(t, pgtest.DBName(t, dsn))
	pass := a.srv.Grant("team/prod/db", replicaRun, true)["TF_HTTP_PASSWORD"]
	for _, s := range []string{secret, pass} {
		if bytes.Contains(dump, []byte(s)) || bytes.Contains(dump, []byte(hex.EncodeToString([]byte(s)))) {
			t.Errorf("the database dump holds %q", s)
		}
		for _, dir := range []string{a.data, b.data} {
			holding, _ := testtools.FilesHolding(t, dir, s)
			for _, rel := range holding[s] {
				t.Errorf("%s holds %q", filepath.Join(dir, rel), s)
			}
		}
	}
	if !strings.Contains(string(dump), "tf_states") {
		t.Errorf("the dump has no tf_states table")
	}
	if n, err := a.st.CountTFStates(ctx); err != nil || n != 1 {
		t.Errorf("states in the store = %d, %v; want 1", n, err)
	}
}

// TestAPlanForANewerRevisionAppliesOnAStaleWorkDir: replica B's work dir
// was laid out and init'ed for an earlier revision (no provider but the
// built-in one); a plan A made of the newer revision, which needs the
// local provider, applies on B: B brings its work dir up to date (init)
// before applying the bytes.
func TestAPlanForANewerRevisionAppliesOnAStaleWorkDir(t *testing.T) {
	pg := pgtest.Start(t)
	dsn := pg.DB(t)
	env := environment(t, secretModule)
	a := newReplica(t, openPG(t, dsn), env)
	b := newReplica(t, openPG(t, dsn), env)
	ctx := context.Background()
	in := runner.Inputs{"password": secret, "n": 1}
	if _, _, err := a.r.PlanApply(ctx, a.c, in); err != nil {
		t.Fatalf("apply on A: %v\n%s", err, a.log)
	}
	if p, err := b.r.Plan(ctx, b.c, in, runner.PlanOptions{}); err != nil || p.HasChanges() {
		t.Fatalf("plan on B: %+v, %v\n%s", p, err, b.log)
	}
	testtools.WriteFiles(t, env.Dir, map[string]string{
		"mod/calls.tf": `resource "local_file" "f" {
  filename = "` + filepath.Join(t.TempDir(), "out.txt") + `"
  content  = "new revision"
}
`,
	})
	p, err := a.r.Plan(ctx, a.c, in, runner.PlanOptions{})
	if err != nil || !p.HasChanges() {
		t.Fatalf("plan of the new revision on A: %+v, %v\n%s", p, err, a.log)
	}
	planBytes, err := os.ReadFile(p.File)
	if err != nil {
		t.Fatal(err)
	}
	onB := filepath.Join(b.data, "approved.tfplan")
	if err := os.WriteFile(onB, planBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := b.r.Apply(ctx, b.c, &runner.Plan{File: onB, Checksum: p.Checksum}); err != nil {
		t.Fatalf("apply on B's stale work dir: %v\n%s", err, b.log)
	}
	if again, err := a.r.Plan(ctx, a.c, in, runner.PlanOptions{}); err != nil || again.HasChanges() {
		t.Errorf("A after B's apply: %+v, %v; want no changes\n%s", again, err, a.log)
	}
}
