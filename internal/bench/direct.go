package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// Direct is the baseline knit is measured against: the least tool work
// that gives knit's result, run by a minimal orchestrator. Per module it
// runs only what a tool-only run needs (init once, then one apply, plan or
// destroy with -json), reads outputs from apply's stream and passes them on
// as the next modules' inputs, and starts each module the moment its
// dependencies finish, at most Parallelism at once. Like knit, it gives each
// module its own work dir with a local backend, writes the inputs as
// knit.auto.tfvars.json and shares one provider plugin cache.
type Direct struct {
	Tofu        string
	CLIConfig   string
	Parallelism int
	// Env is added to the tools' environment: the suite gives the
	// baseline the state encryption knit uses (TF_ENCRYPTION), so that both
	// write the same encrypted state.
	Env []string
}

// The baseline's commands. Every operation after the first apply finds its
// work dirs initialised, so it runs one process per module.
var (
	// DirectInit runs once per module, before its first apply.
	DirectInit = []string{"init", "-input=false", "-no-color"}
	// DirectApply provisions or re-applies a module; outputs come from its
	// stream's outputs message.
	DirectApply = []string{"apply", "-auto-approve", "-input=false", "-no-color", "-json"}
	// DirectDrift checks a module against reality (exit 2: it differs).
	// Modules are checked all at once: their inputs are already known.
	DirectDrift = []string{"plan", "-detailed-exitcode", "-input=false", "-no-color", "-json"}
	// DirectDestroy tears a module down, dependents first.
	DirectDestroy = []string{"destroy", "-auto-approve", "-input=false", "-no-color", "-json"}
)

func (d Direct) env(dir string) ([]string, error) {
	cache := filepath.Join(dir, "plugin-cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	env := append(os.Environ(), "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1",
		"TF_PLUGIN_CACHE_DIR="+cache, "TF_CLI_CONFIG_FILE="+d.CLIConfig)
	return append(env, d.Env...), nil
}

// Apply provisions e with work dirs under dir (init then apply per module;
// a second Apply on the same dir re-applies without init) and returns the
// wall time from the first command started to the last one finished.
func (d Direct) Apply(ctx context.Context, e *Env, dir string) (time.Duration, error) {
	env, err := d.env(dir)
	if err != nil {
		return 0, err
	}
	var mu sync.Mutex
	outs := map[int]map[string]json.RawMessage{}
	start := time.Now()
	err = walk(ctx, e.Deps, d.Parallelism, func(i int) error {
		in := map[string]json.RawMessage{}
		mu.Lock()
		for _, up := range e.Deps[i] {
			in["up_"+e.Names[up]] = outs[up]["out"]
		}
		mu.Unlock()
		o, err := d.apply(ctx, e, i, filepath.Join(dir, e.Names[i]), in, env)
		mu.Lock()
		outs[i] = o
		mu.Unlock()
		return err
	})
	return time.Since(start), err
}

// Drift runs DirectDrift in every module of an applied dir, all modules at
// once up to Parallelism.
func (d Direct) Drift(ctx context.Context, e *Env, dir string) (time.Duration, error) {
	env, err := d.env(dir)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	err = walk(ctx, make([][]int, len(e.Names)), d.Parallelism, func(i int) error {
		_, err := d.tofu(ctx, e.Names[i], filepath.Join(dir, e.Names[i], "module"), env, DirectDrift)
		return err
	})
	return time.Since(start), err
}

// Teardown runs DirectDestroy in every module of an applied dir, each once
// everything that depends on it is gone.
func (d Direct) Teardown(ctx context.Context, e *Env, dir string) (time.Duration, error) {
	env, err := d.env(dir)
	if err != nil {
		return 0, err
	}
	rev := reverse(e.Deps)
	start := time.Now()
	err = walk(ctx, rev, d.Parallelism, func(i int) error {
		_, err := d.tofu(ctx, e.Names[i], filepath.Join(dir, e.Names[i], "module"), env, DirectDestroy)
		return err
	})
	return time.Since(start), err
}

// reverse turns "i needs deps[i]" into "i needs its dependents gone".
func reverse(deps [][]int) [][]int {
	out := make([][]int, len(deps))
	for i, ds := range deps {
		for _, d := range ds {
			out[d] = append(out[d], i)
		}
	}
	return out
}

