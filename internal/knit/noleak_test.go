package knit_test

import (
	"go/types"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

const storePkg = "knit.dev/knit/internal/store"

// storeResultAllowed are the store's types an exported result of the
// library may name, each because it is vocabulary, not a record:
// (none today: the store's words are aliases of internal/words, and
// go/types sees through an alias to the words package).
var storeResultAllowed = map[string]string{}

// TestNoMethodReturnsTheStore walks every exported function and every
// exported method of every exported type of the library and fails on a
// result that is, holds (pointer, slice, map, array, channel, type
// argument) or, for the library's own structs, has an exported field of a
// type from internal/store: the store and its rows stay behind the door,
// so a column's rename never reaches a caller (issue 36).
func TestNoMethodReturnsTheStore(t *testing.T) {
	cfg := &packages.Config{Mode: packages.NeedName | packages.NeedTypes}
	pkgs, err := packages.Load(cfg, "knit.dev/knit/internal/knit")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 || pkgs[0].Types == nil {
		t.Fatalf("loading knit: %v", pkgs)
	}
	for _, e := range pkgs[0].Errors {
		t.Fatal(e)
	}
	scope := pkgs[0].Types.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch o := obj.(type) {
		case *types.Func:
			checkResults(t, "knit."+name, o.Type().(*types.Signature))
		case *types.TypeName:
			checkMethods(t, o)
		}
	}
}

// checkMethods checks the exported methods of tn's type (of its pointer:
// value and pointer receivers both).
func checkMethods(t *testing.T, tn *types.TypeName) {
	ms := types.NewMethodSet(types.NewPointer(tn.Type()))
	for i := range ms.Len() {
		m := ms.At(i).Obj()
		if !m.Exported() {
			continue
		}
		checkResults(t, "knit."+tn.Name()+"."+m.Name(), m.Type().(*types.Signature))
	}
}

func checkResults(t *testing.T, where string, sig *types.Signature) {
	for i := range sig.Results().Len() {
		if leak := storeTypeIn(sig.Results().At(i).Type(), map[types.Type]bool{}); leak != "" {
			if why, ok := storeResultAllowed[leak]; ok && why != "" {
				continue
			}
			t.Errorf("%s returns %s: map it to a read model of internal/view instead", where, leak)
		}
	}
}

// storeTypeIn names the first type of the store that typ is or holds
// ("" when none).
func storeTypeIn(typ types.Type, seen map[types.Type]bool) string {
	typ = types.Unalias(typ)
	if seen[typ] {
		return ""
	}
	seen[typ] = true
	switch u := typ.(type) {
	case *types.Pointer:
		return storeTypeIn(u.Elem(), seen)
	case *types.Slice:
		return storeTypeIn(u.Elem(), seen)
	case *types.Array:
		return storeTypeIn(u.Elem(), seen)
	case *types.Chan:
		return storeTypeIn(u.Elem(), seen)
	case *types.Map:
		if s := storeTypeIn(u.Key(), seen); s != "" {
			return s
		}
		return storeTypeIn(u.Elem(), seen)
	case *types.Named:
		for i := range u.TypeArgs().Len() {
			if s := storeTypeIn(u.TypeArgs().At(i), seen); s != "" {
				return s
			}
		}
		pkg := u.Obj().Pkg()
		if pkg != nil && (pkg.Path() == storePkg || strings.HasPrefix(pkg.Path(), storePkg+"/")) {
			return pkg.Name() + "." + u.Obj().Name()
		}
		if pkg != nil && ours(pkg.Path()) {
			return storeTypeIn(u.Underlying(), seen)
		}
	case *types.Struct:
		for i := range u.NumFields() {
			if f := u.Field(i); f.Exported() {
				if s := storeTypeIn(f.Type(), seen); s != "" {
					return s
				}
			}
		}
	}
	return ""
}

// ours reports whether the library's results of a type from pkg are
// looked into: its own and its read models' (another package's types, an
// engine's run handle, are that package's business).
func ours(pkg string) bool {
	return pkg == "knit.dev/knit/internal/knit" || pkg == "knit.dev/knit/internal/view"
}
