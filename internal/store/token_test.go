package store_test

import (
	"slices"
	"testing"

	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/words"
)

// TestRolesAreTheWords: the store's untyped role constants are words.Roles,
// weakest first, so Role.AtLeast orders them.
func TestRolesAreTheWords(t *testing.T) {
	got := []store.Role{store.RoleViewer, store.RoleOperator, store.RoleAdmin}
	if !slices.Equal(got, words.Roles()) {
		t.Errorf("store's roles %q, words.Roles %q", got, words.Roles())
	}
	if !store.Role(store.RoleAdmin).AtLeast(store.RoleOperator) || store.Role(store.RoleViewer).AtLeast(store.RoleOperator) {
		t.Error("store.Role.AtLeast does not order the store's roles")
	}
}
