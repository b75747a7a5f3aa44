package web_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
)

// layered is an environment of n script components in layers of 10, each
// past the first depending on two of the layer before; gated, when set,
// waits for an approval.
func layered(team, name string, n int, gated string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: knit.dev/v1\nkind: Environment\nmetadata: {name: %s-%s}\nspec:\n  teamName: %s\n  envName: %s\n  autoApprove: true\n  components:\n", team, name, team, name)
	for i := range n {
		c := fmt.Sprintf("c%03d", i)
		fmt.Fprintf(&b, "    - name: %s\n      type: script\n      script: {apply: \"echo '{}'\"}\n", c)
		if c == gated {
			b.WriteString("      autoApprove: false\n      variables: [{name: size, value: 2}]\n")
		}
		if i >= 10 {
			layer := i/10 - 1
			fmt.Fprintf(&b, "      dependsOn: [c%03d, c%03d]\n", layer*10+i%10, layer*10+(i+3)%10)
		}
	}
	return b.String()
}

// The graph of a big environment is drawn whole from the server's layout
// (every node, every edge, levels as columns), offers a search, and a live
// refresh patches the drawn nodes (the same elements, new states) without
// drawing the graph again.
func TestBigGraphIsDrawnWholeAndPatchedLive(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	w.apply("shop-big", map[string]string{"env.yaml": layered("shop", "big", 60, "")})
	signIn(t, ctx, w, "operator", "/env/shop/big", "#graph[data-drawn]")

	if n := eval[int](t, ctx, `document.querySelectorAll("#graph a.node").length`); n != 60 {
		t.Errorf("the graph has %d nodes, want 60", n)
	}
	// 50 components past the first layer, two dependencies each.
	if n := eval[int](t, ctx, `document.querySelectorAll("#graph path.edge").length`); n != 100 {
		t.Errorf("the graph has %d edges, want 100", n)
	}
	// Levels are columns: every component right of what it depends on.
	if bad := eval[[]string](t, ctx, `(() => {
		const x = name => document.querySelector('#graph a.node[data-name="' + name + '"] rect.box').getBoundingClientRect().left;
		return [...document.querySelectorAll("#graph path.edge")].filter(e => !(x(e.dataset.from) < x(e.dataset.to))).map(e => e.dataset.from + "→" + e.dataset.to);
	})()`); len(bad) != 0 {
		t.Errorf("edges not left to right: %v", bad)
	}
	if got := eval[map[string]string](t, ctx, nodeStates); got["c055"] != "applied" {
		t.Fatalf("c055 is %q before the change", got["c055"])
	}

	// Search: the other nodes dim, the count is said.
	run(t, ctx, "search", chromedp.SendKeys(chromedp.CSS("#graph-find"), "c05"))
	waitFor(t, ctx, "the search", `document.querySelectorAll("#graph a.node.dim").length === 50`)
	if found := text(t, ctx, "#graph-found"); found != "10 components match" {
		t.Errorf("the search says %q", found)
	}

	// A change of c055's inputs gated behind an approval: the same shape,
	// new states, arriving live.
	_ = eval[int](t, ctx, `(() => { window.knitDrawsBefore = knit.graphDraws; document.querySelector('#graph a.node[data-name="c055"]').knitMarker = 7; return 0; })()`)
	_ = eval[int](t, ctx, emptyGraphWatch)
	w.apply("shop-big", map[string]string{"env.yaml": layered("shop", "big", 60, "c055")})
	waitFor(t, ctx, "c055 awaiting approval", `(document.querySelector('#graph a.node[data-name="c055"]') || {}).dataset?.state === "awaiting-approval"`)
	if marker := eval[int](t, ctx, `document.querySelector('#graph a.node[data-name="c055"]').knitMarker || 0`); marker != 7 {
		t.Error("c055's node was drawn anew, not patched")
	}
	if draws := eval[int](t, ctx, `knit.graphDraws - window.knitDrawsBefore`); draws != 0 {
		t.Errorf("the live refresh drew the graph %d more times", draws)
	}
	if empty := eval[int](t, ctx, `window.knitEmptyGraph`); empty > 0 {
		t.Errorf("the graph was empty after %d of the live updates", empty)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#graph a.node").length + document.querySelectorAll("#graph path.edge").length`); n != 160 {
		t.Errorf("after the refresh: %d nodes and edges, want 160", n)
	}
	if q := eval[string](t, ctx, `document.getElementById("graph-find").value`); q != "c05" {
		t.Errorf("the search field after the refresh: %q", q)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#graph a.node.dim").length`); n != 50 {
		t.Errorf("after the refresh %d nodes are dimmed, want 50", n)
	}
	checkAxe(t, ctx, "big environment")

	// On a phone the levels are rows, top to bottom.
	run(t, ctx, "phone", chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(1), chromedp.EmulateMobile, chromedp.EmulatePortrait),
		chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#graph[data-drawn]")))
	if bad := eval[[]string](t, ctx, `(() => {
		const y = name => document.querySelector('#graph a.node[data-name="' + name + '"] rect.box').getBoundingClientRect().top;
		return [...document.querySelectorAll("#graph path.edge")].filter(e => !(y(e.dataset.from) < y(e.dataset.to))).map(e => e.dataset.from + "→" + e.dataset.to);
	})()`); len(bad) != 0 {
		t.Errorf("on a phone, edges not top to bottom: %v", bad)
	}
	if n := eval[int](t, ctx, `document.querySelectorAll("#graph a.node").length`); n != 60 {
		t.Errorf("on a phone the graph has %d nodes, want 60", n)
	}
	checkAxe(t, ctx, "big environment (phone)")
}
