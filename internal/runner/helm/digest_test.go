package helm

import (
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
)

// TestDigestIsStableOverSubchartOrder: Helm's loader adds a chart's
// subcharts in map order, a new order at each load; the digest (and so the
// fingerprint) of the same files must not change with it. A chart with
// several subcharts (kube-prometheus-stack) was re-planned on most no-op
// applies.
func TestDigestIsStableOverSubchartOrder(t *testing.T) {
	var first string
	orders := map[string]bool{}
	for i := 0; i < 30; i++ {
		ch, err := loader.Load("testdata/umbrella")
		if err != nil {
			t.Fatal(err)
		}
		order := ""
		for _, d := range ch.Dependencies() {
			order += d.Name() + " "
		}
		orders[order] = true
		d := digest(ch)
		if i == 0 {
			first = d
		} else if d != first {
			t.Fatalf("load %d: digest %s, first %s (subcharts in order %s)", i, d, first, order)
		}
	}
	t.Logf("%d subchart orders seen", len(orders))
}
