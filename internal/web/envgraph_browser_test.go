package web_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
)

// producerEnv is platform/NAME, whose cluster.endpoint is exported to team shop.
func producerEnv(name string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: platform-%[1]s}
spec:
  teamName: platform
  envName: %[1]s
  autoApprove: true
  exports:
    - {output: cluster.endpoint, teams: [shop]}
  components:
    - name: cluster
      type: script
      outputs: [{name: endpoint}]
      script: {apply: "echo '{\"endpoint\": \"https://%[1]s.example\"}'"}
`, name)
}

// consumerEnv is shop/NAME reading platform/PRODUCER's cluster.endpoint.
func consumerEnv(name, producer string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop-%[1]s}
spec:
  teamName: shop
  envName: %[1]s
  autoApprove: true
  components:
    - name: app
      type: script
      variables:
        - {name: endpoint, valueFrom: {environment: platform/%[2]s, output: cluster.endpoint}}
      script: {apply: "echo app talks to $KNIT_VAR_ENDPOINT >&2; echo '{}'"}
`, name, producer)
}

// TestEnvironmentGraphShowsWhoReadsWhom (issue 41 item 1): the
// environment graph draws an edge from each producer to each environment
// reading it, laid out on the server and drawn in one pass; the list
// beside it says the same; the producer's page lists its consumers; a
// token of team shop sees platform's producers named, without their
// state, and a token of another team sees none of it. axe-core passes.
func TestEnvironmentGraphShowsWhoReadsWhom(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{})
	w.apply("platform-c1", map[string]string{"env.yaml": producerEnv("c1")})
	w.apply("platform-c2", map[string]string{"env.yaml": producerEnv("c2")})
	w.apply("shop-app1", map[string]string{"env.yaml": consumerEnv("app1", "c1")})
	w.apply("shop-app2", map[string]string{"env.yaml": consumerEnv("app2", "c1")})
	w.apply("shop-app3", map[string]string{"env.yaml": consumerEnv("app3", "c2")})

	signIn(t, ctx, w, "viewer", "/environments/graph", "#graph svg")
	edges := eval[[]string](t, ctx, `[...document.querySelectorAll("#graph path.edge")].map(e => e.dataset.from + ">" + e.dataset.to).sort()`)
	if got := strings.Join(edges, " "); got != "platform/c1>shop/app1 platform/c1>shop/app2 platform/c2>shop/app3" {
		t.Errorf("edges: %s", got)
	}
	if n := eval[string](t, ctx, `document.getElementById("graph").dataset.drawn`); n != "5" {
		t.Errorf("%s environments drawn, want 5", n)
	}
	if got := text(t, ctx, `li[data-env="shop/app1"]`); !strings.Contains(got, "reads platform/c1") || !strings.Contains(got, "applied") {
		t.Errorf("app1's line: %q", got)
	}
	checkAxe(t, ctx, "/environments/graph")

	_, page := get(t, w.client("viewer"), w.url+"/env/platform/c1")
	if !strings.Contains(page, `Read by <a href="/env/shop/app1">shop/app1</a>, <a href="/env/shop/app2">shop/app2</a>`) {
		t.Errorf("the producer's page does not list its consumers:\n%s", page)
	}
	if _, page := get(t, w.client("viewer"), w.url+"/env/shop/app3"); strings.Contains(page, `class="consumers"`) {
		t.Errorf("a consumer that exports nothing lists consumers")
	}

	for _, team := range []string{"shop", "billing"} {
		secret, _, err := knit.NewCreateToken(w.k, team+"-1", "viewer", []string{team}, "test").Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		w.tokens[team] = secret
		code, page := get(t, w.client(team), w.url+"/environments/graph")
		if code != http.StatusOK {
			t.Fatalf("%s's graph: %d", team, code)
		}
		if team == "billing" && (strings.Contains(page, "platform/") || strings.Contains(page, "shop/")) {
			t.Errorf("billing's graph names other teams' environments:\n%s", page)
		}
		if team == "shop" && (!strings.Contains(page, `"name":"platform/c1","type":"another team","state":"not shown"`) ||
			!strings.Contains(page, `reads <a class="reads" href="/env/platform/c1">platform/c1</a>`)) {
			t.Errorf("shop's graph does not name its producer as another team's, or shows its state:\n%s", page)
		}
	}
}
