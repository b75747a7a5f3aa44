package policy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/policy"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/spec"
)

// write creates files (name → text) in a new folder and returns it.
func write(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const secret = "hunter2-very-secret"

// envPlan is a two-component plan of a prod environment: db destroys a
// bucket, app creates a file whose content holds a secret.
func envPlan() *engine.EnvPlan {
	env := &spec.Environment{Metadata: spec.Metadata{Name: "shop-prod", Labels: map[string]string{"tier": "prod", "env": "prod"}},
		Spec: spec.EnvSpec{TeamName: "shop", EnvName: "prod", Approval: &spec.ApprovalPolicy{RequireOtherApprover: false}}}
	db := &spec.Component{Name: "db", Type: spec.TypeTerraform, Module: &spec.Module{Source: "git::https://example.com/db.git", Version: "1.2.0"}}
	app := &spec.Component{Name: "app", Type: spec.TypeTerraform, Module: &spec.Module{Source: "./app"}}
	return &engine.EnvPlan{Env: env,
		Run: engine.RunInfo{ID: "r1", Kind: string(engine.KindApply), Actor: "alice", Reason: "ship", Source: "cli",
			Time: time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC), Revision: 3, Commit: "abc123", Author: "bob"},
		Components: []engine.PlannedComponent{
			{Name: "db", Def: db, Gated: true, Plan: &runner.Plan{Destroy: 1, Resources: []runner.ResourceChange{
				{Address: "module.m.aws_s3_bucket.b[\"x\"]", Action: runner.ActionDelete,
					Before: map[string]any{"bucket": "b", "password": runner.MaskedValue}},
			}}},
			{Name: "app", Def: app, Secrets: []string{secret}, Plan: &runner.Plan{Add: 1, OutputChanges: []string{"path"}, Resources: []runner.ResourceChange{
				{Address: "local_file.f", Action: runner.ActionCreate,
					After:        map[string]any{"filename": "/etc/x", "content": "token=" + secret, "list": []any{secret, "ok"}},
					AfterUnknown: map[string]any{"id": true},
					Changes:      []runner.ValueChange{{Path: "content", Old: "(none)", New: `"token=` + secret + `"`}}},
				{Address: "terraform_data.r", Action: runner.ActionReplace},
			}}},
			{Name: "late", Def: app, Unplanned: "input x comes from db.id, known only after db is applied"},
		}}
}

const prodPolicy = `package knit

deny contains {"msg": sprintf("%s destroys %s in prod", [c.name, r.address]), "component": c.name, "resource": r.address} if {
	input.environment.labels.tier == "prod"
	not input.environment.requireOtherApprover
	some c in input.components
	some r in c.resources
	"delete" in r.actions
}

warn contains "a run with a reason" if input.run.reason != ""

require_approval contains {"msg": "files need a look", "component": c.name} if {
	some c in input.components
	some r in c.resources
	r.type == "local_file"
}
`

func TestDecisionsNameTheirFileRuleComponentAndResource(t *testing.T) {
	dir := write(t, map[string]string{"prod.rego": prodPolicy, "prod_test.rego": "package knit\n\ntest_x if true\n"})
	set, err := policy.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Files) != 1 {
		t.Errorf("files = %v, want prod.rego only (tests are left out)", set.Files)
	}
	v, err := set.Judge(context.Background(), envPlan())
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "prod.rego")
	want := []engine.Decision{
		{Kind: "deny", Message: "app destroys terraform_data.r in prod", File: file, Line: 3, Rule: "deny", Component: "app", Resource: "terraform_data.r"},
		{Kind: "deny", Message: `db destroys module.m.aws_s3_bucket.b["x"] in prod`, File: file, Line: 3, Rule: "deny", Component: "db", Resource: `module.m.aws_s3_bucket.b["x"]`},
		{Kind: "require_approval", Message: "files need a look", File: file, Line: 13, Rule: "require_approval", Component: "app"},
		{Kind: "warn", Message: "a run with a reason", File: file, Line: 11, Rule: "warn"},
	}
	got, _ := json.Marshal(v.Decisions)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Errorf("decisions\n got %s\nwant %s", got, exp)
	}
	if !v.Denied() {
		t.Error("Denied() = false")
	}
}

func TestBadPoliciesFailWithFileAndLine(t *testing.T) {
	for name, tc := range map[string]struct{ text, want string }{
		"syntax":        {"package knit\n\ndeny contains msg if {\n\tmsg := \n}\n", "bad.rego:5"},
		"undefined":     {"package knit\n\ndeny contains msg if {\n\tmsg := nope(1)\n}\n", "bad.rego:4"},
		"network":       {"package knit\n\ndeny contains msg if {\n\tmsg := http.send({\"method\": \"get\", \"url\": \"http://127.0.0.1/\"})\n}\n", "bad.rego:4"},
		"env variables": {"package knit\n\ndeny contains msg if {\n\tmsg := opa.runtime().env.HOME\n}\n", "bad.rego:4"},
		"not a set":     {"package knit\n\ndeny := \"no\"\n", "bad.rego:3"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := policy.Load(context.Background(), write(t, map[string]string{"bad.rego": tc.text}))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want an error at %s", err, tc.want)
			}
		})
	}
}

func TestEvaluationErrorsFailClosed(t *testing.T) {
	dir := write(t, map[string]string{"p.rego": "package knit\n\ndeny contains msg if {\n\tmsg := sprintf(\"%d\", [to_number(input.run.actor)])\n}\n"})
	set, err := policy.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.Judge(context.Background(), envPlan()); err == nil || !strings.Contains(err.Error(), "p.rego:4") {
		t.Fatalf("Judge = %v, want an evaluation error at p.rego:4", err)
	}
}

