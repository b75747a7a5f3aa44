// Command knit-bench measures knit against the critical path of the tools it
// runs and rewrites docs/benchmarks.md. `make bench` builds and runs it; see
// internal/bench for what is measured and how.
//
//	knit-bench [-knit bin/knit] [-tofu .tools/bin/tofu] [-out docs/benchmarks.md] ...
//	knit-bench engine-fake -f FILE -data-dir DIR [-parallelism N]
//	knit-bench generate -dir DIR [-kind terraform|script] [-shape chain|wide|layered] [-n N]
//	knit-bench rollback [-knit bin/knit] [-tofu .tools/bin/tofu] [-out docs/benchmarks.md] [-modules N] [-repeat N]
//	knit-bench canary [-knit bin/knit] [-tofu .tools/bin/tofu] [-out docs/benchmarks.md] [-repeat N]
//	knit-bench gobench [-bench REGEXP] [PACKAGES...]
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"knit.dev/knit/internal/bench"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "engine-fake":
		err = engineFake(ctx, os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "generate":
		err = generate(os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "rollback":
		err = rollback(ctx, os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "canary":
		err = canary(ctx, os.Args[2:])
	case len(os.Args) > 1 && os.Args[1] == "gobench":
		err = goBenchOnly(ctx, os.Args[2:])
	default:
		err = suite(ctx, os.Args[1:])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "knit-bench:", err)
		os.Exit(1)
	}
}

// engineFake is one measured process of the engine-alone figures.
func engineFake(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("engine-fake", flag.ExitOnError)
	file := fs.String("f", "", "environment file")
	data := fs.String("data-dir", "", "data dir")
	par := fs.Int("parallelism", 4, "parallelism")
	_ = fs.Parse(args)
	return bench.ApplyFake(ctx, *file, *data, *par)
}

// generate writes one environment as the suite would, to look at or to
// profile knit on.
func generate(args []string) error {
	fs := flag.NewFlagSet("generate", flag.ExitOnError)
	dir := fs.String("dir", "", "folder to write into")
	kind := fs.String("kind", "terraform", "terraform or script components")
	shape := fs.String("shape", "layered", "chain, wide or layered")
	n := fs.Int("n", 20, "components")
	delay := fs.String("delay", "0.5", "local-exec sleep per terraform module, in seconds")
	_ = fs.Parse(args)
	if *dir == "" {
		return fmt.Errorf("generate: -dir is required")
	}
	var e *bench.Env
	var err error
	if *kind == "script" {
		e, err = bench.GenerateScript(*dir, bench.Shape(*shape), *n)
	} else {
		e, err = bench.GenerateTerraform(*dir, bench.Shape(*shape), *n, *delay)
	}
	if err == nil {
		fmt.Println(e.File)
	}
	return err
}

func suite(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("knit-bench", flag.ExitOnError)
	cfg := bench.Config{Log: os.Stderr}
	out := fs.String("out", "docs/benchmarks.md", "the report to rewrite (empty: none)")
	goBench := fs.String("gobench", "./internal/...", "packages whose Go benchmarks run (empty: none)")
	keep := fs.Bool("keep", false, "keep the scratch folder")
	fs.StringVar(&cfg.Knit, "knit", "bin/knit", "knit binary")
	fs.StringVar(&cfg.Tofu, "tofu", ".tools/bin/tofu", "OpenTofu binary")
	fs.StringVar(&cfg.CLIConfig, "tofurc", "", "OpenTofu CLI config (default: tofurc beside the binary's folder)")
	fs.StringVar(&cfg.Terragrunt, "terragrunt", "", "Terragrunt binary knit is compared with (empty: no comparison; make bench builds one)")
	fs.IntVar(&cfg.Modules, "modules", 20, "modules per terraform environment")
	delays := fs.String("delays", "0,0.5", "work sizes: local-exec sleep per module, in seconds, comma-separated")
	fs.StringVar(&cfg.BoundDelay, "bound-delay", "1", "work size of the layered apply judged against its bound (empty: skip)")
	fs.IntVar(&cfg.Parallelism, "parallelism", 4, "parallelism of knit and the baseline")
	fs.IntVar(&cfg.Repeat, "repeat", 5, "times each terraform measurement is taken (median kept; this machine is a shared VM whose speed drifts)")
	fs.IntVar(&cfg.Components, "components", 1000, "components of the engine-alone environment")
	fs.IntVar(&cfg.Small, "small", 100, "components of the small environment flat memory is compared with")
	_ = fs.Parse(args)
	cfg.Delays = strings.Split(*delays, ",")

	err := binaries(&cfg.CLIConfig, cfg.Tofu, &cfg.Knit, &cfg.Tofu, &cfg.Terragrunt)
	if err != nil {
		return err
	}
	if cfg.Self, err = os.Executable(); err != nil {
		return err
	}
	if cfg.Work, err = bench.TempWork(); err != nil {
		return err
	}
	if !*keep {
		defer os.RemoveAll(cfg.Work)
	} else {
		fmt.Fprintln(os.Stderr, "knit-bench: scratch folder", cfg.Work)
	}
	// knit finds the tool by --tf-binary, and its CLI config beside it.
	os.Setenv("KNIT_TF_CLI_CONFIG", cfg.CLIConfig)
	os.Setenv("KNIT_ACTOR", "bench")

	start := time.Now()
	machine := bench.Describe(ctx, cfg.Knit, cfg.Tofu, cfg.Terragrunt)
	res, err := bench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	doc := bench.Doc{Machine: machine, Config: cfg, Results: res}
	if *goBench != "" {
		if doc.GoBenchCmd, doc.GoBench, err = runGoBench(ctx, ".", *goBench); err != nil {
			return err
		}
		res.Figures = append(res.Figures, bench.GoFigures(doc.GoBench)...)
	}
	res.Elapsed = time.Since(start)
	fmt.Print(bench.Table(res.Figures))
	if *out == "" {
		return nil
	}
	var b bytes.Buffer
	if err := bench.WriteDoc(&b, doc); err != nil {
		return err
	}
	// Sections other tools write into the same file survive the rewrite.
	old, err := os.ReadFile(*out)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	fmt.Fprintln(os.Stderr, "knit-bench: wrote", *out)
	return os.WriteFile(*out, bench.KeepMarked(old, b.Bytes()), 0o644)
}

