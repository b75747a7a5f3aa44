package cli

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"knit.dev/knit/internal/words"
)

// TestServerDocCoversEveryKeyAndEvent keeps docs/server.md true: every key
// knit.yaml takes (read from serveConfig's yaml tags), every notification
// event kind (words.NotifyKinds; server/TestEveryWordSetIsItsOpenAPIEnum
// keeps it the constants and docs/server.md's table) and every metric
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
	for _, k := range words.NotifyKinds() {
		named("the notification event", string(k))
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