func TestALoopingPolicyIsStoppedByTheTimeBound(t *testing.T) {
	// 10^12 iterations in constant memory: only the bound stops it.
	dir := write(t, map[string]string{"loop.rego": `package knit

deny contains "never" if {
	r := numbers.range(1, 10000)
	some i in r
	some j in r
	some k in r
	i + j + k < 0
}
`})
	set, err := policy.Load(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	set.Timeout = 100 * time.Millisecond
	_, err = set.Judge(context.Background(), envPlan())
	if err == nil || !strings.Contains(err.Error(), "time bound") {
		t.Fatalf("Judge = %v, want the time bound's error", err)
	}
}

func TestAnInputOverTheBoundIsRefused(t *testing.T) {
	set, err := policy.Load(context.Background(), write(t, map[string]string{"p.rego": "package knit\n\nwarn contains \"x\" if true\n"}))
	if err != nil {
		t.Fatal(err)
	}
	set.MaxInput = 100
	if _, err := set.Judge(context.Background(), envPlan()); err == nil || !strings.Contains(err.Error(), "over the bound") {
		t.Fatalf("Judge = %v, want the input bound's error", err)
	}
}

func TestTheInputHoldsNoSecretAndFollowsItsSchema(t *testing.T) {
	in := policy.BuildInput(envPlan())
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), secret) {
		t.Fatalf("the input holds the secret:\n%s", raw)
	}
	for _, want := range []string{`"content":"(sensitive)"`, `"password":"(sensitive)"`, `"actions":["delete","create"]`,
		`"type":"aws_s3_bucket"`, `"after_unknown":{"id":true}`, `"labels":{"env":"prod","tier":"prod"}`, `"time":"2026-11-27T15:00:00Z"`,
		`"source":"git::https://example.com/db.git","version":"1.2.0"`, `"planned":false`} {
		if !strings.Contains(string(raw), want) {
			t.Errorf("the input lacks %s:\n%s", want, raw)
		}
	}
	schemaFile, err := os.Open("../../docs/policy-input.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer schemaFile.Close()
	doc, err := jsonschema.UnmarshalJSON(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("policy-input.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	schema, err := c.Compile("policy-input.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(inst); err != nil {
		t.Fatalf("the input does not follow docs/policy-input.schema.json: %v", err)
	}
}

func TestPolicyTestHasOpaTestsExitCodes(t *testing.T) {
	pass := write(t, map[string]string{"p.rego": prodPolicy, "p_test.rego": `package knit

test_warns if {
	"a run with a reason" in warn with input as {"run": {"reason": "x"}, "environment": {}, "components": []}
}
`})
	var out bytes.Buffer
	if code := policy.Test(context.Background(), &out, time.Minute, pass); code != policy.TestsPassed {
		t.Fatalf("exit %d, want 0:\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "PASS") || !strings.Contains(out.String(), "1/1 passed") {
		t.Errorf("output:\n%s", out.String())
	}
	failing := write(t, map[string]string{"p.rego": prodPolicy, "p_test.rego": "package knit\n\ntest_wrong if {\n\tcount(warn) == 7 with input as {}\n}\n"})
	out.Reset()
	if code := policy.Test(context.Background(), &out, time.Minute, failing); code != policy.TestsFailed {
		t.Fatalf("exit %d, want 2 (a failing test):\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FAIL") || !strings.Contains(out.String(), "p_test.rego:3") {
		t.Errorf("output should name the failing test's file:line:\n%s", out.String())
	}
	broken := write(t, map[string]string{"p.rego": prodPolicy, "p_test.rego": "package knit\n\ntest_broken if {\n"})
	out.Reset()
	if code := policy.Test(context.Background(), &out, time.Minute, broken); code != policy.TestError {
		t.Fatalf("exit %d, want 1 (a test that does not parse):\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "p_test.rego:") {
		t.Errorf("output should name the broken file:\n%s", out.String())
	}
}

// A folder read as sources (what GitOps records of a commit's policies/)
// compiles to the same decisions as the folder, named as shown; a folder
// over the bound is an error, never a part of it; a source that does not
// parse names its file and line.
func TestAFolderReadAsSourcesJudgesAsTheFolder(t *testing.T) {
	ctx := context.Background()
	dir := write(t, map[string]string{
		"deny.rego":      "package knit\n\ndeny contains \"no\" if true\n",
		"deny_test.rego": "package knit\n\ntest_x if true\n",
	})
	srcs, err := policy.ReadFolder(policy.Folder{Path: dir, Shown: "policies"}, 1<<20)
	if err != nil || len(srcs) != 1 || srcs[0].Name != "policies/deny.rego" {
		t.Fatalf("ReadFolder = %+v, %v; want policies/deny.rego only", srcs, err)
	}
	set, err := policy.LoadSources(ctx, srcs)
	if err != nil {
		t.Fatal(err)
	}
	v, err := set.Judge(ctx, envPlan())
	if err != nil || len(v.Decisions) != 1 || v.Decisions[0].File != "policies/deny.rego" || v.Decisions[0].Line != 3 {
		t.Fatalf("verdict %+v %v, want one deny of policies/deny.rego:3", v, err)
	}
	if _, err := policy.ReadFolder(policy.Folder{Path: dir, Shown: "policies"}, 10); err == nil || !strings.Contains(err.Error(), "bound") {
		t.Fatalf("a folder over the bound: %v", err)
	}
	_, err = policy.LoadSources(ctx, []policy.Source{{Name: "policies/bad.rego", Text: "package knit\n\ndeny contains if\n"}})
	if err == nil || !strings.Contains(err.Error(), "policies/bad.rego:3") {
		t.Fatalf("a source that does not parse: %v", err)
	}
}
