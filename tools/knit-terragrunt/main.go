// Command knit-terragrunt reads a Terragrunt tree with Terragrunt's own
// configuration parser and prints a neutral JSON description of its units
// (see Description), which `knit import terragrunt` translates into knit
// Environments. It is a program of its own, in a Go module of its own, so
// that Terragrunt's dependencies (cloud SDKs) stay out of knit's binary
// and knit's module graph.
//
// It never runs anything the configuration asks for: run_cmd, hooks,
// dependency output fetches (tofu output), AWS look-ups and SOPS
// decryption are replaced by markers the description names; get_env sees
// no environment variables.
//
// Usage:
//
//	knit-terragrunt describe [-workers N] DIR
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// terragruntVersion is the version of Terragrunt's parser this binary is
// built with (go.mod pins it).
const terragruntVersion = "v0.86.2"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "describe" {
		fmt.Fprintln(stderr, "usage: knit-terragrunt describe [-workers N] DIR  (knit import terragrunt runs it)")
		return 2
	}
	fs := flag.NewFlagSet("describe", flag.ContinueOnError)
	fs.SetOutput(stderr)
	workers := fs.Int("workers", runtime.GOMAXPROCS(0), "units parsed at once")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "knit-terragrunt describe: name one folder")
		return 2
	}
	d, err := describeTree(fs.Arg(0), *workers)
	if err != nil {
		fmt.Fprintln(stderr, "knit-terragrunt:", err)
		return 1
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		fmt.Fprintln(stderr, "knit-terragrunt:", err)
		return 1
	}
	return 0
}

// describeTree describes every unit under dir.
func describeTree(dir string, workers int) (*Description, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%s is not a folder", dir)
	}
	files, findings, err := walk(root)
	if err != nil {
		return nil, err
	}
	units := parseAll(newParser(root), files, workers)
	units, shared := sharedConfigs(units)
	return &Description{Format: FormatV1, Terragrunt: terragruntVersion, Root: root, Units: units, Findings: append(findings, shared...)}, nil
}
