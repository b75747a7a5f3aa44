// Package policy judges a run's whole plan with policy as code: Rego v1
// files (OPA) in package knit whose rules deny, warn or require_approval
// produce decisions. It implements engine.Judge. Every failure (a parse
// error, an evaluation error, the time bound) is an error, never an empty
// verdict: a bad policy fails the run closed.
package policy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"knit.dev/knit/internal/diag"
	"knit.dev/knit/internal/engine"
)

// Bounds of one evaluation.
const (
	// DefaultTimeout bounds one evaluation of every policy on one plan.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxInput bounds the input document (JSON bytes): a plan
	// larger than this is refused rather than judged in unbounded memory.
	DefaultMaxInput = 64 << 20
	// DefaultMaxMemory bounds how much the process's heap may grow while
	// one evaluation runs (see watchMemory): a policy that builds huge
	// collections is stopped, not left to take the machine's memory.
	DefaultMaxMemory = 1 << 30
	// MaxFileSize bounds one policy file.
	MaxFileSize = 8 << 20
)

// decisionRules are the rules of package knit that make decisions.
var decisionRules = []string{engine.DecisionDeny, engine.DecisionWarn, engine.DecisionRequireApproval}

// copyPrefix names the copies of decision rules that say, per rule, which
// file and line a message comes from (see compile).
const copyPrefix = "__knit_rule_"

// Set is a compiled set of policies, ready to judge any number of plans
// concurrently.
type Set struct {
	// Files are the policy files loaded (tests excluded), sorted.
	Files []string
	// Timeout, MaxInput and MaxMemory bound one evaluation (defaults
	// above).
	Timeout   time.Duration
	MaxInput  int
	MaxMemory uint64

	query  rego.PreparedEvalQuery
	copies map[string]ruleRef // copy name → the rule it copies
}

// ruleRef is where one decision rule is written.
type ruleRef struct {
	kind, file string
	line       int
}

// Load reads every .rego file under dirs (recursively; *_test.rego files
// are tests, left out) and compiles them. A folder that does not exist is
// an error; a folder without policies is not (the set then decides
// nothing). Errors name file:line.
func Load(ctx context.Context, dirs ...string) (*Set, error) {
	folders := make([]Folder, len(dirs))
	for i, d := range dirs {
		folders[i] = Folder{Path: d}
	}
	return LoadFolders(ctx, folders...)
}

// Folder is a folder of policies and the name its files are shown under.
type Folder struct {
	Path string
	// Shown, when set, stands for Path in the names of its files, in
	// decisions and errors: a folder of a git commit's tree is shown by
	// its path in the repository (policies/x.rego), not in a cache.
	Shown string
}

// LoadFolders is Load with the names files are shown under.
func LoadFolders(ctx context.Context, folders ...Folder) (*Set, error) {
	return LoadSources(ctx, nil, folders...)
}

// Source is one policy file's text and the name it is shown under, kept
// apart from any folder: a policy set recorded in the store (a git
// commit's policies/, read when GitOps processed it).
type Source struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// LoadSources compiles sources together with the files of folders, as
// LoadFolders does. Errors name file:line.
func LoadSources(ctx context.Context, sources []Source, folders ...Folder) (*Set, error) {
	var files []string
	shown := map[string]string{}
	for _, f := range folders {
		fs, err := regoFiles([]string{f.Path}, false)
		if err != nil {
			if f.Shown != "" {
				err = errors.New(strings.ReplaceAll(err.Error(), f.Path, f.Shown))
			}
			return nil, err
		}
		for _, file := range fs {
			name := file
			if f.Shown != "" {
				if rel, err := filepath.Rel(f.Path, file); err == nil {
					name = filepath.Join(f.Shown, rel)
				}
			}
			shown[file] = name
			files = append(files, file)
		}
	}
	modules, err := parseShown(files, shown)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files)+len(sources))
	byName := make(map[string]*ast.Module, len(files)+len(sources))
	for _, f := range files {
		names = append(names, shown[f])
		byName[shown[f]] = modules[f]
	}
	var errs diag.Diagnostics
	for _, src := range sources {
		if _, dup := byName[src.Name]; dup {
			return nil, fmt.Errorf("policies: %s is given twice", src.Name)
		}
		m, err := ast.ParseModuleWithOpts(src.Name, src.Text, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			errs = append(errs, problems(err)...)
			continue
		}
		names = append(names, src.Name)
		byName[src.Name] = m
	}
	if len(errs) > 0 {
		return nil, &Error{Problems: errs}
	}
	if len(sources) > 0 {
		sort.Strings(names)
	}
	return compile(ctx, slices.Compact(names), byName)
}

