package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// TestGeneratedEnvironmentsAreValid: every shape and kind knit-bench writes
// is an environment knit accepts, with exactly the dependencies intended.
func TestGeneratedEnvironmentsAreValid(t *testing.T) {
	for _, shape := range Shapes {
		for _, kind := range []string{"terraform", "script"} {
			t.Run(string(shape)+"/"+kind, func(t *testing.T) {
				var e *Env
				var err error
				if kind == "script" {
					e, err = GenerateScript(t.TempDir(), shape, 20)
				} else {
					e, err = GenerateTerraform(t.TempDir(), shape, 20, "0")
				}
				if err != nil {
					t.Fatal(err)
				}
				env, diags := spec.Load(e.File)
				if diags.HasErrors() {
					t.Fatalf("generated %s is invalid:\n%s", e.File, diags)
				}
				if env.ID() != e.ID {
					t.Errorf("environment %s, want %s", env.ID(), e.ID)
				}
				g := env.Graph()
				for i, name := range e.Names {
					var want []string
					for _, d := range e.Deps[i] {
						want = append(want, e.Names[d])
					}
					slices.Sort(want)
					if got := g.DependenciesOf(name); !slices.Equal(got, want) {
						t.Errorf("%s depends on %v, want %v", name, got, want)
					}
				}
			})
		}
	}
}

func TestShapes(t *testing.T) {
	levels := func(deps [][]int) int {
		depth := make([]int, len(deps))
		most := 0
		for i, ds := range deps {
			for _, d := range ds {
				if d >= i {
					t.Fatalf("%d depends on later %d", i, d)
				}
				depth[i] = max(depth[i], depth[d]+1)
			}
			most = max(most, depth[i]+1)
		}
		return most
	}
	for _, c := range []struct {
		shape  Shape
		n      int
		levels int
	}{{Chain, 20, 20}, {Wide, 20, 2}, {Layered, 20, 4}, {Layered, 1000, 10}} {
		if got := levels(c.shape.deps(c.n)); got != c.levels {
			t.Errorf("%s of %d: %d levels, want %d", c.shape, c.n, got, c.levels)
		}
	}
}

// TestWalkOrderAndParallelism: the baseline's walker runs each vertex
// after its dependencies, never more than parallelism at once.
func TestWalkOrderAndParallelism(t *testing.T) {
	deps := Layered.deps(40)
	var mu sync.Mutex
	done := map[int]bool{}
	running, most := 0, 0
	err := walk(context.Background(), deps, 3, func(i int) error {
		mu.Lock()
		for _, d := range deps[i] {
			if !done[d] {
				t.Errorf("%d started before its dependency %d finished", i, d)
			}
		}
		running++
		most = max(most, running)
		mu.Unlock()
		mu.Lock()
		running--
		done[i] = true
		mu.Unlock()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 40 || most > 3 {
		t.Errorf("ran %d of 40, at most %d at once (limit 3)", len(done), most)
	}
}

// TestDirectRunsEveryOperation runs the baseline's four operations on a
// small chain with real tofu and knit's state encryption: outputs flow
// downstream, state is encrypted, teardown leaves no resources.
func TestDirectRunsEveryOperation(t *testing.T) {
	tofu := testtools.Tofu(t)
	e, err := GenerateTerraform(t.TempDir(), Chain, 3, "0")
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	d := Direct{Tofu: tofu.Path, CLIConfig: tofu.CLIConfig, Parallelism: 2, Env: terraform.EncryptionEnv(key)}
	dir := t.TempDir()
	ctx := context.Background()
	if _, err := d.Apply(ctx, e, dir); err != nil {
		t.Fatal(err)
	}
	vars, _ := os.ReadFile(filepath.Join(dir, "c002", "module", "knit.auto.tfvars.json"))
	if !strings.Contains(string(vars), `"up_c001": "c001:c000:"`) {
		t.Errorf("c002's inputs = %s, want c001's output", vars)
	}
	state, _ := os.ReadFile(filepath.Join(dir, "c000", "terraform.tfstate"))
	if !strings.Contains(string(state), "encrypted_data") {
		t.Errorf("state is not encrypted:\n%s", state)
	}
	for _, op := range []func(context.Context, *Env, string) (time.Duration, error){d.Apply, d.Drift, d.Teardown} {
		if _, err := op(ctx, e, dir); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(tofu.Path, "state", "list")
	cmd.Dir = filepath.Join(dir, "c000", "module")
	cmd.Env = append(append(os.Environ(), "TF_CLI_CONFIG_FILE="+tofu.CLIConfig), d.Env...)
	if out, err := cmd.CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("c000 after teardown: %v\n%s", err, out)
	}
}

// TestTerragruntUnitsWireTheSameGraph: the Terragrunt layout of an
// environment holds each module as it is, and each unit's terragrunt.hcl
// names exactly the module's dependencies and reads their outputs into the
// variables knit's valueFrom fills.
func TestTerragruntUnitsWireTheSameGraph(t *testing.T) {
	e, err := GenerateTerraform(t.TempDir(), Layered, 20, "0")
	if err != nil {
		t.Fatal(err)
	}
	units := t.TempDir()
	if err := GenerateTerragrunt(units, e); err != nil {
		t.Fatal(err)
	}
	for i, name := range e.Names {
		module, _ := os.ReadFile(filepath.Join(e.Dir, "modules", name, "main.tf"))
		copied, err := os.ReadFile(filepath.Join(units, name, "main.tf"))
		if err != nil || string(copied) != string(module) {
			t.Errorf("%s: main.tf is not the module (%v)", name, err)
		}
		f, diags := hclparse.NewParser().ParseHCLFile(filepath.Join(units, name, "terragrunt.hcl"))
		if diags.HasErrors() {
			t.Fatalf("%s: %s", name, diags)
		}
		body := f.Body.(*hclsyntax.Body)
		var deps, want []string
		for _, b := range body.Blocks {
			if b.Type != "dependency" {
				t.Errorf("%s: unexpected block %s", name, b.Type)
				continue
			}
			path := b.Body.Attributes["config_path"].Expr.(*hclsyntax.TemplateExpr).Parts[0].(*hclsyntax.LiteralValueExpr).Val.AsString()
			if path != "../"+b.Labels[0] {
				t.Errorf("%s: dependency %s at %s", name, b.Labels[0], path)
			}
			deps = append(deps, b.Labels[0])
		}
		inputs := map[string]string{}
		if a, ok := body.Attributes["inputs"]; ok {
			for _, item := range a.Expr.(*hclsyntax.ObjectConsExpr).Items {
				key := hcl.ExprAsKeyword(item.KeyExpr)
				var ref []string
				for _, tr := range item.ValueExpr.(*hclsyntax.ScopeTraversalExpr).Traversal {
					switch s := tr.(type) {
					case hcl.TraverseRoot:
						ref = append(ref, s.Name)
					case hcl.TraverseAttr:
						ref = append(ref, s.Name)
					}
				}
				inputs[key] = strings.Join(ref, ".")
			}
		}
		for _, d := range e.Deps[i] {
			up := e.Names[d]
			want = append(want, up)
			if got := inputs["up_"+up]; got != "dependency."+up+".outputs.out" {
				t.Errorf("%s: input up_%s = %q", name, up, got)
			}
		}
		if !slices.Equal(deps, want) || len(inputs) != len(want) {
			t.Errorf("%s: dependencies %v and inputs %v, want %v", name, deps, inputs, want)
		}
	}
}
