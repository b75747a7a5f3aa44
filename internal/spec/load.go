package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"knit.dev/knit/internal/diag"
)

// MaxFileSize bounds what Load reads, so a hostile file cannot exhaust memory.
const MaxFileSize = 16 << 20

// Load reads, parses and validates the Environment file at path. It returns
// the environment (nil only when the file cannot be parsed at all) and every
// problem found; callers refuse to act when diags.HasErrors().
func Load(path string) (*Environment, diag.Diagnostics) {
	return LoadWith(path, Options{})
}

// LoadWith is Load with what the caller knows beyond the file (Options).
func LoadWith(path string, opts Options) (*Environment, diag.Diagnostics) {
	data, err := readFile(path)
	if err != nil {
		return nil, diag.Diagnostics{{Severity: diag.Error, Pos: diag.Pos{File: path}, Message: err.Error()}}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	return ParseWith(path, filepath.Dir(abs), "", data, opts)
}

// CheckTemplate validates the template file at path on its own: as an
// environment that uses it with no parameters (the defaults, and for a
// required parameter a placeholder of its type: its first enum value, "x",
// 0, false, an empty list or map). The environment returned stands in for
// the template; it is never to be applied.
func CheckTemplate(path string, opts Options) (*Environment, diag.Diagnostics) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, diag.Diagnostics{{Severity: diag.Error, Pos: diag.Pos{File: path}, Message: err.Error()}}
	}
	env := &Environment{APIVersion: APIVersionKnit, Kind: KindEnvironment, File: path, Dir: filepath.Dir(abs), opts: opts,
		pos: map[string]diag.Pos{"": {File: path, Line: 1, Col: 1}}, bad: map[string]bool{}, selfCheck: true,
		Spec: EnvSpec{TeamName: "template", EnvName: "check", Template: &TemplateRef{Path: "./" + filepath.Base(abs)}}}
	for _, k := range []string{"spec", "spec.teamName", "spec.envName", "spec.template"} {
		env.pos[k] = env.pos[""] // written by no one: the template stands for them
	}
	diags, ok := build(env, nil)
	if ok {
		diags = append(diags, substituteZLocals(env)...)
		inheritKubeconfig(env)
		diags = append(diags, validate(env)...)
	}
	placeheld(env, diags)
	diags.Sort()
	return env, diags
}

// placeheld makes a warning of each error of a template checked on its own
// that is about a value made from a placeholder (a module folder
// "app-x" that does not exist, a URL "x"), rather than about the
// template's own text: every environment using the template checks the
// value it gives.
func placeheld(env *Environment, diags diag.Diagnostics) {
	for i, d := range diags {
		names := env.placed[fmt.Sprintf("%s:%d", d.Pos.File, d.Pos.Line)]
		if d.Severity != diag.Error || len(names) == 0 || structural(d) {
			continue
		}
		refs := make([]string, len(names))
		for j, n := range names {
			refs[j] = "${param." + n + "}"
		}
		note := "made with a placeholder for " + strings.Join(refs, ", ") + "; each environment using the template is checked with its own value"
		diags[i].Severity, diags[i].Hint = diag.Warning, strings.TrimPrefix(d.Hint+"; "+note, "; ")
	}
}

// structural reports whether d is about the text's shape (a field that
// does not exist or is missing), whatever the values in it.
func structural(d diag.Diagnostic) bool {
	return strings.HasPrefix(d.Message, "unknown field") || d.Message == "missing required field"
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read environment file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("cannot read environment file: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("environment file is larger than %d MiB", MaxFileSize>>20)
	}
	return data, nil
}

// Parse parses and validates an Environment document. name is what positions
// call the file; dir is the folder relative paths resolve against, and
// that no local path may leave.
func Parse(name, dir string, data []byte) (*Environment, diag.Diagnostics) {
	return ParseIn(name, dir, "", data)
}

// ParseIn is Parse for a document read from inside a larger tree: relative
// paths resolve against dir, and no local path may leave root (GitOps: the
// commit's tree), symlinks followed. An empty root means dir.
func ParseIn(name, dir, root string, data []byte) (*Environment, diag.Diagnostics) {
	return ParseWith(name, dir, root, data, Options{})
}

