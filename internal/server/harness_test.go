package server_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"

	"knit.dev/knit/internal/adapters"
	"knit.dev/knit/internal/controller"
	"knit.dev/knit/internal/engine"
	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/fake"
	"knit.dev/knit/internal/server"
	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/store"
)

// hangGuard bounds every wait of these tests: it is never a timing
// assertion, only what turns a hang into a failure.
const hangGuard = 15 * time.Second

// envTemplate is an environment of two script components; NAME prefixes
// the components so environments never share the fake runner's world.
const envTemplate = `
apiVersion: knit.dev/v1
kind: Environment
metadata: {name: NAME}
spec:
  teamName: TEAM
  envName: NAME
  autoApprove: true
EXTRA  components:
    - name: NAME-db
      type: script
      script: {apply: "true"}
      outputs: [{name: host}, {name: password, sensitive: true}]
    - name: NAME-app
      type: script
      autoApprove: APPAUTO
      script: {apply: "true"}
      variables: [{name: db, valueFrom: NAME-db.host}]
`

// envOpts changes the environment a test seeds.
type envOpts struct {
	// gated makes NAME-app wait for approval.
	gated bool
	// otherApprover sets approval: {requireOtherApprover: true}.
	otherApprover bool
}

func envDoc(team, name string, o envOpts) string {
	extra := ""
	if o.otherApprover {
		extra = "  approval: {requireOtherApprover: true}\n"
	}
	return strings.NewReplacer("TEAM", team, "NAME", name, "APPAUTO", strconv.FormatBool(!o.gated), "EXTRA", extra).Replace(envTemplate)
}

// harness is a real knit serve on a loopback port over a knit library with
// a fake script runner, and an HTTP client that checks every exchange
// against the OpenAPI document.
type harness struct {
	t *testing.T
	*fixture
}

// fixture is what a harness's copies for subtests share.
type fixture struct {
	k      *knit.Knit
	dir    string // k's data dir
	srv    *server.Server
	base   string
	runner *fake.Runner
	router routers.Router
	doc    *openapi3.T
	tokens map[string]string // token name → secret

	mu    sync.Mutex
	holds []*hold
}

// hold blocks the first matching runner call until released.
type hold struct {
	op, component string
	entered       chan struct{}
	release       chan struct{}
	once          sync.Once
	used          bool
}

// Release lets the held call go on (idempotent).
func (h *hold) Release() { h.once.Do(func() { close(h.release) }) }

const webhookSecret = "hook-secret"

func newHarness(t *testing.T) *harness { return newHarnessWith(t, server.Config{}) }

// newHarnessWith starts the server with cfg, on a loopback port.
func newHarnessWith(t *testing.T, cfg server.Config) *harness {
	return newHarnessOn(t, cfg, nil, controller.Config{})
}

// newHarnessOn is newHarnessWith over st (nil: the SQLite store in the
// data dir, which knit opens itself), with controllers run as ctl says.
func newHarnessOn(t *testing.T, cfg server.Config, st store.Store, ctl controller.Config) *harness {
	t.Helper()
	return newHarnessKnit(t, cfg, knit.Config{Store: st}, ctl)
}

// newHarnessKnit is newHarnessOn over a knit built from kc (its data dir
// and runners the harness's).
func newHarnessKnit(t *testing.T, cfg server.Config, kc knit.Config, ctl controller.Config) *harness {
	t.Helper()
	h := &harness{t: t, fixture: &fixture{tokens: map[string]string{}}}
	h.runner = &fake.Runner{
		OutputsFor: func(name string, _ runner.Inputs) runner.Outputs {
			if strings.HasSuffix(strings.TrimSuffix(name, "-canary"), "-db") { // a rollout's canary instance too
				return runner.Outputs{"host": {Value: "db.internal"}, "password": {Value: "pw", Sensitive: true}}
			}
			return nil
		},
		Hook: h.hook,
	}
	ctx := context.Background()
	h.dir = t.TempDir()
	kc.DataDir, kc.Runners = h.dir, map[string]runner.Runner{spec.TypeScript: h.runner}
	k, err := adapters.Open(ctx, adapters.Config{Config: kc})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	h.k = k
	cfg.WebhookSecret = webhookSecret
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil)) // shown only when the test fails, or with -v
	h.srv = serve(t, k, cfg, ctl, h.releaseAll)
	h.base = "http://" + h.srv.Addr()
	h.doc, h.router = loadDoc(t)
	return h
}

