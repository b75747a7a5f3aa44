package web_test

import (
	"context"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/testtools"
)

// The run page shows what the policies decided about the run's plan,
// each decision with its policy file, line and rule.
func TestRunPageShowsPolicyDecisions(t *testing.T) {
	policies := t.TempDir()
	testtools.WriteFiles(t, policies, map[string]string{"look.rego": "package knit\n\nwarn contains {\"msg\": \"look twice\", \"component\": \"site\"} if true\n"})
	w := newWorld(t, adapters.Config{Config: knit.Config{Policies: []string{policies}}})
	dir := filepath.Join(w.dir, "ops")
	testtools.WriteFiles(t, dir, map[string]string{"env.yaml": opsWeb})
	env, diags := spec.Load(filepath.Join(dir, "env.yaml"))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	res, err := knit.NewRun(w.k, knit.RunRequest{Kind: "apply", Env: env, Actor: "ann", Source: "cli"}).Run(context.Background())
	if err != nil || res.Status != "succeeded" {
		t.Fatalf("apply: %v %+v", err, res)
	}
	viewer := w.client("viewer")
	code, page := get(t, viewer, w.url+"/runs/"+res.RunID)
	text := strings.Join(strings.Fields(regexp.MustCompile(`<[^>]*>`).ReplaceAllString(page, " ")), " ")
	want := "warn look twice · component site (" + filepath.Join(policies, "look.rego") + ":3 warn)"
	if code != http.StatusOK || !strings.Contains(text, want) {
		t.Errorf("the run page (%d) lacks %q:\n%s", code, want, text)
	}
}
