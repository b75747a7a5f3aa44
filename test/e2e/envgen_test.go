package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Issue 41 item 2: sets generated from environments (the cluster
// generator). A "clusters" set labels its environments role=cluster; an
// "apps" set generates one environment per live cluster.

// standInCluster stands in for a cluster: its endpoint is an output.
const standInCluster = `
variable "name" { type = string }
resource "terraform_data" "c" { input = var.name }
output "endpoint" { value = "https://${terraform_data.c.output}.example" }
`

const clusterTemplate = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: cluster}
spec:
  parameters:
    - {name: name, type: string, required: true}
  components:
    - name: cluster
      type: terraform
      module: {source: ../modules/cluster}
      outputs: [{name: endpoint}]
      variables:
        - {name: name, value: "${param.name}"}
`

// appTemplate writes FILES/NAME.txt holding the cluster's endpoint.
const appTemplate = `apiVersion: knit.dev/v1
kind: EnvironmentTemplate
metadata: {name: app}
spec:
  parameters:
    - {name: name, type: string, required: true}
    - {name: endpoint, type: string, required: true}
  components:
    - name: app
      type: terraform
      module: {source: ../modules/file}
      variables:
        - {name: path, value: "FILES/${param.name}.txt"}
        - {name: content, value: "${param.endpoint}"}
`

// clustersSet is team's set of clusters, one per element NAME or
// NAME:ROLE (role cluster by default), each labelled with its role and
// region, exporting its endpoint to team shop.
func clustersSet(team string, elements ...string) string {
	var els []string
	for _, el := range elements {
		n, role, ok := strings.Cut(el, ":")
		if !ok {
			role = "cluster"
		}
		els = append(els, fmt.Sprintf("{name: %s, role: %s, region: r-%s, parameters: {name: %s}}", n, role, n, n))
	}
	return `apiVersion: knit.dev/v1
kind: EnvironmentSet
metadata: {name: clusters}
spec:
  teamName: ` + team + `
  envName: "{{ .name }}"
  autoApprove: true
  labels: {role: "{{ .role }}", region: "{{ .region }}"}
  exports: [{output: cluster.endpoint, teams: [shop]}]
  template: {path: ../templates/cluster.yaml}
  generators:
    - list: {elements: [` + strings.Join(els, ", ") + `]}
`
}

// appsSet is team shop's set of one app per live cluster, reading its
// endpoint as endpoint says.
func appsSet(endpoint string) string {
	return `apiVersion: knit.dev/v1
kind: EnvironmentSet
metadata: {name: apps}
spec:
  teamName: shop
  envName: "app-{{ .env.name }}"
  autoApprove: true
  template: {path: ../templates/app.yaml}
  parameters: {name: "app-{{ .env.name }}", endpoint: "` + endpoint + `"}
  generators:
    - environments:
        selector:
          matchLabels: {role: cluster}
          matchExpressions: [{key: region, operator: Exists}]
