package knit_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

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
