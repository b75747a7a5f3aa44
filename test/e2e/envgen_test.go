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

// clustersSet is team CTEAM's set of clusters, one per name, each
// labelled role=cluster and with its region.
func clustersSet(team string, names ...string) string {
	var els []string
	for _, n := range names {
		els = append(els, fmt.Sprintf("{name: %s, region: r-%s, parameters: {name: %s}}", n, n, n))
	}
	return `apiVersion: knit.dev/v1
kind: EnvironmentSet
metadata: {name: clusters}
spec:
  teamName: ` + team + `
  envName: "{{ .name }}"
  autoApprove: true
  labels: {role: cluster, region: "{{ .region }}"}
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

// The set generated from live environments, with one team's own clusters
// (their names and labels): each app follows its cluster in, and goes
// before it.
func TestGitOpsSetGeneratedFromLiveEnvironments(t *testing.T) {
	w := newWorld(t)
	repo := fleetRepo(t, w, clustersSet("shop", "c1", "c2", "c3"), appsSet("https://{{ .env.name }}.{{ .env.labels.region }}"))
	head := git(t, repo.work, "rev-parse", "HEAD")
	s := w.startServer(gitServerArgs(repo)...)
	for _, c := range []string{"c1", "c2", "c3"} {
		s.eventually("app-"+c+" applied", func() bool { e, _ := s.env("shop/app-" + c); return e.Status == "provisioned" })
		if got := w.read("files/app-" + c + ".txt"); got != "https://"+c+".r-"+c {
			t.Errorf("app-%s.txt = %q", c, got)
		}
	}
	if revs := s.revisions("shop/app-c1"); len(revs) == 0 || revs[0].Commit != head || !strings.HasSuffix(revs[0].Source, "envs/apps.yaml#app-c1") {
		t.Errorf("app-c1's revisions %+v: want one of the set's element at %s", revs, head[:10])
	}

	// A fourth cluster: its app follows once it is applied, with no
	// commit but the cluster's.
	fourth := repo.commit("clusters: c4", map[string]string{"envs/clusters.yaml": clustersSet("shop", "c1", "c2", "c3", "c4")})
	s.eventually("app-c4 applied", func() bool { e, _ := s.env("shop/app-c4"); return e.Status == "provisioned" })
	s.logged("app-c4 made on the live environments' change", regexp.MustCompile(`live environments changed: re-evaluating environment sets","commit":"`+fourth[:10]))
	if got := w.read("files/app-c4.txt"); got != "https://c4.r-c4" {
		t.Errorf("app-c4.txt = %q", got)
	}

	// c2 removed: app-c2 is torn down first, then c2.
	repo.commit("clusters: c2 retired", map[string]string{"envs/clusters.yaml": clustersSet("shop", "c1", "c3", "c4")})
	s.eventually("c2 torn down", func() bool { return s.tornDown("shop/c2") })
	if !s.tornDown("shop/app-c2") {
		t.Fatal("c2 torn down before its app")
	}
	app, cl := s.lastRun("shop/app-c2"), s.lastRun("shop/c2")
	if app.Kind != "teardown" || cl.Kind != "teardown" || cl.StartedAt.Before(app.FinishedAt) {
		t.Errorf("app-c2's teardown %+v must end before c2's starts %+v", app, cl)
	}
	if _, err := os.Stat(w.path("files/app-c2.txt")); err == nil {
		t.Error("app-c2.txt survived its cluster's retirement")
	}
	s.logged("c2's teardown waited for app-c2", regexp.MustCompile(`teardown waits for the environments generated from it","env":"shop/c2","generated":\["shop/app-c2"\]`))
	for _, c := range []string{"c1", "c3", "c4"} {
		if e, _ := s.env("shop/app-" + c); e.Status != "provisioned" {
			t.Errorf("app-%s is %s, want provisioned", c, e.Status)
		}
	}
}
