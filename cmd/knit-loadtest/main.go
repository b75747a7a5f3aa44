// Command knit-loadtest measures knit serve under a bounded, loopback-only
// load over a store of many environments, and records the figures in its
// section of docs/benchmarks.md. `make loadtest` builds and runs it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"knit.dev/knit/internal/loadtest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) > 1 && os.Args[1] == "fleet" {
		fleet(ctx, os.Args[2:])
		return
	}
	cfg := loadtest.Config{Log: os.Stderr}
	out := flag.String("out", "docs/benchmarks.md", "file whose knit-loadtest section is rewritten (empty: print)")
	flag.StringVar(&cfg.Knit, "knit", "bin/knit", "knit binary")
	flag.IntVar(&cfg.Envs, "envs", 10000, "environments in the store")
	flag.IntVar(&cfg.Components, "components", 20, "components per environment")
	flag.IntVar(&cfg.Clients, "clients", 50, "concurrent clients")
	flag.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long the clients run")
	flag.IntVar(&cfg.Samples, "samples", 1000, "sequential requests per latency figure")
	flag.IntVar(&cfg.FanOut, "fan-out", 100, "environments one commit touches (0: skip)")
	flag.IntVar(&cfg.MaxRuns, "max-concurrent-runs", 4, "the fan-out server's --max-concurrent-runs")
	flag.StringVar(&cfg.Data, "data", "", "keep the seeded data directory here and reuse it when it exists (for iterating)")
	flag.IntVar(&cfg.Replicas, "postgres-replicas", 3, "replicas of the PostgreSQL row, on one database holding the same store (0: skip)")
	flag.StringVar(&cfg.CPUProfile, "cpu-profile", "", "the measured server writes its CPU profile here")
	flag.Parse()
	if abs, err := filepath.Abs(cfg.Knit); err == nil {
		cfg.Knit = abs
	}
	work, err := os.MkdirTemp("", "knit-loadtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(work)
	cfg.Work = work
	rep, err := loadtest.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "knit-loadtest:", err)
		os.Exit(1)
	}
	section := rep.Markdown("knit-loadtest " + strings.Join(relativeArgs(os.Args[1:]), " "))
	if *out == "" {
		fmt.Print(section)
		return
	}
	if err := loadtest.WriteSection(*out, section); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "wrote the knit serve section of %s\n", *out)
}

// relativeArgs writes arguments that are paths below the working
// directory relative to it, so the report names no one's checkout.
func relativeArgs(args []string) []string {
	wd, err := os.Getwd()
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if rel, rerr := filepath.Rel(wd, a); err == nil && rerr == nil && filepath.IsAbs(a) && !strings.HasPrefix(rel, "..") {
			out[i] = rel
		}
	}
	return out
}

// fleet is `knit-loadtest fleet`: GitOps at fleet scale (loadtest.Fleet),
// written to its own section of the file.
func fleet(ctx context.Context, args []string) {
	fs := flag.NewFlagSet("fleet", flag.ExitOnError)
	cfg := loadtest.FleetConfig{Log: os.Stderr}
	out := fs.String("out", "docs/benchmarks.md", "file whose fleet section is rewritten (empty: print)")
	fs.StringVar(&cfg.Knit, "knit", "bin/knit", "knit binary")
	idle := fs.String("idle-sizes", "10,1000", "environments of the repositories whose idle polls are measured")
	commits := fs.String("commit-sizes", "100,1000", "files of the repositories whose one-file commits are measured")
	fs.IntVar(&cfg.Commits, "commits", 5, "one-file commits measured per size")
	fs.DurationVar(&cfg.Idle, "idle", 20*time.Second, "how long idle polls are measured")
	fs.IntVar(&cfg.MaxRuns, "max-concurrent-runs", 4, "the servers' --max-concurrent-runs")
	fs.StringVar(&cfg.CPUProfile, "cpu-profile", "", "the largest repository's server writes its CPU profile here")
	if err := fs.Parse(args); err != nil {
		os.Exit(2)
	}
	var err error
	if cfg.IdleSizes, err = sizes(*idle); err == nil {
		cfg.CommitSizes, err = sizes(*commits)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "knit-loadtest fleet:", err)
		os.Exit(2)
	}
	if abs, err := filepath.Abs(cfg.Knit); err == nil {
		cfg.Knit = abs
	}
	work, err := os.MkdirTemp("", "knit-loadtest-fleet-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(work)
	cfg.Work = work
	rep, err := loadtest.Fleet(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "knit-loadtest fleet:", err)
		os.Exit(1)
	}
	section := rep.Markdown("knit-loadtest fleet " + strings.Join(relativeArgs(args), " "))
	if *out == "" {
		fmt.Print(section)
		return
	}
	if err := loadtest.WriteFleetSection(*out, section); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "wrote the fleet section of %s\n", *out)
}

// sizes reads a comma-separated list of positive counts.
func sizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a list of positive counts", s)
		}
		out = append(out, n)
	}
	return out, nil
}
