package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/testtools/routertest"
)

// exampleWorld copies examples/NAME into a new world, its run_dir (where
// the example's processes keep their state) replaced by a routertest run
// folder, whose processes die with the test, and returns the world, the
// run and the environment file's path in the world.
func exampleWorld(t *testing.T, name string) (*world, *routertest.Run, string) {
	t.Helper()
	w := newWorld(t)
	run := routertest.NewRun(t)
	copyTree(t, filepath.Join(repo, "examples", name), w.path(name))
	file := filepath.Join(name, "environment.yaml")
	text := w.read(file)
	zlocal := "{name: run_dir, value: /tmp/knit-" + name + "}"
	if !strings.Contains(text, zlocal) {
		t.Fatalf("examples/%s/environment.yaml has no %s", name, zlocal)
	}
	w.write(map[string]string{file: strings.Replace(text, zlocal, "{name: run_dir, value: "+run.Dir+"}", 1)})
	return w, run, file
}

// output is a component's output, as knit output prints it.
func (w *world) output(env, component, name string) string {
	w.t.Helper()
	return strings.TrimSpace(w.ok("output", env, component, name).stdout)
}

// TestExampleCanaryNginxRunsOnLoopback: the canary example's first apply
// (a plain one) starts Prometheus, the app (v1) and nginx; the router
// sends every request to v1; Prometheus scrapes the app under its
// component's name (the label the example's analysis queries); teardown
// stops every process.
func TestExampleCanaryNginxRunsOnLoopback(t *testing.T) {
	t.Parallel()
	w, _, file := exampleWorld(t, "canary-nginx")
	w.ok("apply", "-f", file)
	router := w.output("shop/canary-nginx", "router", "url")
	if c := routertest.Send(t, router, 50); c.ByVersion["v1"] != 50 {
		t.Fatalf("through the router: %+v", c)
	}
	prom := &routertest.Prometheus{URL: w.output("shop/canary-nginx", "prometheus", "url")}
	prom.Await(t, `sum(haproxy_frontend_http_responses_total{component="app",version="v1",code="2xx"})`,
		func(v float64) bool { return v >= 50 })

	w.ok("teardown", "-f", file, "--auto-approve")
	if c := routertest.Send(t, router, 1); c.Failed != 1 {
		t.Errorf("the router answers after teardown: %+v", c)
	}
	if _, _, err := prom.Query(context.Background(), "up"); err == nil {
		t.Errorf("Prometheus answers after teardown")
	}
}

// TestExampleBlueGreenHAProxyRunsOnLoopback: the blue/green example's
// first apply starts the app (v1) and haproxy; the live and the preview
// address both reach it while no green is up; teardown stops both.
func TestExampleBlueGreenHAProxyRunsOnLoopback(t *testing.T) {
	t.Parallel()
	w, _, file := exampleWorld(t, "blue-green-haproxy")
	w.ok("apply", "-f", file)
	live := w.output("shop/blue-green-haproxy", "router", "url")
	preview := w.output("shop/blue-green-haproxy", "router", "preview_url")
	for _, u := range []string{live, preview} {
		if c := routertest.Send(t, u, 20); c.ByVersion["v1"] != 20 {
			t.Fatalf("%s: %+v", u, c)
		}
	}
	w.ok("teardown", "-f", file, "--auto-approve")
	if c := routertest.Send(t, live, 1); c.Failed != 1 {
		t.Errorf("the router answers after teardown: %+v", c)
	}
}

// TestExampleAppModulesAreOne: both examples ship the same app module
// (each example is a folder people copy whole), byte for byte.
func TestExampleAppModulesAreOne(t *testing.T) {
	t.Parallel()
	for _, f := range []string{"main.tf", "app.sh"} {
		a, err := os.ReadFile(filepath.Join(repo, "examples", "canary-nginx", "modules", "app", f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(repo, "examples", "blue-green-haproxy", "modules", "app", f))
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(b) {
			t.Errorf("examples/*/modules/app/%s differ: change both", f)
		}
	}
}
