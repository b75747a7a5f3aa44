package archtest

import (
	"strings"
	"testing"
)

// heavyInit are libraries whose package initialisation costs every process
// that links them milliseconds at start-up: client-go registers every API
// type, controller-runtime its metrics, Helm both, and the JSON-schema
// library compiles every draft's metaschema. knit-kube links them; knit,
// started for every command and every tool watchdog, must not.
var heavyInit = []string{
	"k8s.io/",
	"sigs.k8s.io/controller-runtime",
	"helm.sh/",
	"github.com/santhosh-tekuri/jsonschema",
}

// TestKnitLinksNoHeavyInit: cmd/knit reaches none of heavyInit, through
// any package (knit controller runs in knit-kube: see cli.Kube; chart
// values are checked by knit-kube's values-check).
func TestKnitLinksNoHeavyInit(t *testing.T) {
	pkgs := load(t)
	r := rule{Pkg: "knit.dev/knit/cmd/knit", Why: "knit starts for every command: its start-up must stay cheap", Forbid: func(p string) bool {
		for _, h := range heavyInit {
			if strings.HasPrefix(p, h) {
				return true
			}
		}
		return false
	}}
	for _, v := range violations(t, pkgs, r) {
		t.Errorf("%s (%s)", v, r.Why)
	}
}