// ReadFolder reads the policy files of f (tests left out, as Load does;
// read from inside the folder only) as sources named as f says, at most
// max bytes in all: a folder over it is an error, never a part of it.
func ReadFolder(f Folder, max int) ([]Source, error) {
	files, err := regoFiles([]string{f.Path}, false)
	if err != nil {
		return nil, err
	}
	var out []Source
	total := 0
	for _, file := range files {
		name := file
		if rel, err := filepath.Rel(f.Path, file); err == nil && f.Shown != "" {
			name = filepath.ToSlash(filepath.Join(f.Shown, rel))
		}
		text, err := readPolicy(file, name)
		if err != nil {
			return nil, err
		}
		if total += len(text); total > max {
			return nil, fmt.Errorf("policies: %s holds over %d KiB of policies, the bound of a recorded policy set", f.Shown, max>>10)
		}
		out = append(out, Source{Name: name, Text: string(text)})
	}
	return out, nil
}

// regoFiles lists the .rego files under dirs, sorted, with or without tests.
func regoFiles(dirs []string, tests bool) ([]string, error) {
	var files []string
	for _, dir := range dirs {
		info, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("policies: %w", err)
		}
		if !info.IsDir() {
			if strings.HasSuffix(dir, ".rego") {
				files = append(files, dir)
				continue
			}
			return nil, fmt.Errorf("policies: %s is not a folder of .rego files", dir)
		}
		root, err := filepath.EvalSymlinks(dir)
		if err != nil {
			return nil, fmt.Errorf("policies: %w", err)
		}
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(path, ".rego") {
				return nil
			}
			if !tests && strings.HasSuffix(path, "_test.rego") {
				return nil
			}
			if d.Type()&fs.ModeSymlink != 0 {
				if err := inside(dir, root, path); err != nil {
					return err
				}
			}
			files = append(files, path)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("policies in %s: %w", dir, err)
		}
	}
	sort.Strings(files)
	return slices.Compact(files), nil
}

// inside checks that the symbolic link path resolves to a file under
// root, the real path of the folder dir: a policy folder is read from
// inside only, so that a repository's policies/ cannot make the server
// read (and show, in a parse error) a file of its own.
func inside(dir, root, path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("policies: %s is a symbolic link that does not resolve: %w", path, err)
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return &Error{Problems: diag.Diagnostics{{Severity: diag.Error, Pos: diag.Pos{File: path},
			Message: fmt.Sprintf("a symbolic link to a file outside its folder %s; policies are read only from inside their folder", dir)}}}
	}
	return nil
}

// readPolicy reads one policy file, refusing one over MaxFileSize (a
// repository's file must not make knit read and parse gigabytes).
func readPolicy(file, name string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("policies: %w", err)
	}
	defer f.Close()
	text, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("policies: %w", err)
	}
	if len(text) > MaxFileSize {
		return nil, fmt.Errorf("policies: %s is over %d MiB, the bound of a policy file", name, MaxFileSize>>20)
	}
	return text, nil
}

// parse parses files as Rego v1, reporting every error with file:line.
func parse(files []string) (map[string]*ast.Module, error) {
	return parseShown(files, nil)
}

// parseShown is parse, each file named as shown says (default: its path).
func parseShown(files []string, shown map[string]string) (map[string]*ast.Module, error) {
	modules := make(map[string]*ast.Module, len(files))
	var errs diag.Diagnostics
	for _, f := range files {
		name := f
		if s, ok := shown[f]; ok {
			name = s
		}
		text, err := readPolicy(f, name)
		if err != nil {
			return nil, err
		}
		m, err := ast.ParseModuleWithOpts(name, string(text), ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			errs = append(errs, problems(err)...)
			continue
		}
		modules[f] = m
	}
	if len(errs) > 0 {
		return nil, &Error{Problems: errs}
	}
	return modules, nil
}

// capabilities are OPA's built-ins minus those that reach outside the
// evaluation: the network (http.send, net.lookup_ip_addr) and the
// process's environment variables (opa.runtime), which may hold secrets.
func capabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	denied := map[string]bool{"http.send": true, "net.lookup_ip_addr": true, "opa.runtime": true}
	caps.Builtins = slices.DeleteFunc(slices.Clone(caps.Builtins), func(b *ast.Builtin) bool { return denied[b.Name] })
	return caps
}

