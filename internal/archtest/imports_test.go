// Package archtest holds the import rules of docs/architecture.md as a
// test: an arrow that must never exist fails `make test` the day someone
// draws it.
package archtest

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const mod = "knit.dev/knit/internal/"

// adapter reports whether p is a concrete adapter: a store or runner
// implementation (internal/store and internal/runner themselves are the
// ports: interfaces and the types that cross them).
func adapter(p string) bool {
	return strings.HasPrefix(p, mod+"store/") || strings.HasPrefix(p, mod+"runner/")
}

// rule forbids the imports of one package (its non-test files): directly,
// and through any package it imports, except through the packages in
// Through (the known exceptions, each with its reason).
type rule struct {
	Pkg    string
	Forbid func(imp string) bool
	Why    string
	// File is the one file of Pkg allowed to import what Forbid names,
	// directly or through the packages it imports ("": none).
	File string
	// Through are packages whose own imports are not followed: today's
	// exceptions, each to be removed when its TODO is done.
	Through map[string]string
}

var rules = []rule{
	{Pkg: mod + "words", Forbid: leafOf(), Why: "the word sets are a leaf every layer may name"},
	{Pkg: mod + "view", Forbid: leafOf(mod+"plan", mod+"progress", mod+"words"),
		Why: "the read models are a leaf of their own: plans, progress and the word sets at most, never the store (a column's rename must not change the API)"},
	{Pkg: mod + "plan", Forbid: leafOf(mod + "words"), Why: "plans and outputs are plain data: a leaf (the word sets at most)"},
	{Pkg: mod + "tfstate", Forbid: leafOf(mod+"store", mod+"procexec", mod+"words"),
		Why: "the Terraform state backend serves the store's port: no store implementation, no runner"},
	{Pkg: mod + "progress", Forbid: leafOf(mod + "words"), Why: "statuses and events are a leaf: the word sets at most (the read models import it)"},
	{Pkg: mod + "knit", Forbid: forbidAdapterOr(mod + "adapters"), Why: "the library takes its store and runners from its caller"},
	{Pkg: mod + "server", Forbid: forbidAdapterOr(mod+"cli", mod+"controller", mod+"controller/gitops", mod+"controller/drift", mod+"controller/ttl", mod+"controller/health", mod+"controller/promotion"),
		Why: "the API reaches the store and runners only through internal/knit, and the controllers only through interfaces (the run queue's Job and Outcome types at most)"},
	{Pkg: mod + "web", Forbid: forbidAdapterOr(mod+"cli", mod+"server"), Why: "the dashboard reaches the store and runners only through internal/knit"},
	{Pkg: mod + "cli", Forbid: forbidAdapterOr(mod + "adapters"), File: "adapters.go", Why: "the CLI names concrete adapters in one file only (itself or through internal/adapters)"},
	{Pkg: mod + "client", Forbid: func(p string) bool {
		return adapter(p) || strings.HasPrefix(p, "github.com/hashicorp/hcl")
	}, Why: "the HTTP client must not link the store, HCL or the runners"},
	controllerRule(mod + "controller"),
	controllerRule(mod + "controller/runqueue"),
	controllerRule(mod + "controller/gitops"),
	controllerRule(mod + "controller/drift"),
	controllerRule(mod + "controller/ttl"),
	controllerRule(mod + "controller/health"),
	{Pkg: mod + "kubecontroller", Forbid: forbidAdapterOr(mod+"adapters", mod+"server", mod+"web", mod+"cli", mod+"client", mod+"controller", mod+"controller/runqueue"),
		Why: "knit controller reconciles Environment objects through internal/knit; only the CLI (kubecli, in knit-kube) wires it to a store and runners"},
	controllerRule(mod + "controller/promotion"),
	controllerRule(mod + "controller/riverqueue"),
	controllerRule(mod + "controller/leader"),
	controllerRule(mod + "controller/queuetest"),
	controllerRule(mod + "controller/rollout"),
	{Pkg: mod + "ocisource", Forbid: func(p string) bool { return strings.HasPrefix(p, mod) },
		Why: "fetching OCI module packages is a leaf: the terraform runner decides what to do with them"},
	{Pkg: mod + "regsource", Forbid: func(p string) bool { return strings.HasPrefix(p, mod) },
		Why: "fetching registry modules is a leaf: the terraform runner decides what to do with them"},
	{Pkg: mod + "controller/clock", Forbid: func(p string) bool { return strings.HasPrefix(p, mod) },
		Why: "the controllers' clock is a leaf"},
	{Pkg: mod + "sse", Forbid: func(p string) bool { return strings.HasPrefix(p, mod) },
		Why: "the event-stream loop is a leaf: the API and the dashboard supply the run and its encoding"},
	{Pkg: mod + "engine", Forbid: func(p string) bool {
		return slices.Contains([]string{mod + "server", mod + "web", mod + "cli", mod + "knit", mod + "client"}, p)
	}, Why: "the engine knows nothing of the adapters above it"},
	{Pkg: mod + "health", Forbid: func(p string) bool {
		return adapter(p) || slices.Contains([]string{mod + "engine", mod + "knit", mod + "store", mod + "runner", mod + "server", mod + "web", mod + "cli", mod + "client"}, p)
	}, Why: "health checks are a leaf the engine calls"},
	{Pkg: mod + "engine", Forbid: func(p string) bool {
		return strings.HasPrefix(p, "github.com/open-policy-agent/") || p == mod+"policy"
	}, Why: "the engine judges plans through engine.Judge and links no policy language"},
	{Pkg: mod + "dag", Forbid: leafOf(), Why: "the graph and its walker know nothing of environments: a leaf"},
	{Pkg: mod + "spec", Forbid: func(p string) bool {
		return strings.HasPrefix(p, mod) && !strings.HasPrefix(p, mod+"spec/") && !slices.Contains([]string{mod + "dag", mod + "diag", mod + "schedule"}, p)
	}, Why: "the environment file knows its graph, diagnostics and schedules, nothing of runs, stores or runners"},
	{Pkg: mod + "runner", Forbid: forbidAdapterOr(mod+"store", mod+"engine", mod+"knit", mod+"policy", mod+"server", mod+"web", mod+"cli", mod+"client", mod+"controller", mod+"adapters"),
		Why: "the runner port drives one tool for one component: no store, no engine above it, no runner implementation"},
	{Pkg: mod + "policy", Forbid: func(p string) bool {
		return adapter(p) || slices.Contains([]string{mod + "server", mod + "web", mod + "cli", mod + "knit", mod + "client"}, p)
	}, Why: "policies judge the engine's plans: the engine's, spec's and runner's types at most"},
}

