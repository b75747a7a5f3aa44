package knit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// The environment-level graph as each caller sees it: every environment
// with the producers it reads; a team-limited caller sees its own
// environments, and those of other teams at the other end of one of
// their edges named only (no status); one that reads nothing of theirs
// and is read by none of theirs is left out.
func TestEnvironmentGraphAsEachCallerSeesIt(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	apply(t, k, parse(t, producerDoc), "alice", true)
	apply(t, k, parse(t, consumerOf("shop", "db.host")), "alice", true)
	apply(t, k, parse(t, envDoc("pay", "prod")), "alice", true)
	show := func(ctx context.Context) string {
		t.Helper()
		g, err := knit.NewConsumers(k).Graph(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range g {
			out = append(out, fmt.Sprintf("%s(%s%v)%v", n.ID, n.Status, map[bool]string{true: " hidden"}[n.Hidden], n.Reads))
		}
		return strings.Join(out, " ")
	}
	all := show(ctx)
	for _, want := range []string{"platform/eu-1(provisioned)[]", "shop/web(provisioned)[platform/eu-1]", "pay/prod(provisioned)[]"} {
		if !strings.Contains(all, want) {
			t.Errorf("everything: %s lacks %s", all, want)
		}
	}
	shop := show(knit.WithCaller(ctx, view.Token{Name: "shop-ci", Role: store.RoleViewer, Teams: []string{"shop"}}))
	if shop != "platform/eu-1( hidden)[] shop/web(provisioned)[platform/eu-1]" {
		t.Errorf("shop sees %s", shop)
	}
	if pay := show(knit.WithCaller(ctx, view.Token{Name: "pay-ci", Role: store.RoleViewer, Teams: []string{"pay"}})); pay != "pay/prod(provisioned)[]" {
		t.Errorf("pay sees %s", pay)
	}
}
