package knit_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/view"
)

// producerDoc is platform/eu-1: db's host exported to shop, its password
// (sensitive) to shop and ops.
const producerDoc = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: eu-1}
spec:
  teamName: platform
  envName: eu-1
  autoApprove: true
  exports:
    - {output: db.host, teams: [shop]}
    - {output: db.password, teams: [shop, ops]}
  components:
    - name: db
      type: script
      script: {apply: "true"}
      outputs: [{name: host}, {name: password, sensitive: true}]
`

// ExportedOutputs answers what a team may read of a producer: only what
// it exports to that team, sensitive values masked and marked.
func TestExportedOutputsHonourExports(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	rs := knit.NewRecords(k)
	if got, err := rs.ExportedOutputs(ctx, "platform/eu-1", "shop"); err != nil || len(got) != 0 {
		t.Fatalf("before any apply: %v, %v", got, err)
	}
	apply(t, k, parse(t, producerDoc), "alice", true)
	got, err := rs.ExportedOutputs(ctx, "platform/eu-1", "shop")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]knit.OutputView{
		"db.host":     {Value: "db.internal"},
		"db.password": {Value: knit.Masked, Sensitive: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("shop reads %v, want %v", got, want)
	}
	if got, _ := rs.ExportedOutputs(ctx, "platform/eu-1", "ops"); len(got) != 1 || !got["db.password"].Sensitive {
		t.Errorf("ops reads %v, want the password only, masked", got)
	}
	if got, _ := rs.ExportedOutputs(ctx, "platform/eu-1", "web"); len(got) != 0 {
		t.Errorf("web reads %v, want nothing", got)
	}
	// A caller of team web cannot ask on shop's behalf.
	web := knit.WithCaller(ctx, view.Token{Name: "web-ci", Role: store.RoleViewer, Teams: []string{"web"}})
	if _, err := rs.ExportedOutputs(web, "platform/eu-1", "shop"); !errors.Is(err, knit.ErrForbidden) {
		t.Errorf("web for shop: %v, want ErrForbidden", err)
	}
	if _, err := rs.ExportedOutputs(ctx, "eu-1", "shop"); !errors.Is(err, knit.ErrNotFound) {
		t.Errorf("a metadata name: %v, want ErrNotFound", err)
	}
}

// consumerDoc is shop/web reading platform/eu-1's db.host (exported to
// shop) and, with READ, another output.
const consumerDoc = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: web}
spec:
  teamName: TEAM
  envName: web
  autoApprove: true
  components:
    - name: app
      type: script
      script: {apply: "true"}
      variables:
        - {name: host, valueFrom: {environment: platform/eu-1, output: READ}}
`

func consumerOf(team, read string) string {
	return strings.NewReplacer("TEAM", team, "READ", read).Replace(consumerDoc)
}

// A consumer waits (UpstreamEnvironmentNotReady, the producer named)
// until the producer holds the output, then applies with its value; a
// read of an output not exported to its team is refused at run time and
// by CheckEnvReads, with the reason.
func TestConsumerWaitsThenReadsAndIsRefusedWhatIsNotExported(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	shop := parse(t, consumerOf("shop", "db.host"))
	res := apply(t, k, shop, "alice", true)
	app := res.Component("app")
	if res.Status != store.StatusWaiting || app.Status != engine.Waiting || app.Cause.ReasonCode != "UpstreamEnvironmentNotReady" ||
		!slices.Equal(app.Cause.Upstream, []string{"platform/eu-1"}) {
		t.Fatalf("before the producer: run %s, app %s %+v", res.Status, app.Status, app.Cause)
	}
	ds, err := knit.NewRecords(k).CheckEnvReads(ctx, shop)
	if err != nil || len(ds) != 1 || ds.HasErrors() || !strings.Contains(ds[0].Message, "platform/eu-1 is not applied yet") {
		t.Errorf("CheckEnvReads before the producer: %v, %v", ds, err)
	}
	apply(t, k, parse(t, producerDoc), "alice", true)
	if res := apply(t, k, shop, "alice", true); res.Status != store.StatusSucceeded {
		t.Fatalf("after the producer: %s %s", res.Status, res.Error)
	}
	// ops may read the password, not the host.
	ops := parse(t, consumerOf("ops", "db.host"))
	res = apply(t, k, ops, "alice", true)
	if res.Status != store.StatusFailed || !strings.Contains(res.Component("app").Reason, "platform/eu-1 does not export db.host to team ops (it exports it only to team shop)") {
		t.Errorf("ops reading the host: %s %q", res.Status, res.Component("app").Reason)
	}
	ds, err = knit.NewRecords(k).CheckEnvReads(ctx, ops)
	if err != nil || !ds.HasErrors() || ds[0].Field != "spec.components[0].variables[0].valueFrom" || ds[0].Pos.Line != 14 ||
		!strings.Contains(ds[0].Hint, "add {output: db.host, teams: [ops]} to the spec.exports of platform/eu-1") {
		t.Errorf("CheckEnvReads of ops: %v, %v", ds, err)
	}
	// The producer cannot go while shop/web reads it.
	_, err = knit.NewRun(k, knit.RunRequest{Kind: engine.KindTeardown, EnvRef: "platform/eu-1", Actor: "alice", AutoApprove: true}).Run(ctx)
	if !errors.Is(err, knit.ErrHasConsumers) || !strings.Contains(err.Error(), "read by ops/web, shop/web: tear them down first") {
		t.Errorf("teardown of the producer: %v", err)
	}
	if got, _ := knit.NewRecords(k).Consumers(ctx, "platform/eu-1"); !slices.Equal(got, []string{"ops/web", "shop/web"}) {
		t.Errorf("consumers = %v", got)
	}
}

// Environments reading each other in a cycle are refused, the cycle named.
func TestEnvironmentsReadingEachOtherAreRefused(t *testing.T) {
	ctx := context.Background()
	k := open(t)
	a := parse(t, strings.Replace(producerDoc, "      outputs:", "      variables: [{name: x, valueFrom: {environment: shop/web, output: app.url}}]\n      outputs:", 1))
	if res := apply(t, k, a, "alice", true); res.Status != store.StatusWaiting {
		t.Fatalf("platform/eu-1 first: %s", res.Status)
	}
	web := parse(t, strings.Replace(consumerOf("shop", "db.host"), "      variables:", "      outputs: [{name: url}]\n      variables:", 1))
	_, err := knit.NewRun(k, knit.RunRequest{Kind: engine.KindApply, Env: web, Actor: "alice", AutoApprove: true}).Run(ctx)
	if !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "in a cycle: shop/web → platform/eu-1 → shop/web") {
		t.Errorf("the cycle: %v", err)
	}
	ds, err := knit.NewRecords(k).CheckEnvReads(ctx, web)
	if err != nil || !ds.HasErrors() || !strings.Contains(ds.Errors()[0].Message, "shop/web → platform/eu-1 → shop/web") {
		t.Errorf("CheckEnvReads: %v, %v", ds, err)
	}
}
