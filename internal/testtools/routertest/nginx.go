package routertest

import (
	"fmt"
	"testing"
)

// Nginx is the example's nginx router
// (examples/canary-nginx/modules/nginx-router/nginx.sh), in a prefix
// folder of its own.
type Nginx struct {
	// URL is http://127.0.0.1:PORT.
	URL   string
	run   *Run
	state string
}

// Nginx starts nginx sending canaryWeight percent of the requests to
// canary and the rest to stable (HOST:PORT each).
func (r *Run) Nginx(t testing.TB, stable, canary string, canaryWeight int) *Nginx {
	t.Helper()
	n := &Nginx{run: r, state: r.folder(t, "nginx")}
	n.Route(t, stable, canary, canaryWeight)
	n.URL = "http://" + readAddr(t, n.state)
	return n
}

// Route writes the upstream file and reloads nginx, returning once the
// new workers answer, as the router component's apply does.
func (n *Nginx) Route(t testing.TB, stable, canary string, canaryWeight int) {
	t.Helper()
	n.run.script(t, "canary-nginx/modules/nginx-router/nginx.sh",
		[]string{"STATE=" + n.state, "STABLE=" + stable, "CANARY=" + canary, fmt.Sprintf("CANARY_WEIGHT=%d", canaryWeight)}, "apply")
}
