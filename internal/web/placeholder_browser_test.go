package web_test

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/testtools"
)

// idGated is two gated components where app takes net's id, known only
// after net is applied.
const idGated = `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: shop-ids}
spec:
  teamName: shop
  envName: ids
  autoApprove: false
  components:
    - name: net
      type: terraform
      module: {source: ./modules/id}
      outputs: [{name: id}]
      variables: [{name: name, value: net}]
    - name: app
      type: terraform
      module: {source: ./modules/id}
      dependsOn: [net]
      variables: [{name: name, valueFrom: net.id}]
`

// The change set on the environment's page shows the resources of a
// component planned with a placeholder and says which input it was
// planned without.
func TestTheChangeSetSaysWhatAPlanWasMadeWithout(t *testing.T) {
	ctx := browser(t)
	w := newWorld(t, adapters.Config{Tools: adapters.Tools{TFBinary: testtools.Tofu(t).Path}})
	w.apply("shop-ids", map[string]string{"env.yaml": idGated, "modules/id/main.tf": `
variable "name" { type = string }
resource "terraform_data" "this" { input = var.name }
output "id" { value = terraform_data.this.id }
`})
	sets, err := knit.NewRecords(w.k).ChangeSets(context.Background(), "shop/ids", 0, store.ChangeSetPending)
	if err != nil || len(sets) != 1 || len(sets[0].Components) != 2 {
		t.Fatalf("change sets of shop/ids: %+v, %v", sets, err)
	}
	run(t, ctx, "login", chromedp.Navigate(w.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), w.tokens["operator"]), chromedp.Submit(chromedp.CSS("#token")),
		chromedp.WaitVisible(chromedp.CSS("table.envs")))
	run(t, ctx, "environment", chromedp.Navigate(w.url+"/env/shop/ids"), chromedp.WaitVisible(chromedp.CSS("form.decide-change")))
	body := text(t, ctx, "section.changeset")
	for _, want := range []string{"app", "planned with name known after apply", "terraform_data.this"} {
		if !strings.Contains(body, want) {
			t.Errorf("the change set on the page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "knit-known-after-apply") {
		t.Errorf("the page shows a placeholder:\n%s", body)
	}
}
