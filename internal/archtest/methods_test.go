package archtest

import (
	"go/types"
	"maps"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// maxMethods is how many methods a type may declare (value and pointer
// receivers together, promoted methods not counted) outside internal/store,
// whose Store port is one interface on purpose.
const maxMethods = 40

// methodCeilings are the types still being split, each with the most
// methods it may have today. A ceiling may only go down: lower it as a
// type loses methods, and remove the entry once the type is under
// maxMethods (the test fails while an entry is no longer needed).
var methodCeilings = map[string]int{}

// methodCounts type-checks every non-test package of the module (from the
// compiler's export data) and counts the methods each named type declares.
func methodCounts(t *testing.T) map[string]int {
	t.Helper()
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes}
	pkgs, err := packages.Load(cfg, "knit.dev/knit/...")
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, p := range pkgs {
		for _, e := range p.Errors {
			t.Errorf("%s: %v", p.PkgPath, e)
		}
		if p.Types == nil {
			continue
		}
		scope := p.Types.Scope()
		for _, name := range scope.Names() {
			tn, ok := scope.Lookup(name).(*types.TypeName)
			if !ok || tn.IsAlias() {
				continue
			}
			if n, ok := tn.Type().(*types.Named); ok {
				counts[p.PkgPath+"."+name] = n.NumMethods()
			}
		}
	}
	return counts
}

func inStore(typ string) bool {
	return strings.HasPrefix(typ, mod+"store.") || strings.HasPrefix(typ, mod+"store/")
}

func TestMethodsPerType(t *testing.T) {
	counts := methodCounts(t)
	for _, typ := range slices.Sorted(maps.Keys(counts)) {
		n := counts[typ]
		if inStore(typ) {
			continue
		}
		ceiling, listed := methodCeilings[typ]
		switch {
		case listed && n <= maxMethods:
			t.Errorf("%s has %d methods, at most %d: remove it from methodCeilings", typ, n, maxMethods)
		case listed && n > ceiling:
			t.Errorf("%s has %d methods, over its ceiling of %d: split it, do not raise the ceiling", typ, n, ceiling)
		case listed && n < ceiling:
			t.Errorf("%s has %d methods: lower its ceiling in methodCeilings from %d to %d", typ, n, ceiling, n)
		case !listed && n > maxMethods:
			t.Errorf("%s has %d methods, more than %d: split it into types with one job each (STYLE.md 10b)", typ, n, maxMethods)
		}
	}
	for typ := range methodCeilings {
		if _, ok := counts[typ]; !ok {
			t.Errorf("methodCeilings names %s, which no longer exists: remove the entry", typ)
		}
	}
}
