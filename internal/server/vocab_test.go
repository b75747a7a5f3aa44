package server_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/store"
)

// wordSet is one closed set of words knit writes on the wire: where its
// Go constants are declared (package dir and name; the constants of type
// typ, or, for a set of untyped constants, those whose name starts with
// prefix), the list the code iterates (nil: none), and the enum of the
// OpenAPI document that names it (a schema, or schema.property).
type wordSet struct {
	dir, pkg, typ, prefix string
	listed                []string
	at                    string
}

// wordSets is every word set of the API. A new set goes here.
var wordSets = []wordSet{
	{dir: "../store", pkg: "store", typ: "RunKind", listed: words(store.RunKinds()), at: "RunKind"},
	{dir: "../store", pkg: "store", typ: "RunStatus", listed: words(store.RunStatuses()), at: "RunStatus"},
	{dir: "../store", pkg: "store", typ: "EnvStatus", listed: words(store.EnvStatuses()), at: "EnvStatus"},
	{dir: "../engine", pkg: "engine", typ: "Reason", listed: words(engine.Reasons()), at: "ReasonCode"},
	{dir: "../progress", pkg: "progress", typ: "EventKind", at: "EventKind"},
	{dir: "../health", pkg: "health", typ: "Verdict", at: "Verdict"},
	{dir: "../words", pkg: "words", typ: "Verification", at: "Revision.verification"},
	{dir: "../words", pkg: "words", typ: "ApprovalStatus", at: "Approval.status"},
	{dir: "../words", pkg: "words", typ: "ApprovalStatus", at: "ChangeSet.status"},
	{dir: "../words", pkg: "words", typ: "StageState", at: "StageRelease.state"},
	{dir: "../words", pkg: "words", typ: "WaitReason", at: "Stage.waiting.reason"},
	{dir: "../words", pkg: "words", typ: "DecisionKind", at: "PolicyDecision.kind"},
	{dir: "../words", pkg: "words", typ: "PreviewStatus", at: "Preview.status"},
	{dir: "../words", pkg: "words", typ: "PreviewChange", at: "Preview.change"},
}

// TestEveryWordSetIsItsOpenAPIEnum: for every word set, the constants its
// package declares (read from the source, so a new one cannot hide), the
// list the code iterates, and the OpenAPI document's enum are the same
// words.
func TestEveryWordSetIsItsOpenAPIEnum(t *testing.T) {
	doc, _ := loadDoc(t)
	for _, set := range wordSets {
		name := set.pkg + "." + set.typ + set.prefix + "*"
		if set.typ != "" {
			name = set.pkg + "." + set.typ
		}
		t.Run(set.at, func(t *testing.T) {
			enum, ok := enumAt(doc, set.at)
			if !ok {
				t.Fatalf("the OpenAPI document has no enum at %s", set.at)
			}
			declared := declaredConstants(t, set)
			slices.Sort(declared)
			slices.Sort(enum)
			if set.listed != nil {
				listed := slices.Sorted(slices.Values(set.listed))
				if !slices.Equal(declared, listed) {
					t.Errorf("%s: declared %q, its list has %q", name, declared, listed)
				}
			}
			if !slices.Equal(declared, enum) {
				t.Errorf("%s: declared %q, the OpenAPI enum at %s is %q", name, declared, set.at, enum)
			}
		})
	}
}

// enumAt is the enum of the schema (or "schema.property", nested) at.
func enumAt(doc *openapi3.T, at string) ([]string, bool) {
	path := strings.Split(at, ".")
	s := doc.Components.Schemas[path[0]]
	for _, prop := range path[1:] {
		if s == nil || s.Value == nil {
			return nil, false
		}
		s = s.Value.Properties[prop]
	}
	if s == nil || s.Value == nil {
		return nil, false
	}
	var enum []string
	for _, v := range s.Value.Enum {
		enum = append(enum, v.(string))
	}
	return enum, len(enum) > 0
}

// declaredConstants are the values of set's constants, each a string literal.
func declaredConstants(t *testing.T, set wordSet) []string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, set.dir, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range pkgs[set.pkg].Files {
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
				for _, s := range gd.Specs {
					out = append(out, specValues(t, fset, s.(*ast.ValueSpec), set)...)
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("found no constant of %s%s in %s", set.typ, set.prefix, set.dir)
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// specValues are the values vs declares that belong to set.
func specValues(t *testing.T, fset *token.FileSet, vs *ast.ValueSpec, set wordSet) []string {
	var out []string
	for i, n := range vs.Names {
		if set.typ != "" {
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != set.typ {
				continue
			}
		} else if !strings.HasPrefix(n.Name, set.prefix) || vs.Type != nil || i >= len(vs.Values) {
			continue
		}
		switch v := vs.Values[i].(type) {
		case *ast.BasicLit:
			s, _ := strconv.Unquote(v.Value)
			out = append(out, s)
		case *ast.Ident: // another constant of the set (ChangeSetPending = ApprovalPending)
		default:
			if set.typ != "" {
				t.Fatalf("%s: a %s constant that is not a string literal", fset.Position(v.Pos()), set.typ)
			}
		}
	}
	return out
}

func words[S ~string](ss []S) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
