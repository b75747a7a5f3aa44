package gitops

import (
	"fmt"
	"strings"
	"testing"
)

// A poll previews at most PreviewsPerPoll new heads of matching branches:
// a pushed one (PreviewSoon) first, then by name; never the watched
// branch, one already previewed at its head, or one the pattern misses.
func TestNewHeadsAreBoundedAndAPushedBranchGoesFirst(t *testing.T) {
	g := New(nil, nil, Config{PreviewBranches: "feature/*", PreviewsPerPoll: 3})
	g.cfg.Branch = "main"
	heads := map[string]string{"main": "m", "fix/x": "f", "feature/done": "d1"}
	for i := range 1000 {
		heads[fmt.Sprintf("feature/b%04d", i)] = "h"
	}
	heads["feature/zz-pushed"] = "p"
	seen := map[string]string{"feature/done": "d1", "feature/b0000": "old"}
	g.nudge = make(chan struct{}, 1) // PreviewSoon wakes the loop
	g.PreviewSoon("feature/zz-pushed")
	got := g.newHeads(heads, seen)
	if want := "feature/zz-pushed,feature/b0000,feature/b0001"; strings.Join(got, ",") != want {
		t.Errorf("newHeads = %v, want %s", got, want)
	}
	// The ask is used once: the next poll goes by name.
	if got := g.newHeads(heads, seen); strings.Join(got, ",") != "feature/b0000,feature/b0001,feature/b0002" {
		t.Errorf("the next poll = %v", got)
	}
	for _, b := range []string{"main", "fix/x", "feature", "featurex/y"} {
		if g.PreviewMatches(b) {
			t.Errorf("%s matches feature/*", b)
		}
	}
	if off := New(nil, nil, Config{}); off.PreviewMatches("feature/a") {
		t.Error("a reconciler without --preview-branches previews a branch")
	}
}
