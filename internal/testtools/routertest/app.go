package routertest

import (
	"fmt"
	"testing"
)

// App is a running instance of the example app
// (examples/canary-nginx/modules/app/app.sh: Debian's haproxy answering
// each request with its version, with Prometheus metrics at /metrics).
type App struct {
	// Addr is 127.0.0.1:PORT; URL is http://Addr.
	Addr, URL string
	// Version is what it answers.
	Version string
	run     *Run
	state   string
	targets string
}

// App starts an instance answering version, errorPercent percent of the
// requests with a 500 (exactly: 20 fails every fifth), registered as a
// Prometheus target labelled version and component=version.
func (r *Run) App(t testing.TB, version string, errorPercent int) *App {
	t.Helper()
	a := &App{Version: version, run: r, state: r.folder(t, "app"), targets: r.Targets()}
	a.Start(t, errorPercent)
	return a
}

// Start starts the instance again (stopped or not), on its port if that
// is free, else on another.
func (a *App) Start(t testing.TB, errorPercent int) {
	t.Helper()
	a.run.script(t, "canary-nginx/modules/app/app.sh", a.env(errorPercent), "start")
	a.Addr = readAddr(t, a.state)
	a.URL = "http://" + a.Addr
}

// Targets is the folder of Prometheus targets the apps register in.
func (r *Run) Targets() string { return r.Dir + "/targets" }

// Stop stops the instance (its port refuses connections after).
func (a *App) Stop(t testing.TB) {
	t.Helper()
	a.run.script(t, "canary-nginx/modules/app/app.sh", a.env(0), "stop")
}

func (a *App) env(errorPercent int) []string {
	return []string{"STATE=" + a.state, "VERSION=" + a.Version, fmt.Sprintf("ERROR_PERCENT=%d", errorPercent),
		"TARGETS=" + a.targets, "COMPONENT=" + a.Version}
}
