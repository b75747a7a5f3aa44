// Package kubetest starts a real Kubernetes API server (etcd and
// kube-apiserver, no kubelet: objects are stored, pods never run) on
// loopback, once per test package, for the helm and manifests runners and
// the end-to-end tests. Import it from _test files only. No controllers
// run, except a stand-in for the namespace controller: a deleted namespace
// goes away (see finalizeNamespaces), so teardowns that wait for it end.
//
// The binaries come from `make tools` (.tools/kube) or KUBEBUILDER_ASSETS.
// When they are missing a test skips with a message naming `make tools`,
// except when CI=true or KNIT_REQUIRE_TOOLS=1: then it fails.
//
// A package that uses it stops the server when its tests end:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
package kubetest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"knit.dev/knit/internal/runner"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"knit.dev/knit/internal/testtools"
)

// Cluster is a running API server and the ways to reach it as an
// administrator: a rest.Config, a kubeconfig (in memory and as a 0600
// file), and its parts (server URL, CA, bearer token).
type Cluster struct {
	Config         *rest.Config
	Kubeconfig     []byte
	KubeconfigPath string
	Server         string
	CA             []byte
	Token          string
	// Kubectl is the kubectl binary built by `make tools`.
	Kubectl string
	// Client is a typed client with administrator rights.
	Client kubernetes.Interface
	// users are the bearer tokens of the plain users (Users), by name.
	users map[string]string
}

// Users are plain users the API server knows besides the administrator,
// in group UsersGroup and no other: they may do only what RBAC grants
// them (As), so tests can tell who created an object.
var Users = []string{"alice", "bob"}

// UsersGroup is the group of Users, for RoleBindings.
const UsersGroup = "knit-test-users"

// As returns a rest.Config that reaches the server as user (one of Users).
func (c *Cluster) As(t testing.TB, user string) *rest.Config {
	t.Helper()
	token, ok := c.users[user]
	if !ok {
		t.Fatalf("kubetest: no user %q (Users: %v)", user, Users)
	}
	return &rest.Config{Host: c.Server, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: c.CA}}
}

var (
	mu sync.Mutex
	// servers are the package's API servers, started on first use:
	// [0] shared by the tests (Start), [1] another cluster (StartAnother).
	servers [2]server
	running []*envtest.Environment // what Stop stops
	tmps    []string               // what Stop removes
	// stopNS stop the stand-in namespace controllers.
	stopNS []context.CancelFunc
)

// server is one API server of the package, started at most once.
type server struct {
	c       *Cluster
	failed  error
	started bool
}

// binaries are the programs envtest needs in its assets folder.
var binaries = []string{"etcd", "kube-apiserver", "kubectl"}

