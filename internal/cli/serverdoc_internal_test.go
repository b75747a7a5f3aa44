package cli

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestServerDocCoversEveryKeyAndEvent keeps docs/server.md true: every key
// knit.yaml takes (read from serveConfig's yaml tags), every notification
// event kind (internal/notify's Kind constants) and every metric
// (internal/server/metrics.go) is named there.
func TestServerDocCoversEveryKeyAndEvent(t *testing.T) {
	doc, err := os.ReadFile("../../docs/server.md")
	if err != nil {
		t.Fatal(err)
	}
	named := func(what, word string) {
		if !strings.Contains(string(doc), "`"+word+"`") {
			t.Errorf("docs/server.md does not document %s `%s`", what, word)
		}
	}
	keys := yamlKeys(reflect.TypeFor[serveConfig](), "")
	if len(keys) < 20 {
		t.Fatalf("found only %d knit.yaml keys: %v", len(keys), keys)
	}
	for _, k := range keys {
		named("the knit.yaml key", k)
	}
	kinds := notifyKinds(t)
	if len(kinds) < 5 {
		t.Fatalf("found only %d event kinds: %v", len(kinds), kinds)
	}
	for _, k := range kinds {
		named("the notification event", k)
	}
	src, err := os.ReadFile("../server/metrics.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`Name: "(knit_\w+)"`).FindAllStringSubmatch(string(src), -1) {
		named("the metric", m[1])
	}
}

// yamlKeys lists the keys a YAML struct type takes, nested ones dotted
// ("git.url") and those of list elements after "[]." ("notifications[].url").
func yamlKeys(t reflect.Type, prefix string) []string {
	var out []string
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		key := prefix + name
		out = append(out, key)
		switch ft := f.Type; {
		case ft.Kind() == reflect.Struct:
			out = append(out, yamlKeys(ft, key+".")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, yamlKeys(ft.Elem(), key+"[].")...)
		}
	}
	return out
}

// notifyKinds reads the values of internal/notify's Kind* constants.
func notifyKinds(t *testing.T) []string {
	pkgs, err := parser.ParseDir(token.NewFileSet(), "../notify", func(fi os.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				vs, ok := n.(*ast.ValueSpec)
				if !ok {
					return true
				}
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Kind") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						kinds = append(kinds, v)
					}
				}
				return true
			})
		}
	}
	return kinds
}
