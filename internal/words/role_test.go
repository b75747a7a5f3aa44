package words_test

import (
	"testing"

	"knit.dev/knit/internal/words"
)

// TestRoleAtLeast: roles are ordered viewer < operator < admin, and a word
// that is no role is at least nothing (not even a word that is no role).
func TestRoleAtLeast(t *testing.T) {
	for _, c := range []struct {
		r, min words.Role
		want   bool
	}{
		{words.RoleViewer, words.RoleViewer, true}, {words.RoleViewer, words.RoleOperator, false}, {words.RoleViewer, words.RoleAdmin, false},
		{words.RoleOperator, words.RoleViewer, true}, {words.RoleOperator, words.RoleOperator, true}, {words.RoleOperator, words.RoleAdmin, false},
		{words.RoleAdmin, words.RoleViewer, true}, {words.RoleAdmin, words.RoleOperator, true}, {words.RoleAdmin, words.RoleAdmin, true},
		{"root", words.RoleViewer, false}, {"", words.RoleViewer, false}, {"", "", false}, {"Admin", words.RoleViewer, false},
	} {
		if got := c.r.AtLeast(c.min); got != c.want {
			t.Errorf("Role(%q).AtLeast(%q) = %v, want %v", c.r, c.min, got, c.want)
		}
	}
	for _, r := range words.Roles() {
		if !r.Valid() {
			t.Errorf("%q is not Valid", r)
		}
	}
	if words.Role("superuser").Valid() {
		t.Error(`"superuser" is Valid`)
	}
}