`
}

func fleetRepo(t *testing.T, w *world, clusters, apps string) *gitRepo {
	return newGitRepo(t, map[string]string{
		"modules/file/main.tf":    fileModule,
		"modules/cluster/main.tf": standInCluster,
		"templates/cluster.yaml":  clusterTemplate,
		"templates/app.yaml":      strings.ReplaceAll(appTemplate, "FILES", w.path("files")),
		"envs/clusters.yaml":      clusters,
		"envs/apps.yaml":          apps,
	})
}

// lastRun is env's newest run: its kind, status and times.
type lastRun struct {
	Kind, Status string
	StartedAt    time.Time `json:"startedAt"`
	FinishedAt   time.Time `json:"finishedAt"`
}

func (s *server) lastRun(env string) lastRun {
	var runs struct{ Items []lastRun }
	s.do("GET", "/api/v1/environments/"+env+"/runs", nil, &runs)
	if len(runs.Items) == 0 {
		return lastRun{}
	}
	return runs.Items[0]
}

func (s *server) tornDown(env string) bool {
	e, _ := s.env(env)
	return e.Status == "torn-down"
}

// The acceptance of issue 41 item 2: team platform's clusters export
// their endpoints to team shop, whose apps set makes one app per cluster
// reading its endpoint; a fourth cluster gets its app from the live
// environments' change (no commit but the cluster's); a retired cluster's
// app is torn down before it.
func TestGitOpsAppsGeneratedFromClustersFollowThem(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	repo := fleetRepo(t, w, clustersSet("platform", "c1", "c2", "c3"), appsSet("{{ .env.outputs.cluster.endpoint }}"))
	head := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(gitServerArgs(repo)...)
	for _, c := range []string{"c1", "c2", "c3"} {
		s.eventually("app-"+c+" applied", func() bool { e, _ := s.env("shop/app-" + c); return e.Status == "provisioned" })
		if got := w.read("files/app-" + c + ".txt"); got != "https://"+c+".example" {
			t.Errorf("app-%s.txt = %q, want its cluster's endpoint", c, got)
		}
	}
	if revs := s.revisions("shop/app-c1"); len(revs) == 0 || revs[0].Commit != head || !strings.HasSuffix(revs[0].Source, "envs/apps.yaml#app-c1") {
		t.Errorf("app-c1's revisions %+v: want one of the set's element at %s", revs, head[:10])
	}

	fourth := repo.commit("clusters: c4", map[string]string{"envs/clusters.yaml": clustersSet("platform", "c1", "c2", "c3", "c4")})
	s.eventually("app-c4 applied", func() bool { e, _ := s.env("shop/app-c4"); return e.Status == "provisioned" })
	s.logged("app-c4 made on the live environments' change", regexp.MustCompile(`live environments changed: re-evaluating environment sets","commit":"`+fourth[:10]))
	if got := w.read("files/app-c4.txt"); got != "https://c4.example" {
		t.Errorf("app-c4.txt = %q", got)
	}

	// c2 retired and c3 relabelled in one commit: both apps go, c2's
	// before c2, and c3 stays.
	repo.commit("clusters: c2 retired, c3 a database", map[string]string{"envs/clusters.yaml": clustersSet("platform", "c1", "c3:database", "c4")})
	s.eventually("c2 torn down", func() bool { return s.tornDown("platform/c2") })
	if !s.tornDown("shop/app-c2") {
		t.Fatal("c2 torn down before its app")
	}
	app, cl := s.lastRun("shop/app-c2"), s.lastRun("platform/c2")
	if app.Kind != "teardown" || cl.Kind != "teardown" || cl.StartedAt.Before(app.FinishedAt) {
		t.Errorf("app-c2's teardown %+v must end before c2's starts %+v", app, cl)
	}
	s.logged("c2's teardown waited for app-c2", regexp.MustCompile(`teardown waits for the environments generated from it","env":"platform/c2","generated":\["shop/app-c2"\]`))
	if _, err := os.Stat(w.path("files/app-c2.txt")); err == nil {
		t.Error("app-c2.txt survived its cluster's retirement")
	}
	s.eventually("app-c3 torn down once c3 no longer matches", func() bool { return s.tornDown("shop/app-c3") })
	if e, _ := s.env("platform/c3"); e.Status != "provisioned" {
		t.Errorf("c3 is %s, want provisioned: only its label changed", e.Status)
	}
	for _, c := range []string{"c1", "c4"} {
		if e, _ := s.env("shop/app-" + c); e.Status != "provisioned" {
			t.Errorf("app-%s is %s, want provisioned", c, e.Status)
		}
	}
}

// Attacks on the generator: a cluster of a team that exports nothing to
// shop gets no app; a second set selecting the same labels generates its
// own environments beside the first's; a producer of another team whose
// name collides with a cluster's makes the set invalid, naming both
// producers, and changes nothing generated before.
func TestGitOpsEnvironmentsGeneratorAttacks(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	monitors := strings.NewReplacer("name: apps", "name: monitors", "app-{{", "mon-{{").Replace(appsSet("{{ .env.name }}"))
	repo := fleetRepo(t, w, clustersSet("platform", "c1"), appsSet("{{ .env.outputs.cluster.endpoint }}"))
	repo.commit("monitors, and billing's own cluster", map[string]string{
		"envs/monitors.yaml": monitors,
		"envs/billing.yaml":  strings.Replace(clustersSet("billing", "b1"), "teams: [shop]", "teams: [billing]", 1),
	})
	s := w.startServer(gitServerArgs(repo)...)
	s.eventually("app-c1 and mon-c1 applied", func() bool {
		a, _ := s.env("shop/app-c1")
		m, _ := s.env("shop/mon-c1")
		return a.Status == "provisioned" && m.Status == "provisioned"
	})
	s.eventually("billing/b1 applied", func() bool { e, _ := s.env("billing/b1"); return e.Status == "provisioned" })
	if _, code := s.env("shop/app-b1"); code != 404 {
		t.Errorf("billing/b1 exports nothing to shop, yet shop/app-b1 answers %d", code)
	}

	// payments/c1 exports to shop and is labelled a cluster: two app-c1.
	collision := strings.Replace(clustersSet("payments", "c1"), "metadata: {name: clusters}", "metadata: {name: payments}", 1)
	repo.commit("payments: a cluster named c1", map[string]string{"envs/payments.yaml": collision})
	s.eventually("payments/c1 applied", func() bool { e, _ := s.env("payments/c1"); return e.Status == "provisioned" })
	s.eventually("the apps set recorded as invalid", func() bool { return s.invalidRecord("envs/apps.yaml") != "" })
	if why := s.invalidErrors(s.invalidRecord("envs/apps.yaml"), "envs/apps.yaml"); !strings.Contains(why, `two elements generate the envName "app-c1" (made from payments/c1 and from platform/c1)`) {
		t.Errorf("the invalid set's record: %s", why)
	}
	if got := w.read("files/app-c1.txt"); got != "https://c1.example" {
		t.Errorf("app-c1.txt = %q: re-pointed by another team's producer", got)
	}
	if e, _ := s.env("shop/app-c1"); e.Status != "provisioned" {
		t.Errorf("app-c1 is %s after the collision, want provisioned", e.Status)
	}
}
