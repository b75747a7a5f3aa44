package bench

import (
	"context"
	"slices"
	"sync"
	"testing"

	"knit.dev/knit/internal/spec"
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