// compile compiles modules and prepares the one query that judges a plan.
// Every decision rule of package knit gets a copy of its own name beside
// it, so that each message can be traced to the file and line of the rule
// that made it; the original rules stay, for policies that refer to them.
func compile(ctx context.Context, files []string, modules map[string]*ast.Module) (*Set, error) {
	copies := map[string]ruleRef{}
	knitPkg := ast.MustParseRef("data.knit")
	for _, f := range files {
		m := modules[f]
		if !m.Package.Path.Equal(knitPkg) {
			continue
		}
		var added []*ast.Rule
		for _, r := range m.Rules {
			name := r.Head.Name.String()
			if len(r.Head.Reference) == 1 {
				name = r.Head.Reference[0].Value.String()
			}
			if !slices.Contains(decisionRules, name) || len(r.Head.Reference) > 1 {
				continue
			}
			if r.Head.RuleKind() != ast.MultiValue {
				return nil, &Error{Problems: diag.Diagnostics{{Severity: diag.Error, Pos: diag.Pos{File: f, Line: r.Location.Row},
					Message: fmt.Sprintf("%s must be a set of messages (%s contains msg if { … })", name, name)}}}
			}
			cp := r.Copy()
			cn := fmt.Sprintf("%s%d", copyPrefix, len(copies))
			cp.Head.Name = ast.Var(cn)
			cp.Head.Reference = ast.Ref{ast.VarTerm(cn)}
			copies[cn] = ruleRef{kind: name, file: f, line: r.Location.Row}
			added = append(added, cp)
		}
		m.Rules = append(m.Rules, added...)
	}
	c := ast.NewCompiler().WithCapabilities(capabilities())
	c.Compile(modules)
	if c.Failed() {
		// A copy's errors are its rule's, reported already under the rule's own name.
		all := problems(c.Errors)
		ps := slices.DeleteFunc(slices.Clone(all), func(p diag.Diagnostic) bool { return strings.Contains(p.Message, copyPrefix) })
		if len(ps) == 0 {
			ps = all
		}
		return nil, &Error{Problems: ps}
	}
	q, err := rego.New(rego.Query("data.knit"), rego.Compiler(c), rego.StrictBuiltinErrors(true)).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("prepare the policies: %w", &Error{Problems: problems(err)})
	}
	return &Set{Files: files, Timeout: DefaultTimeout, MaxInput: DefaultMaxInput, MaxMemory: DefaultMaxMemory, query: q, copies: copies}, nil
}

// Judge builds the input of p and evaluates it (engine.Judge).
func (s *Set) Judge(ctx context.Context, p *engine.EnvPlan) (*engine.Verdict, error) {
	in := BuildInput(p)
	ds, err := s.Evaluate(ctx, in)
	if err != nil {
		return nil, err
	}
	return &engine.Verdict{Decisions: ds, Input: in}, nil
}

// Evaluate evaluates every policy on one input document and returns the
// decisions, ordered by kind, file, line and message. It is bounded by
// s.Timeout (and ctx) and refuses an input over s.MaxInput bytes of JSON.
func (s *Set) Evaluate(ctx context.Context, input any) ([]engine.Decision, error) {
	raw, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("encode the policy input: %w", err)
	}
	if s.MaxInput > 0 && len(raw) > s.MaxInput {
		return nil, fmt.Errorf("the policy input is %d bytes, over the bound of %d", len(raw), s.MaxInput)
	}
	v, err := ast.ValueFromReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("decode the policy input: %w", err)
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ctx, stop := watchMemory(ctx, cmp.Or(s.MaxMemory, DefaultMaxMemory))
	defer stop()
	rs, err := s.query.Eval(ctx, rego.EvalParsedInput(v))
	if err != nil {
		if errors.Is(context.Cause(ctx), errMemoryBound) {
			return nil, fmt.Errorf("evaluation stopped: the heap grew by more than %d MiB (the memory bound; does a policy build a large collection?): %s", cmp.Or(s.MaxMemory, DefaultMaxMemory)>>20, strings.Join(located(err), "; "))
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("evaluation stopped after %s (the time bound; does a policy loop over a large range?): %s", timeout, strings.Join(located(err), "; "))
		}
		return nil, fmt.Errorf("evaluation failed: %s", strings.Join(located(err), "; "))
	}
	if len(rs) == 0 || len(rs[0].Expressions) == 0 {
		return nil, nil // no package knit: nothing decided
	}
	doc, _ := rs[0].Expressions[0].Value.(map[string]any)
	var out []engine.Decision
	for name, ref := range s.copies {
		msgs, ok := doc[name].([]any)
		if !ok {
			continue
		}
		for _, m := range msgs {
			d, err := decision(ref, m)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
	}
	sortDecisions(out)
	return out, nil
}

// decision reads one message of a rule: a string, or an object with msg
// and, optionally, component and resource.
func decision(ref ruleRef, m any) (engine.Decision, error) {
	d := engine.Decision{Kind: ref.kind, File: ref.file, Line: ref.line, Rule: ref.kind}
	switch v := m.(type) {
	case string:
		d.Message = v
	case map[string]any:
		msg, _ := v["msg"].(string)
		if msg == "" {
			return d, fmt.Errorf("%s:%d: a %s message must be a string or an object with a string msg, got %v", ref.file, ref.line, ref.kind, m)
		}
		d.Message = msg
		d.Component, _ = v["component"].(string)
		d.Resource, _ = v["resource"].(string)
	default:
		return d, fmt.Errorf("%s:%d: a %s message must be a string or an object with a string msg, got %v", ref.file, ref.line, ref.kind, m)
	}
	return d, nil
}

func sortDecisions(ds []engine.Decision) {
	order := map[string]int{engine.DecisionDeny: 0, engine.DecisionRequireApproval: 1, engine.DecisionWarn: 2}
	sort.Slice(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.Kind != b.Kind {
			return order[a.Kind] < order[b.Kind]
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Component != b.Component {
			return a.Component < b.Component
		}
		return a.Message < b.Message
	})
}