// ParseWith is ParseIn with what the caller knows beyond the file (Options).
func ParseWith(name, dir, root string, data []byte, opts Options) (*Environment, diag.Diagnostics) {
	env, diags := decode(name, data)
	if env == nil {
		diags.Sort()
		return nil, diags
	}
	env.Dir, env.Root, env.Text, env.opts = dir, root, data, opts
	if env.Kind != KindEnvironment {
		// Another kind of document: checking it as an environment would only add noise.
		// An Environment with a wrong apiVersion is still checked, so every problem shows at once.
		if slices.Contains(kinds, env.Kind) {
			// A kind knit reads elsewhere: its fields are not an environment's, only what it is matters.
			diags = slices.DeleteFunc(diags, func(d diag.Diagnostic) bool { return d.Field != "kind" })
		}
		diags.Sort()
		return env, diags
	}
	built, ok := build(env, nil)
	diags = append(diags, built...)
	if !ok {
		// No components to check: validating would only add noise.
		diags.Sort()
		return env, diags
	}
	diags = append(diags, substituteZLocals(env)...)
	inheritKubeconfig(env)
	diags = append(diags, validate(env)...)
	diags.Sort()
	return env, diags
}

// decode turns the bytes into an Environment, collecting every structural problem.
func decode(name string, data []byte) (*Environment, diag.Diagnostics) {
	root, extra, err := firstDocument(data)
	if err != nil {
		return nil, diag.Diagnostics{syntaxError(name, data, err)}
	}
	d := newDecoder(name, root)
	if root.Kind != yaml.MappingNode {
		// A scalar, a list, or null: nothing here is an environment.
		d.errorf(root, "", "an environment file is a mapping that starts with apiVersion: and kind:",
			"expected a mapping, found %s", kindName(root))
		return nil, d.diags
	}
	env := &Environment{File: name}
	d.pos[""] = d.at(root)
	d.mapping(root, "", false, map[string]field{
		"apiVersion": d.str(&env.APIVersion),
		"kind":       d.str(&env.Kind),
		"metadata":   d.metadata(&env.Metadata),
		"spec":       d.envSpec(&env.Spec),
		// Kubernetes adds status to objects it returns; a file exported from a cluster may carry it.
		"status": func(*yaml.Node, string) {},
	})
	env.pos = d.pos
	env.bad = d.bad
	d.checkHeader(root, env)
	switch {
	case extra.err != nil:
		d.diags = append(d.diags, syntaxError(name, data, extra.err))
	case extra.line > 0:
		d.errorf(&yaml.Node{Line: extra.line, Column: 1}, "", "put each environment in its own file",
			"a second YAML document: an environment file holds exactly one")
	}
	return env, d.diags
}

// extraDoc is what follows the first document: the line a second document
// starts on, or the error that stopped it from parsing.
type extraDoc struct {
	line int
	err  error
}

// firstDocument parses data and returns the first non-empty document's root,
// and what follows it: one file holds one environment.
func firstDocument(data []byte) (root *yaml.Node, extra extraDoc, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if root != nil {
				return root, extraDoc{err: err}, nil
			}
			return nil, extraDoc{}, err
		}
		if len(doc.Content) == 0 {
			continue
		}
		if root != nil {
			return root, extraDoc{line: doc.Content[0].Line}, nil
		}
		root = doc.Content[0]
	}
	if root == nil {
		return nil, extraDoc{}, errEmpty
	}
	return root, extraDoc{}, nil
}

var errEmpty = errors.New("the file is empty")

// yamlPrefix matches how yaml.v3 starts its messages: "yaml: line N: ".
var yamlPrefix = regexp.MustCompile(`^yaml: (?:line (\d+): )?`)

// syntaxError turns a YAML parse error into a diagnostic on the line where
// the problem is. yaml.v3's own "line N" is where the enclosing block starts
// (and, for parser errors, counted from 0), often lines above the mistake.
func syntaxError(name string, data []byte, err error) diag.Diagnostic {
	msg := err.Error()
	pos := diag.Pos{File: name}
	if m := yamlPrefix.FindStringSubmatch(msg); m != nil {
		pos.Line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
	}
	hint := "check indentation and quoting around this line"
	if errors.Is(err, errEmpty) {
		hint = "an environment file starts with apiVersion: and kind:"
	} else if line := failingLine(data, err.Error()); line > 0 {
		pos.Line = line
	}
	return diag.Diagnostic{Severity: diag.Error, Pos: pos, Message: "invalid YAML: " + msg, Hint: hint}
}

// failingLine returns the first line n such that the file's first n lines
// fail to parse with the same message as the whole file: the line on which
// the parser gave up. Parsing is a left-to-right stream, so a prefix fails
// that way exactly when it holds that line; a binary search needs about
// log2(lines) parses. It returns 0 when it cannot tell.
func failingLine(data []byte, msg string) int {
	var ends []int // ends[i] is the offset just past line i+1
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	fails := func(lines int) bool {
		err := parseAll(data[:ends[lines-1]])
		return err != nil && err.Error() == msg
	}
	if !fails(len(ends)) {
		return 0
	}
	lo, hi := 1, len(ends)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if fails(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// parseAll returns the first error parsing data document by document.
func parseAll(data []byte) error {
	_, extra, err := firstDocument(data)
	if err != nil {
		return err
	}
	return extra.err
}