// controllerRule: knit serve's controllers act through the library; they
// know nothing of the HTTP server, the dashboard or the CLI that wires
// them, nor of a store or runner implementation.
func controllerRule(pkg string) rule {
	return rule{Pkg: pkg, Forbid: forbidAdapterOr(mod+"server", mod+"web", mod+"cli"),
		Why: "controllers act through internal/knit and know nothing of the adapters that wire them"}
}

// storeRule: the store's packages import nothing internal but their own,
// internal/keyfile (a leaf: the data dir's key, which the store seals
// secrets with) and internal/words (a leaf: the word sets its records use).
func storeRule(pkg string) rule {
	return rule{Pkg: pkg, Why: "the store imports nothing internal but its own packages, keyfile and words", Forbid: func(p string) bool {
		return strings.HasPrefix(p, mod) && p != mod+"store" && !strings.HasPrefix(p, mod+"store/") && p != mod+"keyfile" && p != mod+"words"
	}}
}

// leafOf forbids every internal package but allowed (and adapters).
func leafOf(allowed ...string) func(string) bool {
	return func(p string) bool { return strings.HasPrefix(p, mod) && !slices.Contains(allowed, p) }
}

func forbidAdapterOr(pkgs ...string) func(string) bool {
	return func(p string) bool { return adapter(p) || slices.Contains(pkgs, p) }
}

type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
	Standard   bool
}

// load lists every package of the module and their dependencies.
func load(t *testing.T) map[string]*pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Dir,GoFiles,Imports,Standard", "knit.dev/knit/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if !p.Standard {
			pkgs[p.ImportPath] = &p
		}
	}
	return pkgs
}

func TestImportRules(t *testing.T) {
	pkgs := load(t)
	all := rules
	for path := range pkgs {
		if path == mod+"store" || strings.HasPrefix(path, mod+"store/") {
			all = append(all, storeRule(path))
		}
	}
	for _, r := range all {
		for _, v := range violations(t, pkgs, r) {
			t.Errorf("%s (%s)", v, r.Why)
		}
	}
}

// violations lists the forbidden arrows of r: a file importing a forbidden
// package, or an import that leads to one (the path named).
func violations(t *testing.T, pkgs map[string]*pkg, r rule) []string {
	p, ok := pkgs[r.Pkg]
	if !ok {
		t.Fatalf("rule for %s: no such package (renamed? update the rule and docs/architecture.md)", r.Pkg)
	}
	var out []string
	seen := map[string]bool{}
	for _, f := range p.GoFiles {
		if f == r.File {
			continue
		}
		for _, imp := range fileImports(t, filepath.Join(p.Dir, f)) {
			if r.Forbid(imp) {
				out = append(out, r.Pkg+"/"+f+" imports "+imp)
				continue
			}
			if _, ok := r.Through[imp]; ok {
				continue
			}
			if path := reach(pkgs, imp, r, seen); path != nil {
				out = append(out, r.Pkg+"/"+f+" imports "+strings.Join(path, " → "))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// reach finds a path from imp to a package r forbids, not following the
// packages r lets through; nil when there is none.
func reach(pkgs map[string]*pkg, imp string, r rule, seen map[string]bool) []string {
	if r.Forbid(imp) {
		return []string{imp}
	}
	if _, ok := r.Through[imp]; ok || seen[imp] {
		return nil
	}
	seen[imp] = true
	p, ok := pkgs[imp]
	if !ok {
		return nil // the standard library
	}
	for _, next := range p.Imports {
		if path := reach(pkgs, next, r, seen); path != nil {
			return append([]string{imp}, path...)
		}
	}
	return nil
}

func fileImports(t *testing.T, file string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range f.Imports {
		p, _ := strconv.Unquote(s.Path.Value)
		out = append(out, p)
	}
	return out
}

// TestKnownExceptionsStillNeeded fails once an exception's TODO is done,
// so that the rule tightens with the code.
func TestKnownExceptionsStillNeeded(t *testing.T) {
	pkgs := load(t)
	for _, r := range rules {
		for through, why := range r.Through {
			strict := r
			strict.Through = map[string]string{}
			for k, v := range r.Through {
				if k != through {
					strict.Through[k] = v
				}
			}
			if len(violations(t, pkgs, strict)) == 0 {
				t.Errorf("%s no longer needs the exception for %s (%s): remove it from the rule and from docs/architecture.md", r.Pkg, through, why)
			}
		}
	}
}