// serve starts a server over k on a loopback port and its controllers as
// knit serve wires them (internal/cli/serve.go), and stops both at the
// end of the test: the controllers first (after release, which lets held
// runs go on), then the server.
func serve(t *testing.T, k *knit.Knit, cfg server.Config, ctl controller.Config, release func()) *server.Server {
	t.Helper()
	s, err := startServe(t, k, cfg, ctl, release)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// startServe is serve, returning a bad configuration's error.
func startServe(t *testing.T, k *knit.Knit, cfg server.Config, ctl controller.Config, release func()) (*server.Server, error) {
	t.Helper()
	var srv *server.Server
	if ctl.Logger == nil {
		ctl.Logger = cfg.Logger
	}
	ctl.RunURL = func(id string) string { return srv.RunURL(id) }
	set, err := controller.New(k, ctl)
	if err != nil {
		return nil, err
	}
	cfg.Listen, cfg.Queue, cfg.Rollouts = "127.0.0.1:0", set.Queue, set.Rollout
	if set.Git != nil {
		cfg.Git = set.Git
	}
	if srv, err = server.New(k, cfg); err != nil {
		return nil, err
	}
	ctx, stop := context.WithCancel(context.Background())
	if err := set.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	if err := srv.Open(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := set.Run(ctx); err != nil {
			t.Errorf("controllers: %v", err)
		}
	}()
	t.Cleanup(func() {
		if release != nil {
			release()
		}
		stop()
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		select {
		case <-done:
		case <-ctx.Done():
			t.Errorf("the controllers did not stop")
		}
		if err := srv.Close(ctx); err != nil {
			t.Errorf("close the server: %v", err)
		}
	})
	return srv, nil
}

// in is the harness for a subtest: failures go to t.
func (h *harness) in(t *testing.T) *harness { return &harness{t: t, fixture: h.fixture} }

func (h *fixture) hook(ctx context.Context, op, component string) error {
	h.mu.Lock()
	var match *hold
	for _, x := range h.holds {
		if !x.used && x.op == op && x.component == component {
			x.used, match = true, x
			break
		}
	}
	h.mu.Unlock()
	if match == nil {
		return nil
	}
	close(match.entered)
	select {
	case <-match.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// block makes the next op ("plan", "apply") of component wait for Release.
func (h *fixture) block(op, component string) *hold {
	x := &hold{op: op, component: component, entered: make(chan struct{}), release: make(chan struct{})}
	h.mu.Lock()
	h.holds = append(h.holds, x)
	h.mu.Unlock()
	return x
}

// heldRun starts a run of env through the API as token and waits until it
// is held in the op of component, returning its ID and the hold.
func (h *harness) heldRun(env, kind, op, component, token string) (string, *hold) {
	h.t.Helper()
	held := h.block(op, component)
	h.t.Cleanup(held.Release)
	var acc struct{ RunID string }
	h.do(call{method: "POST", path: "/api/v1/environments/" + env + "/runs", token: token, body: map[string]any{"kind": kind}}, 202).decode(h.t, &acc)
	waitFor(h.t, "the "+op+" of "+component+" to start", held.entered)
	return acc.RunID, held
}

// signed is the header of a webhook body signed with secret.
func signed(secret, body string) http.Header {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return http.Header{"X-Hub-Signature-256": {"sha256=" + hex.EncodeToString(mac.Sum(nil))}}
}

func (h *fixture) releaseAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, x := range h.holds {
		x.Release()
	}
}

// waitFor waits for ch with the hang guard.
func waitFor(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(hangGuard):
		t.Fatalf("hang guard: %s", what)
	}
}

// token creates a token and returns its secret.
func (h *harness) token(name, role string, teams ...string) string {
	h.t.Helper()
	secret, _, err := knit.NewCreateToken(h.k, name, role, teams, "test").Run(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	h.tokens[name] = secret
	return secret
}

// seed applies an environment through the library as actor, and returns
// its result.
func (h *harness) seed(team, name string, o envOpts, actor string) *engine.Result {
	h.t.Helper()
	env, diags := spec.Parse("env.yaml", h.t.TempDir(), []byte(envDoc(team, name, o)))
	if diags.HasErrors() {
		h.t.Fatal(diags)
	}
	res, err := knit.NewRun(h.k, knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: actor, Source: "cli"}).Run(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// waitRun polls GET /runs/{id} until the run is no longer queued or running.
func (h *harness) waitRun(id, token string) map[string]any {
	h.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		var run map[string]any
		h.do(call{method: "GET", path: "/api/v1/runs/" + id, token: token}, 200).decode(h.t, &run)
		switch run["status"] {
		case string(store.StatusQueued), string(store.StatusRunning):
		default:
			return run
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("hang guard: run %s is still %s", id, run["status"])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func dumpAny(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