// apply lays out one module's work dir, runs init if it has not run there,
// then apply, and returns the outputs from apply's stream.
func (d Direct) apply(ctx context.Context, e *Env, i int, wd string, in map[string]json.RawMessage, env []string) (map[string]json.RawMessage, error) {
	name := e.Names[i]
	src, err := os.ReadFile(filepath.Join(e.Dir, "modules", name, "main.tf"))
	if err != nil {
		return nil, err
	}
	inputs, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return nil, err
	}
	backend := fmt.Sprintf("terraform {\n  backend \"local\" {\n    path = %q\n  }\n}\n", filepath.Join(wd, "terraform.tfstate"))
	files := map[string][]byte{"main.tf": src, "knit.auto.tfvars.json": inputs, "knit_override.tf": []byte(backend)}
	run := filepath.Join(wd, "module")
	if err := os.MkdirAll(run, 0o755); err != nil {
		return nil, err
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(run, f), body, 0o644); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(filepath.Join(run, ".terraform")); err != nil {
		if _, err := d.tofu(ctx, name, run, env, DirectInit); err != nil {
			return nil, err
		}
	}
	out, err := d.tofu(ctx, name, run, env, DirectApply)
	if err != nil {
		return nil, err
	}
	return streamOutputs(out)
}

// tofu runs one command in dir; exit 2 of a -detailed-exitcode plan is
// success. It returns stdout.
func (d Direct) tofu(ctx context.Context, name, dir string, env, args []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, d.Tofu, args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok && args[0] == "plan" && ee.ExitCode() == 2 {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: tofu %s: %v\n%s%s", name, args[0], err, lastLines(stdout.Bytes(), 10), stderr.Bytes())
	}
	return stdout.Bytes(), nil
}

// streamOutputs reads the values of the last outputs message of a -json
// stream.
func streamOutputs(stream []byte) (map[string]json.RawMessage, error) {
	vals := map[string]json.RawMessage{}
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			Type    string `json:"type"`
			Outputs map[string]struct {
				Value json.RawMessage `json:"value"`
			} `json:"outputs"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Type != "outputs" {
			continue
		}
		for k, o := range m.Outputs {
			vals[k] = o.Value
		}
	}
	return vals, sc.Err()
}

// walk calls fn for every vertex of the DAG deps (deps[i]: what i needs),
// starting each the moment its dependencies succeeded, at most parallelism
// at once, the lowest ready index first. It stops starting vertices after
// the first error and returns it.
func walk(ctx context.Context, deps [][]int, parallelism int, fn func(i int) error) error {
	n := len(deps)
	remaining := make([]int, n)
	succ := make([][]int, n)
	var ready []int
	for i, ds := range deps {
		remaining[i] = len(ds)
		for _, d := range ds {
			succ[d] = append(succ[d], i)
		}
		if len(ds) == 0 {
			ready = append(ready, i)
		}
	}
	type result struct {
		i   int
		err error
	}
	results := make(chan result, n)
	running, done := 0, 0
	var first error
	for done < n {
		for first == nil && running < max(parallelism, 1) && len(ready) > 0 {
			sort.Ints(ready)
			i := ready[0]
			ready = ready[1:]
			running++
			go func() { results <- result{i, fn(i)} }()
		}
		if running == 0 {
			break
		}
		r := <-results
		running--
		done++
		if r.err != nil && first == nil {
			first = r.err
		}
		for _, s := range succ[r.i] {
			if remaining[s]--; remaining[s] == 0 {
				ready = append(ready, s)
			}
		}
	}
	if first == nil && done < n {
		first = ctx.Err()
	}
	return first
}

// Bound is the physical lower bound of applying e when each module's work
// takes work, at parallelism p: the longer of the critical path and the
// total work spread over p. It ignores the tool's own cost.
func Bound(e *Env, work time.Duration, p int) time.Duration {
	depth := make([]int, len(e.Deps))
	longest := 0
	for i, ds := range e.Deps {
		for _, d := range ds {
			depth[i] = max(depth[i], depth[d])
		}
		depth[i]++
		longest = max(longest, depth[i])
	}
	total := work * time.Duration(len(e.Deps)) / time.Duration(max(p, 1))
	return max(work*time.Duration(longest), total)
}
