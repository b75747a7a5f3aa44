package server_test

import (
	"slices"
	"testing"

	"knit.dev/knit/internal/store"
)

// TestStatusAndKindEnumsAreTheGoConstants: the OpenAPI document's RunKind,
// RunStatus and EnvStatus enums are exactly the Go constants of
// store.RunKind, store.RunStatus and store.EnvStatus (each constant
// declared in internal/store, so a new one cannot hide from its list).
func TestStatusAndKindEnumsAreTheGoConstants(t *testing.T) {
	doc, _ := loadDoc(t)
	for schema, listed := range map[string][]string{
		"RunKind":   words(store.RunKinds()),
		"RunStatus": words(store.RunStatuses()),
		"EnvStatus": words(store.EnvStatuses()),
	} {
		s := doc.Components.Schemas[schema]
		if s == nil || s.Value == nil {
			t.Errorf("the document has no %s schema", schema)
			continue
		}
		var enum []string
		for _, v := range s.Value.Enum {
			enum = append(enum, v.(string))
		}
		declared := typedConstants(t, "../store", "store", schema)
		slices.Sort(enum)
		slices.Sort(declared)
		slices.Sort(listed)
		if !slices.Equal(declared, listed) {
			t.Errorf("store declares %s %q, its list has %q", schema, declared, listed)
		}
		if !slices.Equal(declared, enum) {
			t.Errorf("store declares %s %q, the OpenAPI %s enum is %q", schema, declared, schema, enum)
		}
	}
}

func words[S ~string](ss []S) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = string(s)
	}
	return out
}
