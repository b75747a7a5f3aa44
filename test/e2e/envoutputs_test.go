package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// producerFile is platform/eu-1: a counted component whose id is
// exported to team shop.
func producerFile(name string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: eu-1}
spec:
  teamName: platform
  envName: eu-1
  autoApprove: true
  exports:
    - {output: cluster.id, teams: [shop]}
  components:
    - name: cluster
      type: terraform
      module: {source: ./modules/counted}
      outputs: [{name: id}]
      variables:
        - {name: name, value: %s}
`, name)
}

// readerFile is TEAM/ENV whose component app takes platform/eu-1's
// cluster.id as its extra input.
func readerFile(team, env string) string {
	return fmt.Sprintf(`apiVersion: knit.dev/v1
kind: Environment
metadata: {name: %[1]s-%[2]s}
spec:
  teamName: %[1]s
  envName: %[2]s
  autoApprove: true
  components:
    - name: app
      type: terraform
      module: {source: ./modules/counted}
      outputs: [{name: id}]
      variables:
        - {name: name, value: app}
        - {name: extra, valueFrom: {environment: platform/eu-1, output: cluster.id}}
`, team, env)
}

func (s *server) runs(env string) []apiRun {
	var runs struct{ Items []apiRun }
	s.do("GET", "/api/v1/environments/"+env+"/runs", nil, &runs)
	return runs.Items
}

// Under knit serve, a consumer committed before its producer waits
// (UpstreamEnvironmentNotReady), applies once the producer does, and is
// applied again when the producer's exported output changes; an
// environment that reads nothing of it is left alone (counted by a
// wrapper around the real tofu).
func TestConsumerWaitsForItsProducerAndFollowsItsChanges(t *testing.T) {
	w := newWorld(t)
	w.countingTofu()
	other := envFile("other", countedComp("lone", ""))
	repo := newGitRepo(t, map[string]string{
		"envs/modules/counted/main.tf": countedModule,
		"envs/web.yaml":                readerFile("shop", "web"),
		"envs/other.yaml":              strings.Replace(other, "teamName: qa", "teamName: shop", 1),
	})
	s := w.startServer(gitServerArgs(repo)...)
	s.eventually("shop/other applied", func() bool { e, _ := s.env("shop/other"); return e.Status == "provisioned" })
	s.eventually("shop/web waiting for platform/eu-1", func() bool {
		e, _ := s.env("shop/web")
		runs := s.runs("shop/web")
		return e.Status == "waiting" && len(runs) > 0 && runs[0].Status == "waiting"
	})
	var view struct {
		Components []struct {
			Name, Status string
			ReasonCode   string   `json:"reasonCode"`
			Upstream     []string `json:"upstream"`
		}
	}
	s.do("GET", "/api/v1/environments/shop/web", nil, &view)
	if len(view.Components) != 1 || view.Components[0].ReasonCode != "UpstreamEnvironmentNotReady" || strings.Join(view.Components[0].Upstream, ",") != "platform/eu-1" {
		t.Errorf("shop/web's components: %+v", view.Components)
	}
	if calls := w.calls(); strings.Contains(strings.Join(calls["app"], " "), "apply") {
		t.Errorf("app applied before its producer: %v", calls["app"])
	}

	first := repo.commit("platform: eu-1", map[string]string{"envs/platform.yaml": producerFile("v1")})
	s.eventually("platform/eu-1 applied", func() bool { return s.appliedFrom("platform/eu-1", first) })
	s.eventually("shop/web applied after its producer", func() bool {
		e, _ := s.env("shop/web")
		return e.Status == "provisioned"
	})
	s.eventually("no run left", func() bool { r := s.runs("shop/web"); return len(r) > 0 && r[0].Status == "succeeded" })
	webRuns := len(s.runs("shop/web"))
	otherRuns := len(s.runs("shop/other"))
	w.calls()

	second := repo.commit("platform: v2", map[string]string{"envs/platform.yaml": producerFile("v2")})
	s.eventually("platform/eu-1 applied again", func() bool { return s.appliedFrom("platform/eu-1", second) })
	s.eventually("shop/web applied again", func() bool {
		r := s.runs("shop/web")
		return len(r) > webRuns && r[0].Status == "succeeded"
	})
	calls := w.calls()
	for _, comp := range []string{"cluster", "app"} {
		if !strings.Contains(strings.Join(calls[comp], " "), "apply") {
			t.Errorf("%s was not applied after the producer's change: %v", comp, calls[comp])
		}
	}
	if len(calls["lone"]) > 0 || len(s.runs("shop/other")) != otherRuns {
		t.Errorf("shop/other reads nothing of platform/eu-1 but ran %v", calls["lone"])
	}

	// The producer's view names its consumers.
	var consumers struct{ Consumers []string }
	if code := s.do("GET", "/api/v1/environments/platform/eu-1", nil, &consumers); code != 200 || strings.Join(consumers.Consumers, ",") != "shop/web" {
		t.Errorf("consumers of platform/eu-1: %d %v", code, consumers.Consumers)
	}
}

// A read of an output the producer does not export to the reader's team
// fails knit validate (with a store to ask) with the reason and the fix;
// a producer read by another environment cannot be torn down before it.
func TestExportsAreCheckedAtValidationAndGuardTheProducersTeardown(t *testing.T) {
	w := newWorld(t)
	w.countingTofu()
	w.write(map[string]string{"platform.yaml": producerFile("v1"), "ops.yaml": readerFile("ops", "web"), "web.yaml": readerFile("shop", "web")})

	// Before the producer applies, a read is only a warning: it will wait.
	w.ok("apply", "-f", "platform.yaml", "--auto-approve")
	r := w.knit("validate", "-f", "ops.yaml")
	if r.code != 1 || !strings.Contains(r.stdout, "ops.yaml:15:") ||
		!strings.Contains(r.stdout, "spec.components[0].variables[1].valueFrom: platform/eu-1 does not export cluster.id to team ops (it exports it only to team shop)") ||
		!strings.Contains(r.stdout, "add {output: cluster.id, teams: [ops]} to the spec.exports of platform/eu-1") {
		t.Errorf("validate ops.yaml: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.knit("apply", "-f", "ops.yaml", "--auto-approve"); r.code != 1 || !strings.Contains(r.stdout+r.stderr, "does not export cluster.id to team ops") {
		t.Errorf("apply ops.yaml: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	w.ok("validate", "-f", "web.yaml")
	w.ok("apply", "-f", "web.yaml", "--auto-approve")

	// The environment-level graph: producer → consumers.
	r = w.ok("graph", "--environments")
	if !strings.Contains(r.stdout, "environments: 3 environments in 2 levels") || !strings.Contains(r.stdout, "platform/eu-1 (applied)") ||
		!regexp.MustCompile(`shop/web \(applied\) +← platform/eu-1`).MatchString(r.stdout) {
		t.Errorf("graph --environments:\n%s", r.stdout)
	}
	var g struct {
		Nodes []struct {
			Name      string
			DependsOn []string
		}
	}
	if err := json.Unmarshal([]byte(w.ok("graph", "--environments", "-o", "json").stdout), &g); err != nil || len(g.Nodes) != 3 {
		t.Errorf("graph --environments -o json: %v %+v", err, g)
	}
	for _, format := range []string{"dot", "mermaid"} {
		if out := w.ok("graph", "--environments", "-o", format).stdout; !strings.Contains(out, "platform") || !strings.Contains(out, "->") && !strings.Contains(out, "-->") {
			t.Errorf("graph --environments -o %s:\n%s", format, out)
		}
	}

	r = w.knit("teardown", "platform/eu-1", "--auto-approve")
	if r.code != 1 || !strings.Contains(r.stderr, "platform/eu-1 is read by ops/web, shop/web: tear them down first") {
		t.Errorf("teardown of the producer: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	w.calls()
	w.ok("teardown", "shop/web", "--auto-approve")
	w.ok("teardown", "ops/web", "--auto-approve")
	w.ok("teardown", "platform/eu-1", "--auto-approve")
	if calls := w.calls(); !strings.Contains(strings.Join(calls["cluster"], " "), "destroy") {
		t.Errorf("the producer was not destroyed: %v", calls)
	}
}
