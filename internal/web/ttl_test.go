package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
)

// TestEnvironmentPageShowsTheExpiry: an ephemeral environment's page says
// when it expires; one without a ttl says nothing of it.
func TestEnvironmentPageShowsTheExpiry(t *testing.T) {
	w := newWorld(t, adapters.Config{})
	env := func(name, extra string) map[string]string {
		return map[string]string{"env.yaml": "apiVersion: knit.dev/v1\nkind: Environment\nspec:\n  teamName: shop\n  envName: " + name +
			"\n  autoApprove: true\n" + extra + "  components:\n    - {name: app, type: script, script: {apply: \"true\"}}\n"}
	}
	w.apply("pr-7", env("pr-7", "  ttl: 72h\n"))
	w.apply("plain", env("plain", ""))
	x, err := knit.NewRecords(w.k).Expiry(context.Background(), "shop/pr-7")
	if err != nil {
		t.Fatal(err)
	}
	c := w.client("viewer")
	code, body := get(t, c, w.url+"/env/shop/pr-7")
	at := x.At.UTC().Format(time.RFC3339)
	if code != 200 || !strings.Contains(body, `class="expiry">expires <time datetime="`+at+`"`) || !strings.Contains(body, "in 71h") {
		t.Fatalf("the page of shop/pr-7 (%d) does not show its expiry at %s:\n%s", code, at, body)
	}
	if _, body := get(t, c, w.url+"/env/shop/plain"); strings.Contains(body, `class="expiry"`) {
		t.Fatal("an environment without a ttl shows an expiry")
	}
}
