package bench

import (
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

// Direct is the baseline knit is measured against: a minimal orchestrator
// that runs, per module, the tofu commands knit runs for a first apply, in
// the same order and with the same flags, starting each module the moment
// its dependencies finish, at most Parallelism at once. Like knit, it gives
// each module its own work dir with a local backend, writes the inputs as
// knit.auto.tfvars.json and shares one provider plugin cache.
type Direct struct {
	Tofu        string
	CLIConfig   string
	Parallelism int
}

// DirectCommands are the tofu commands Direct runs per module (PLAN is the
// saved plan's path); they are those knit's terraform runner runs on a
// first apply, minus `version -json`, which the direct path does not need.
var DirectCommands = [][]string{
	{"init", "-no-color", "-input=false", "-backend=true", "-get=true", "-upgrade=false"},
	{"plan", "-no-color", "-input=false", "-detailed-exitcode", "-lock-timeout=0s", "-out=PLAN", "-lock=true", "-parallelism=10", "-refresh=true"},
	{"show", "-json", "-no-color", "PLAN"},
	{"apply", "-no-color", "-auto-approve", "-input=false", "-lock=true", "-parallelism=10", "-refresh=true", "PLAN"},
	{"output", "-no-color", "-json"},
}

// Apply provisions e from scratch with work dirs under dir and returns the
// wall time from the first command started to the last one finished.
func (d Direct) Apply(ctx context.Context, e *Env, dir string) (time.Duration, error) {
	cache := filepath.Join(dir, "plugin-cache")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return 0, err
	}
	env := append(os.Environ(), "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1",
		"TF_PLUGIN_CACHE_DIR="+cache, "TF_CLI_CONFIG_FILE="+d.CLIConfig)
	var mu sync.Mutex
	outs := map[int]map[string]json.RawMessage{}
	start := time.Now()
	err := walk(ctx, e.Deps, d.Parallelism, func(i int) error {
		in := map[string]json.RawMessage{}
		mu.Lock()
		for _, up := range e.Deps[i] {
			in["up_"+e.Names[up]] = outs[up]["out"]
		}
		mu.Unlock()
		o, err := d.module(ctx, e, i, filepath.Join(dir, e.Names[i]), in, env)
		mu.Lock()
		outs[i] = o
		mu.Unlock()
		return err
	})
	return time.Since(start), err
}

// module lays out one module's work dir and runs DirectCommands in it.
func (d Direct) module(ctx context.Context, e *Env, i int, wd string, in map[string]json.RawMessage, env []string) (map[string]json.RawMessage, error) {
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
	plan := filepath.Join(wd, "plan.tfplan")
	var out []byte
	for _, args := range DirectCommands {
		argv := make([]string, len(args))
		for k, a := range args {
			argv[k] = string(bytes.ReplaceAll([]byte(a), []byte("PLAN"), []byte(plan)))
		}
		cmd := exec.CommandContext(ctx, d.Tofu, argv...)
		cmd.Dir, cmd.Env = run, env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok && args[0] == "plan" && ee.ExitCode() == 2 {
			err = nil // -detailed-exitcode: 2 means changes
		}
		if err != nil {
			return nil, fmt.Errorf("%s: tofu %s: %v\n%s", name, args[0], err, stderr.Bytes())
		}
		out = stdout.Bytes()
	}
	var meta map[string]struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(out, &meta); err != nil {
		return nil, fmt.Errorf("%s: output -json: %w", name, err)
	}
	vals := map[string]json.RawMessage{}
	for k, m := range meta {
		vals[k] = m.Value
	}
	return vals, nil
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
