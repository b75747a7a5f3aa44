package e2e

import (
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

// TestExampleAppModulesAreOne: both examples ship the same app module
// (each example is a folder people copy whole), byte for byte.
func TestExampleAppModulesAreOne(t *testing.T) {
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
