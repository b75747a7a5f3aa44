package kubecontroller_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/kubecontroller"
	"knit.dev/knit/internal/kubetest"
	"knit.dev/knit/internal/testtools"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// fileModule manages one real file through the hashicorp/local provider,
// so editing the file out of band is real drift.
const fileModule = `
terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "1.4.0" }
  }
}
variable "path" { type = string }
variable "content" { type = string }
resource "local_file" "f" {
  filename = var.path
  content  = var.content
}
output "id" { value = local_file.f.id }
`

// harness is a test API server with the CRDs installed, a namespace, and
// knit controller running against it on a fresh data dir.
type harness struct {
	t       *testing.T
	cluster *kubetest.Cluster
	c       client.Client
	ns      string
	files   string // where the environments' components write
	dataDir string // knit's, which the CLI may use too
	k       *knit.Knit
	// ctlConfig is who the controller acts as (default the administrator).
	ctlConfig *rest.Config
}

// start installs the CRDs with kubectl apply -f deploy/crds (as a person
// would), and runs the controller until the test ends; the namespace acts
// for team qa.
func start(t *testing.T) *harness {
	t.Helper()
	return startWith(t, nil)
}

// startWith is start with the controller's options changed by opts.
func startWith(t *testing.T, opts func(h *harness, o *kubecontroller.Options)) *harness {
	t.Helper()
	tofu := testtools.Tofu(t)
	cluster := kubetest.Start(t)
	h := &harness{t: t, cluster: cluster, files: t.TempDir(), dataDir: t.TempDir()}
	h.kubectl("apply", "-f", filepath.Join(testtools.ModuleRoot(t), "deploy", "crds"))
	for _, crd := range []string{"environments.knit.dev", "environments.stable.cloudknit.io", "environmentapprovals.knit.dev"} {
		waitFor(t, crd+" established", func() bool {
			out, err := h.kubectlMay("get", "crd", crd, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
			return err == nil && out == "True"
		})
	}
	h.ns = cluster.Namespace(t)
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := kubecontroller.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	h.c = c

	ctx, cancel := context.WithCancel(context.Background())
	k, err := adapters.Open(ctx, adapters.Config{
		Config: knit.Config{DataDir: h.dataDir},
		Tools: adapters.Tools{TFBinary: tofu.Path, KubeRunner: testtools.KnitKube(t), Getenv: func(k string) string {
			if k == "TF_CLI_CONFIG_FILE" {
				return tofu.CLIConfig
			}
			return os.Getenv(k)
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	h.k = k
	o := kubecontroller.Options{Knit: k, Namespace: h.ns, Interval: time.Second,
		Tenancy: kubecontroller.Tenancy{Teams: map[string]string{h.ns: "qa"}},
		Log:     slog.New(slog.NewTextHandler(testWriter{t}, nil))}
	if opts != nil {
		opts(h, &o)
	}
	done := make(chan error, 1)
	cfg := cluster.Config
	if h.ctlConfig != nil {
		cfg = h.ctlConfig
	}
	go func() { done <- kubecontroller.Run(ctx, cfg, o) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller: %v", err)
		}
		k.Close()
	})
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (h *harness) kubectl(args ...string) string {
	h.t.Helper()
	out, err := h.kubectlMay(args...)
	if err != nil {
		h.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// kubectlMay runs kubectl and returns its output and error.
func (h *harness) kubectlMay(args ...string) (string, error) {
	cmd := exec.Command(h.cluster.Kubectl, append([]string{"--kubeconfig", h.cluster.KubeconfigPath}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// apply writes doc to a file and kubectl-applies it in the namespace.
func (h *harness) apply(doc string) {
	h.t.Helper()
	path := filepath.Join(h.t.TempDir(), "doc.yaml")
	doc = strings.NewReplacer("FILES", h.files).Replace(doc)
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		h.t.Fatal(err)
	}
	h.kubectl("apply", "-n", h.ns, "-f", path)
}

// moduleConfigMap holds the file module, for spec.sources.
func (h *harness) moduleConfigMap() {
	h.t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "file-module", Namespace: h.ns},
		Data: map[string]string{"main.tf": fileModule}}
	if err := h.c.Create(context.Background(), cm); err != nil {
		h.t.Fatal(err)
	}
}

// deadline guards the waits: long enough for a loaded 2-core machine;
// the tests wait on the API server's objects, never on a clock.
const deadline = 4 * time.Minute

// waitEnv waits until ok holds for Environment name and returns it.
func (h *harness) waitEnv(name, what string, ok func(*kubecontroller.Environment) bool) *kubecontroller.Environment {
	h.t.Helper()
	end := time.Now().Add(deadline)
	var e kubecontroller.Environment
	for {
		err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &e)
		if err == nil && ok(&e) {
			return &e
		}
		if time.Now().After(end) {
			h.t.Fatalf("Environment %s: no %s; last seen (%v):\n%s", name, what, err, describe(&e))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitGone waits until Environment name is deleted.
func (h *harness) waitGone(name string) {
	h.t.Helper()
	end := time.Now().Add(deadline)
	var e kubecontroller.Environment
	for {
		err := h.c.Get(context.Background(), types.NamespacedName{Namespace: h.ns, Name: name}, &e)
		if apierrors.IsNotFound(err) {
			return
		}
		if time.Now().After(end) {
			h.t.Fatalf("Environment %s is still there (%v):\n%s", name, err, describe(&e))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func describe(e *kubecontroller.Environment) string {
	var b strings.Builder
	fmt.Fprintf(&b, "generation %d observed %d finalizers %v deleting %v\n", e.Generation, e.Status.ObservedGeneration, e.Finalizers, e.DeletionTimestamp != nil)
	for _, c := range e.Status.Conditions {
		fmt.Fprintf(&b, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, c := range e.Status.Components {
		fmt.Fprintf(&b, "  component %s %s %s %s\n", c.Name, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

// cond returns condition typ's status and reason.
func cond(e *kubecontroller.Environment, typ string) (metav1.ConditionStatus, string) {
	c := meta.FindStatusCondition(e.Status.Conditions, typ)
	if c == nil {
		return "", ""
	}
	return c.Status, c.Reason
}

func condIs(typ string, status metav1.ConditionStatus) func(*kubecontroller.Environment) bool {
	return func(e *kubecontroller.Environment) bool {
		s, _ := cond(e, typ)
		return s == status && e.Status.ObservedGeneration == e.Generation
	}
}

func readFile(t *testing.T, path string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func replaceAll(s, old, new string) string { return strings.ReplaceAll(s, old, new) }

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// waitFor waits until ok holds.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	end := time.Now().Add(deadline)
	for !ok() {
		if time.Now().After(end) {
			t.Fatalf("no %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
