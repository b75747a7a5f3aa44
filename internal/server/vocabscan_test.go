package server_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// wordSetExceptions are the closed word types declared outside
// internal/words on purpose, by package directory (from the module root)
// and type, each with why it is not one of the vocabulary's sets: none is
// a word of the API, of knit.yaml or of a notification.
var wordSetExceptions = map[string]string{
	"internal/bench.Shape":            "a benchmark generator's shape of environment, never written by knit",
	"internal/dag.Status":             "a graph walk's vertex outcome, inside the engine; the engine reports component statuses",
	"internal/diag.Severity":          "a diagnostic's error or warning, the environment file checker's (knit validate), not an API word",
	"internal/engine.Rollout":         "what follows a failed verification, the engine's instruction to its caller; people see the environment status and run kind it leads to",
	"internal/health.Phase":           "one measurement's phase inside a health check (Argo Rollouts' words); the API shows the verdict",
	"internal/health.Reason":          "why a check got its verdict, kept in a health record; the API shows the verdict and a message",
	"internal/spec.SourceKind":        "how a module's source address is fetched, derived from the address",
	"internal/store.EnvironmentOrder": "a store query's sort order; the dashboard maps its own URL words onto it",
	"internal/view.EnvironmentOrder":  "the environments list's sort order (the store's, mapped by the library); the dashboard maps its own URL words onto it",
	"internal/web.Tone":               "a dashboard badge's colour family (a CSS class)",
	"internal/loadtest.clusterFailed": "an error type, no word set (listed in case it gains constants)",
}

// TestNoWordSetOutsideWords: a closed word set is declared once, in
// internal/words. It fails for a `type X string` with constants of that
// type in any other package of internal/ or cmd/ (tests aside) that
// wordSetExceptions does not list with a reason, and for a constant of a
// words type (or an alias of one) given its own string literal outside
// internal/words, as a component status added in the engine would be.
func TestNoWordSetOutsideWords(t *testing.T) {
	pkgs := parseTree(t, "../..", "internal", "cmd")
	aliases := wordAliases(pkgs)
	for dir, files := range pkgs {
		if dir == "internal/words" {
			continue
		}
		for typ, n := range closedTypes(files) {
			key := dir + "." + typ
			if _, ok := wordSetExceptions[key]; !ok && n > 0 {
				t.Errorf("%s declares the closed word set %s (%d constants): type it in internal/words and alias it here, or list it in wordSetExceptions with why it is no word of the API", dir, typ, n)
			}
		}
		for _, at := range literalWordConstants(files, aliases) {
			t.Errorf("%s: a constant of a words type with its own literal: declare it in internal/words", at)
		}
	}
	for key := range wordSetExceptions {
		dir, typ, _ := strings.Cut(key, ".")
		if _, ok := closedTypes(pkgs[dir])[typ]; !ok {
			t.Errorf("wordSetExceptions lists %s, which is no longer declared: remove it", key)
		}
	}
}

// parsedFile is one parsed source file with the file set that positions it.
type parsedFile struct {
	fset *token.FileSet
	f    *ast.File
}

// parseTree parses every non-test Go file under root's subdirectories
// subs, by package directory relative to root.
func parseTree(t *testing.T, root string, subs ...string) map[string][]parsedFile {
	t.Helper()
	out := map[string][]parsedFile{}
	fset := token.NewFileSet()
	for _, sub := range subs {
		err := filepath.WalkDir(filepath.Join(root, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			f, err := parser.ParseFile(fset, p, nil, 0)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			rel = filepath.ToSlash(rel)
			out[rel] = append(out[rel], parsedFile{fset, f})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(out) < 20 {
		t.Fatalf("parsed only %d packages under %s", len(out), root)
	}
	return out
}

// closedTypes are the package's defined string types (`type X string`,
// not aliases), each with how many constants of it the package declares.
func closedTypes(files []parsedFile) map[string]int {
	types := map[string]int{}
	for _, pf := range files {
		for _, ts := range typeSpecs(pf.f) {
			if id, ok := ts.Type.(*ast.Ident); ok && id.Name == "string" && !ts.Assign.IsValid() {
				types[ts.Name.Name] += 0
			}
		}
	}
	for _, pf := range files {
		for _, vs := range constSpecs(pf.f) {
			if id, ok := vs.Type.(*ast.Ident); ok {
				if _, closed := types[id.Name]; closed {
					types[id.Name] += len(vs.Names)
				}
			}
		}
	}
	return types
}

// wordAliases are the types, as "package.Type", that name a type of
// internal/words: words.X itself, and every alias of one, through other
// aliases (engine.Status = progress.Status = words.ComponentStatus). A
// package is known by its name, which is its directory's here.
func wordAliases(pkgs map[string][]parsedFile) map[string]bool {
	named := map[string]bool{}
	for dir, files := range pkgs {
		if dir != "internal/words" {
			continue
		}
		for _, pf := range files {
			for _, ts := range typeSpecs(pf.f) {
				named["words."+ts.Name.Name] = true
			}
		}
	}
	for grew := true; grew; {
		grew = false
		for _, files := range pkgs {
			for _, pf := range files {
				for _, ts := range typeSpecs(pf.f) {
					key := pf.f.Name.Name + "." + ts.Name.Name
					if ts.Assign.IsValid() && !named[key] && named[typeName(pf.f, ts.Type)] {
						named[key], grew = true, true
					}
				}
			}
		}
	}
	return named
}

// typeName is e as "package.Type" seen from f ("" when it is neither a
// local type name nor a qualified one).
func typeName(f *ast.File, e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return f.Name.Name + "." + e.Name
	case *ast.SelectorExpr:
		if pkg, ok := e.X.(*ast.Ident); ok {
			return pkg.Name + "." + e.Sel.Name
		}
	}
	return ""
}

// literalWordConstants are the positions of the package's constants whose
// type names a words type (wordAliases) and whose value is a string
// literal of their own.
func literalWordConstants(files []parsedFile, aliases map[string]bool) []string {
	var out []string
	for _, pf := range files {
		for _, vs := range constSpecs(pf.f) {
			if vs.Type == nil || !aliases[typeName(pf.f, vs.Type)] {
				continue
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					out = append(out, pf.fset.Position(lit.Pos()).String())
				}
			}
		}
	}
	return slices.Sorted(slices.Values(out))
}

// typeSpecs are f's top-level type declarations.
func typeSpecs(f *ast.File) []*ast.TypeSpec { return specs[*ast.TypeSpec](f, token.TYPE) }

// constSpecs are f's top-level constant declarations.
func constSpecs(f *ast.File) []*ast.ValueSpec { return specs[*ast.ValueSpec](f, token.CONST) }

// specs are the specs of f's top-level declarations of tok.
func specs[S ast.Spec](f *ast.File, tok token.Token) []S {
	var out []S
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == tok {
			for _, s := range gd.Specs {
				out = append(out, s.(S))
			}
		}
	}
	return out
}
