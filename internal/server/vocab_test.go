package server_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	wd "knit.dev/knit/internal/words"
)

// wordSet is one closed set of words knit writes on the wire, typed
// once in internal/words: its type there (its constants are read from
// the source, so a new one cannot hide), the list the code iterates (nil:
// none), and where its words are written down for clients: the enum of
// the OpenAPI document that names it (at: a schema, or schema.property),
// or a table of the docs (doc: a file and the heading of the table whose
// first column lists them).
type wordSet struct {
	typ    string
	listed []string
	at     string
	doc    [2]string
}

// wordSets is every word set of the API and of knit.yaml. A new set goes
// here (and TestNoWordSetOutsideWords finds one declared elsewhere).
var wordSets = []wordSet{
	{typ: "RunKind", listed: words(wd.RunKinds()), at: "RunKind"},
	{typ: "RunStatus", listed: words(wd.RunStatuses()), at: "RunStatus"},
	{typ: "EnvStatus", listed: words(wd.EnvStatuses()), at: "EnvStatus"},
	{typ: "ComponentStatus", listed: words(wd.ComponentStatuses()), at: "ComponentStatus"},
	{typ: "Reason", listed: words(wd.Reasons()), at: "ReasonCode"},
	{typ: "EventKind", listed: words(wd.EventKinds()), at: "EventKind"},
	{typ: "Verdict", listed: words(wd.Verdicts()), at: "Verdict"},
	{typ: "PlanAction", listed: words(wd.PlanActions()), at: "PlanAction"},
	{typ: "ErrorCode", listed: words(wd.ErrorCodes()), at: "Error.error.code"},
	{typ: "Verification", at: "Revision.verification"},
	{typ: "ApprovalStatus", at: "Approval.status"},
	{typ: "ApprovalStatus", at: "ChangeSet.status"},
	{typ: "StageState", at: "StageRelease.state"},
	{typ: "WaitReason", at: "Stage.waiting.reason"},
	{typ: "DecisionKind", at: "PolicyDecision.kind"},
	{typ: "PreviewStatus", at: "Preview.status"},
	{typ: "PreviewChange", at: "Preview.change"},
	{typ: "NotifyKind", listed: words(wd.NotifyKinds()), doc: [2]string{"../../docs/server.md", "### Events"}},
	{typ: "Role", listed: words(wd.Roles()), doc: [2]string{"../../docs/server.md", "## Token roles"}},
}

// TestEveryWordSetIsItsOpenAPIEnum: for every word set, the constants
// internal/words declares of its type, the list the code iterates, and
// the OpenAPI document's enum (or the docs' table) are the same words.
func TestEveryWordSetIsItsOpenAPIEnum(t *testing.T) {
	doc, _ := loadDoc(t)
	for _, set := range wordSets {
		name := "words." + set.typ
		where := set.at
		if where == "" {
			where = set.doc[0] + " " + set.doc[1]
		}
		t.Run(where, func(t *testing.T) {
			var written []string
			if set.at != "" {
				enum, ok := enumAt(doc, set.at)
				if !ok {
					t.Fatalf("the OpenAPI document has no enum at %s", set.at)
				}
				written = enum
			} else {
				written = docTable(t, set.doc[0], set.doc[1])
			}
			declared := declaredConstants(t, set)
			slices.Sort(written)
			if set.listed != nil {
				listed := slices.Sorted(slices.Values(set.listed))
				if !slices.Equal(declared, listed) {
					t.Errorf("%s: declared %q, its list has %q", name, declared, listed)
				}
			}
			if !slices.Equal(declared, written) {
				t.Errorf("%s: declared %q, %s has %q", name, declared, where, written)
			}
		})
	}
}

// TestStatusWordsAreDocumented: docs/server.md's "Status words" names
// every environment, component and run status in backticks (an
// environment's "" is its "(none)" row).
func TestStatusWordsAreDocumented(t *testing.T) {
	section := docSection(t, "../../docs/server.md", "## Status words")
	sets := [][]string{words(wd.EnvStatuses()), words(wd.ComponentStatuses())}
	for _, set := range sets {
		for _, w := range set {
			if w != "" && !strings.Contains(section, "`"+w+"`") {
				t.Errorf("docs/server.md's Status words do not name `%s`", w)
			}
		}
	}
}

// docSection is the text under heading in the Markdown file, up to the
// next heading of its level or above.
func docSection(t *testing.T, file, heading string) string {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(text), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no heading %q", file, heading)
	}
	level, _, _ := strings.Cut(heading, " ")
	var b strings.Builder
	for line := range strings.Lines(after) {
		if h, _, ok := strings.Cut(line, " "); ok && strings.Trim(h, "#") == "" && len(h) <= len(level) {
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

// docTable is the first column's words (each in backticks) of the table
// under heading in the Markdown file.
func docTable(t *testing.T, file, heading string) []string {
	t.Helper()
	var out []string
	for line := range strings.Lines(docSection(t, file, heading)) {
		if m := firstCell.FindStringSubmatch(line); m != nil {
			out = append(out, m[1])
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s: no table under %q", file, heading)
	}
	return out
}

var firstCell = regexp.MustCompile("^\\| `([^`]+)` \\|")

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
	pkgs, err := parser.ParseDir(fset, "../words", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range pkgs["words"].Files {
		for _, vs := range constSpecs(f) {
			out = append(out, specValues(t, fset, vs, set)...)
		}
	}
	if len(out) == 0 {
		t.Fatalf("found no constant of words.%s", set.typ)
	}
	return slices.Compact(slices.Sorted(slices.Values(out)))
}

// specValues are the values vs declares that belong to set.
func specValues(t *testing.T, fset *token.FileSet, vs *ast.ValueSpec, set wordSet) []string {
	var out []string
	if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != set.typ {
		return nil
	}
	for _, v := range vs.Values {
		switch v := v.(type) {
		case *ast.BasicLit:
			s, _ := strconv.Unquote(v.Value)
			out = append(out, s)
		case *ast.Ident: // another constant of the set
		default:
			t.Fatalf("%s: a %s constant that is not a string literal", fset.Position(v.Pos()), set.typ)
		}
	}
	return out
}

// words is ss as plain strings.
func words[S ~string](ss []S) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