// Assets returns the folder holding etcd, kube-apiserver and kubectl:
// KUBEBUILDER_ASSETS, else <module root>/.tools/kube. It skips or fails the
// test when one is missing.
func Assets(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping a test that runs a Kubernetes API server")
	}
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		dir = filepath.Join(testtools.ModuleRoot(t), ".tools", "kube")
	}
	for _, b := range binaries {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
			msg := fmt.Sprintf("%s not found in %s: run make tools", b, dir)
			if testtools.Required() {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return dir
}

// Start returns the package's API server, starting it on first use (~3 s).
// It lives until Main's tests end; tests share it, so each works in its own
// namespace (see Namespace).
func Start(t testing.TB) *Cluster {
	t.Helper()
	return startOnce(t, 0)
}

// StartAnother returns a second API server of the package, with etcd of
// its own: another cluster, for tests of what changes when components
// point at another one. It costs as much as the first: use it sparingly.
func StartAnother(t testing.TB) *Cluster {
	t.Helper()
	return startOnce(t, 1)
}

func startOnce(t testing.TB, i int) *Cluster {
	t.Helper()
	assets := Assets(t)
	mu.Lock()
	defer mu.Unlock()
	s := &servers[i]
	if !s.started {
		s.started = true
		s.c, s.failed = start(assets)
	}
	if s.failed != nil {
		t.Fatalf("start test API server %d: %v", i+1, s.failed)
	}
	return s.c
}

// start starts an API server; the caller holds mu.
func start(assets string) (*Cluster, error) {
	tmp, err := os.MkdirTemp("", "knit-kubetest-")
	if err != nil {
		return nil, err
	}
	tmps = append(tmps, tmp)
	token := randomHex(16)
	// A static token for an administrator, so tests can reach the server
	// with endpoint + CA + token, as a cloud cluster's outputs would.
	tokens := filepath.Join(tmp, "tokens.csv")
	lines := token + ",knit-admin,knit-admin,system:masters\n"
	users := map[string]string{}
	for _, u := range Users {
		users[u] = randomHex(16)
		lines += fmt.Sprintf("%s,%s,%s,%s\n", users[u], u, u, UsersGroup)
	}
	if err := os.WriteFile(tokens, []byte(lines), 0o600); err != nil {
		return nil, err
	}
	// envtest logs through controller-runtime, which otherwise prints a
	// stack trace complaining that no logger was set.
	ctrllog.SetLogger(logr.Discard())
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		ControlPlaneStartTimeout: time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	env.ControlPlane.GetAPIServer().Configure().Append("token-auth-file", tokens)
	cfg, err := env.Start()
	if err != nil {
		return nil, err
	}
	running = append(running, env)
	c := &Cluster{
		Server:  cfg.Host,
		CA:      cfg.CAData,
		Token:   token,
		Kubectl: filepath.Join(assets, "kubectl"),
		users:   users,
	}
	c.Config = &rest.Config{Host: cfg.Host, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData}}
	c.Kubeconfig = Kubeconfig(c.Server, c.CA, c.Token)
	c.KubeconfigPath = filepath.Join(tmp, "kubeconfig")
	if err := os.WriteFile(c.KubeconfigPath, c.Kubeconfig, 0o600); err != nil {
		return nil, err
	}
	if c.Client, err = kubernetes.NewForConfig(c.Config); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	stopNS = append(stopNS, stop)
	go finalizeNamespaces(ctx, c.Client)
	return c, nil
}

// Kubeconfig renders a kubeconfig with one cluster, user and context
// ("test") for server, CA and a bearer token.
func Kubeconfig(server string, ca []byte, token string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, certificate-authority-data: %s}
users:
- name: test
  user: {token: %q}
contexts:
- name: test
  context: {cluster: test, user: test}
current-context: test
`, server, base64.StdEncoding.EncodeToString(ca), token))
}

// Main runs the package's tests, then stops the API server if one started.
func Main(m *testing.M) {
	code := m.Run()
	Stop()
	os.Exit(code)
}

// Stop stops the API servers that started and removes their files. A
// package whose TestMain does more than Main calls it after m.Run.
func Stop() {
	mu.Lock()
	defer mu.Unlock()
	for _, stop := range stopNS {
		stop()
	}
	stopNS = nil
	for _, env := range running {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "kubetest: stop:", err)
		}
	}
	for _, tmp := range tmps {
		os.RemoveAll(tmp)
	}
	running, tmps = nil, nil
}

// Namespace creates a namespace named after the test (plus a random
// suffix) and returns its name. It is left behind: the server is thrown away.
func (c *Cluster) Namespace(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(t.Name())
	name = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, name)
	if len(name) > 40 {
		name = name[:40]
	}
	name = strings.Trim(name, "-") + "-" + randomHex(3)
	_, err := c.Client.CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return name
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// Summary lists a plan's resource changes as "action address attrs".
func Summary(p *runner.Plan) []string {
	var out []string
	for _, r := range p.Resources {
		s := string(r.Action) + " " + r.Address
		if len(r.Attributes) > 0 {
			s += " " + strings.Join(r.Attributes, ",")
		}
		out = append(out, s)
	}
	return out
}

// Want fails t unless got equals want.
func Want(t testing.TB, what string, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}
