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

func TestPrefixEndBoundsExactlyThePrefixedKeys(t *testing.T) {
	for _, tc := range []struct {
		prefix, end string
		ok          bool
	}{
		{"git.env:", "git.env;", true},
		{"a", "b", true},
		{"a\xff", "b", true},
		{"é", "ê", true},
		{"", "", false},
		{"\xff\xff", "", false},
		{"\x7f", "", false}, // 0x80 alone is not UTF-8
	} {
		end, ok := store.PrefixEnd(tc.prefix)
		if end != tc.end || ok != tc.ok {
			t.Errorf("PrefixEnd(%q) = %q, %v; want %q, %v", tc.prefix, end, ok, tc.end, tc.ok)
		}
	}
	keys := []string{"git.en", "git.env", "git.env:", "git.env:a/b", "git.env:\u00ff", "git.env;", "git.envx", "git.f"}
	end, _ := store.PrefixEnd("git.env:")
	var inRange []string
	for _, k := range keys {
		if k >= "git.env:" && k < end {
			inRange = append(inRange, k)
		}
	}
	if want := []string{"git.env:", "git.env:a/b", "git.env:\u00ff"}; !slices.Equal(inRange, want) {
		t.Errorf("keys in [git.env:, %q) = %q, want %q", end, inRange, want)
	}
}
