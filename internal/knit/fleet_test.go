package knit_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/view"
)

func labelled(team, name, labels string) string {
	return strings.Replace(envDoc(team, name), "metadata: {name: "+name+"}", "metadata: {name: "+name+", labels: "+labels+"}", 1)
}

func exporting(doc, exports string) string {
	return strings.Replace(doc, "  components:", "  exports: ["+exports+"]\n  components:", 1)
}

func TestFleetListsTheLiveEnvironmentsATeamReads(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	apply(t, k, parse(t, labelled("shop", "eu", "{role: cluster}")), "ann", true)
	apply(t, k, parse(t, labelled("shop", "us", "{role: cluster}")), "ann", true)
	apply(t, k, parse(t, labelled("pay", "prod", "{role: cluster}")), "ann", true)
	apply(t, k, parse(t, exporting(labelled("pay", "eu", "{role: cluster}"), "{output: db.host, teams: [shop]}, {output: db.password, teams: [shop]}")), "ann", true)
	f := knit.NewFleet(k)
	names := func(team string) string {
		t.Helper()
		live, err := f.Live(ctx, team)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range live {
			out = append(out, fmt.Sprintf("%s/%s:%s%v", l.Team, l.Name, l.Labels["role"], l.Outputs))
		}
		return strings.Join(out, ",")
	}
	// pay/prod exports nothing to shop: not shop's business; pay/eu
	// exports db.host (and a sensitive password, never offered) to shop;
	// shop's own exports nothing, not even to shop.
	if got := names("shop"); got != "pay/eu:clustermap[db:map[host:db.internal]],shop/eu:clustermap[],shop/us:clustermap[]" {
		t.Fatalf("shop reads %s", got)
	}
	// Relabelled and re-applied: the new labels, read again by version.
	apply(t, k, parse(t, labelled("shop", "eu", "{role: database}")), "ann", true)
	if got := names("shop"); got != "pay/eu:clustermap[db:map[host:db.internal]],shop/eu:databasemap[],shop/us:clustermap[]" {
		t.Fatalf("after the relabel shop reads %s", got)
	}
	// Torn down: no longer live.
	if _, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindTeardown, EnvRef: "shop/us", Actor: "ann", AutoApprove: true}).Run(ctx); err != nil {
		t.Fatal(err)
	}
	if got := names("shop"); got != "pay/eu:clustermap[db:map[host:db.internal]],shop/eu:databasemap[]" {
		t.Fatalf("after the teardown shop reads %s", got)
	}
	// A token of another team may not read what shop reads.
	payCtx := knit.WithCaller(ctx, view.Token{Name: "pay-ci", Teams: []string{"pay"}})
	if _, err := f.Live(payCtx, "shop"); !errors.Is(err, knit.ErrForbidden) {
		t.Fatalf("pay's token reading shop's fleet: %v, want ErrForbidden", err)
	}
	if live, err := f.Live(payCtx, "pay"); err != nil || len(live) != 2 {
		t.Fatalf("pay's own: %v %v", live, err)
	}
}