// rollback measures the rollback figures alone and rewrites their section
// of the report.
func rollback(ctx context.Context, args []string) error {
	return section(ctx, "rollback", args, bench.RollbackFigures, bench.RollbackSection, bench.WriteRollbackSection)
}

// canary measures the canary rollout figures alone and rewrites their
// section of the report.
func canary(ctx context.Context, args []string) error {
	return section(ctx, "canary", args, bench.CanaryFigures, bench.CanarySection, bench.WriteCanarySection)
}

// section measures the figures of one marked section of the report (the
// subcommand name) and rewrites it.
func section(ctx context.Context, name string, args []string,
	measure func(context.Context, bench.RollbackConfig) ([]bench.Figure, []string, error),
	render func([]bench.Figure, []string, time.Duration) string, write func(path, section string) error) error {
	fs := flag.NewFlagSet(name, flag.ExitOnError)
	cfg := bench.RollbackConfig{Log: func(f string, a ...any) { fmt.Fprintf(os.Stderr, "knit-bench: "+f+"\n", a...) }}
	out := fs.String("out", "docs/benchmarks.md", "the report whose "+name+" section is rewritten (empty: none)")
	fs.StringVar(&cfg.Knit, "knit", "bin/knit", "knit binary")
	fs.StringVar(&cfg.Tofu, "tofu", ".tools/bin/tofu", "OpenTofu binary")
	fs.StringVar(&cfg.CLIConfig, "tofurc", "", "OpenTofu CLI config (default: tofurc beside the binary's folder)")
	fs.IntVar(&cfg.Modules, "modules", 20, "components of the environment rolled back (rollback only)")
	fs.IntVar(&cfg.Repeat, "repeat", 5, "times each figure is taken (median kept)")
	fs.IntVar(&cfg.Parallelism, "parallelism", 4, "knit's parallelism")
	_ = fs.Parse(args)
	err := binaries(&cfg.CLIConfig, cfg.Tofu, &cfg.Knit, &cfg.Tofu)
	if err != nil {
		return err
	}
	if cfg.Work, err = bench.TempWork(); err != nil {
		return err
	}
	defer os.RemoveAll(cfg.Work)
	os.Setenv("KNIT_TF_CLI_CONFIG", cfg.CLIConfig)
	os.Setenv("KNIT_ACTOR", "bench")
	start := time.Now()
	figs, commands, err := measure(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Print(bench.Table(figs))
	if *out == "" {
		return nil
	}
	return write(*out, render(figs, commands, time.Since(start)))
}

// binaries makes each named binary's path absolute and checks that it
// exists (an empty one is left out), and defaults the OpenTofu CLI config
// to tofurc beside the folder of tofu.
func binaries(cliConfig *string, tofu string, paths ...*string) error {
	for _, p := range paths {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("%w (make build tools)", err)
		}
		*p = abs
	}
	if *cliConfig == "" {
		abs, err := filepath.Abs(tofu)
		if err != nil {
			return err
		}
		*cliConfig = filepath.Join(filepath.Dir(filepath.Dir(abs)), "tofurc")
	}
	return nil
}

// runGoBench runs the Go benchmarks matching pattern in pkgs and returns
// the command line and its output.
func runGoBench(ctx context.Context, pattern string, pkgs ...string) (string, string, error) {
	gargs := append([]string{"test", "-run", "^$", "-bench", pattern, "-benchmem"}, pkgs...)
	line := "go " + strings.Join(gargs, " ")
	fmt.Fprintln(os.Stderr, "knit-bench:", line)
	cmd := exec.CommandContext(ctx, "go", gargs...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Run(); err != nil {
		return line, "", fmt.Errorf("%s: %w\n%s", line, err, buf.String())
	}
	return line, buf.String(), nil
}

// goBenchOnly runs only Go benchmarks (by default those of the report's
// in-process figures: policy evaluation, environment sets, the engine) and
// prints their figures as rows of the report's table, without the
// terraform suite (which needs the tools and takes minutes).
func goBenchOnly(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("gobench", flag.ExitOnError)
	pattern := fs.String("bench", "BenchmarkJudge|BenchmarkExpandSet|BenchmarkEngine|BenchmarkIdlePoll|BenchmarkOneFileCommit", "benchmarks to run (go test -bench)")
	_ = fs.Parse(args)
	pkgs := fs.Args()
	if len(pkgs) == 0 {
		pkgs = []string{"./internal/policy", "./internal/spec", "./internal/engine", "./internal/controller/gitops"}
	}
	line, out, err := runGoBench(ctx, *pattern, pkgs...)
	if err != nil {
		return err
	}
	fmt.Printf("%s\n\n%s\n%s", line, out, bench.Table(bench.GoFigures(out)))
	return nil
}
