package server_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

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
	t.Helper()
	h := &harness{t: t, fixture: &fixture{tokens: map[string]string{}}}
	h.runner = &fake.Runner{
		OutputsFor: func(name string, _ runner.Inputs) runner.Outputs {
			if strings.HasSuffix(name, "-db") {
				return runner.Outputs{"host": {Value: "db.internal"}, "password": {Value: "pw", Sensitive: true}}
			}
			return nil
		},
		Hook: h.hook,
	}
	ctx := context.Background()
	k, err := knit.Open(ctx, knit.Config{DataDir: t.TempDir(), Runners: map[string]runner.Runner{spec.TypeScript: h.runner}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	h.k = k
	cfg.Listen, cfg.WebhookSecret = "127.0.0.1:0", webhookSecret
	cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil)) // shown only when the test fails, or with -v
	if h.srv, err = server.New(k, cfg); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		h.releaseAll()
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if err := h.srv.Close(ctx); err != nil {
			t.Errorf("close the server: %v", err)
		}
	})
	h.base = "http://" + h.srv.Addr()
	h.doc, h.router = loadDoc(t)
	return h
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
	secret, _, err := h.k.CreateToken(context.Background(), name, role, teams, "test")
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
	res, err := h.k.Run(context.Background(), knit.RunRequest{Kind: engine.KindApply, Env: env, Actor: actor, Source: "cli"})
	if err != nil {
		h.t.Fatal(err)
	}
	return res
}

// call is one request of a test.
type call struct {
	method, path string
	token        string // the Authorization bearer secret ("" = none)
	body         any    // marshalled as JSON unless a string or []byte
	header       http.Header
	// invalid says the request breaks the document (a missing token, a
	// bad parameter or body): the document must refuse it, as the server does.
	invalid bool
}

// response is a validated response.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errorCode is the code of an error response.
func (r response) errorCode(t *testing.T) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	r.decode(t, &e)
	if e.Error.Message == "" {
		t.Fatalf("error without a message: %s", r.body)
	}
	return e.Error.Code
}

func (c call) request(base string) (*http.Request, []byte, error) {
	var body []byte
	switch b := c.body.(type) {
	case nil:
	case string:
		body = []byte(b)
	case []byte:
		body = b
	default:
		var err error
		if body, err = json.Marshal(b); err != nil {
			return nil, nil, err
		}
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(c.method, base+c.path, rd)
	if err != nil {
		return nil, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for k, vs := range c.header {
		req.Header[k] = vs
	}
	return req, body, nil
}

// do sends c to the server and checks the exchange against the document:
// the request is valid unless c.invalid (then it must not be), and the
// response (status, headers, body) must be one the document describes.
// It fails the test unless the status is want.
func (h *harness) do(c call, want int) response {
	h.t.Helper()
	req, body, err := c.request(h.base)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		h.t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read body: %v", c.method, c.path, err)
	}
	r := response{status: resp.StatusCode, header: resp.Header, body: got}
	h.check(c, body, r)
	if r.status != want {
		h.t.Helper()
		h.t.Fatalf("%s %s: status %d, want %d: %s", c.method, c.path, r.status, want, got)
	}
	return r
}

// check validates one exchange against the document and records it.
func (h *harness) check(c call, reqBody []byte, r response) {
	h.t.Helper()
	req, _, err := c.request(h.base)
	if err != nil {
		h.t.Fatal(err)
	}
	if reqBody != nil {
		req.Body = io.NopCloser(bytes.NewReader(reqBody))
	}
	route, params, err := h.router.FindRoute(req)
	if err != nil {
		h.t.Fatalf("%s %s: not in the OpenAPI document: %v", c.method, c.path, err)
	}
	in := &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: bearerPresent, MultiError: true}}
	ctx := context.Background()
	switch err := openapi3filter.ValidateRequest(ctx, in); {
	case err != nil && !c.invalid:
		h.t.Errorf("%s %s: the document refuses the request: %v", c.method, c.path, err)
	case err == nil && c.invalid:
		h.t.Errorf("%s %s: the document accepts a request the test means to be invalid", c.method, c.path)
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: r.status, Header: r.header,
		Body: io.NopCloser(bytes.NewReader(r.body)), Options: &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true}}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		h.t.Errorf("%s %s: response %d does not match the document: %v\nbody: %s", c.method, c.path, r.status, err, r.body)
	}
	covered.add(route.Method+" "+route.Path, r.status)
}

// bearerPresent is the document's bearer scheme as a client sees it: an
// Authorization: Bearer header is there (whether the token is good is the
// server's to say).
func bearerPresent(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	if in.SecuritySchemeName != "bearer" {
		return fmt.Errorf("unknown security scheme %q", in.SecuritySchemeName)
	}
	if !strings.HasPrefix(in.RequestValidationInput.Request.Header.Get("Authorization"), "Bearer ") {
		return errors.New("no bearer token")
	}
	return nil
}

var (
	docOnce sync.Once
	docVal  *openapi3.T
	docErr  error
)

// loadDoc loads and validates the served document once per test binary.
func loadDoc(t *testing.T) (*openapi3.T, routers.Router) {
	t.Helper()
	docOnce.Do(func() {
		loader := openapi3.NewLoader()
		docVal, docErr = loader.LoadFromData(server.OpenAPI)
		if docErr == nil {
			docErr = docVal.Validate(loader.Context)
		}
	})
	if docErr != nil {
		t.Fatalf("the OpenAPI document: %v", docErr)
	}
	router, err := gorillamux.NewRouter(docVal)
	if err != nil {
		t.Fatal(err)
	}
	return docVal, router
}

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct {
	ID    int64
	Event string
	Data  json.RawMessage
}

// readSSE reads events from r until it ends, handing each to fn (which may
// stop the reading by returning false). Comment lines are skipped.
func readSSE(r io.Reader, fn func(sseEvent) bool) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var ev sseEvent
	var have bool
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if have {
				if !fn(ev) {
					return nil
				}
			}
			ev, have = sseEvent{}, false
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			id, err := strconv.ParseInt(strings.TrimPrefix(line, "id: "), 10, 64)
			if err != nil {
				return fmt.Errorf("event id %q: %w", line, err)
			}
			ev.ID, have = id, true
		case strings.HasPrefix(line, "event: "):
			ev.Event, have = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			ev.Data, have = json.RawMessage(strings.TrimPrefix(line, "data: ")), true
		default:
			return fmt.Errorf("unexpected line in the event stream: %q", line)
		}
	}
	return sc.Err()
}

// decodeSSE reads a text/event-stream as the document describes it: the
// list of its events, each {id, event, data}.
func decodeSSE(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
	out := []any{}
	err := readSSE(body, func(ev sseEvent) bool {
		var data any
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			data = string(ev.Data) // the schema will say it is not an event
		}
		out = append(out, map[string]any{"id": float64(ev.ID), "event": ev.Event, "data": data})
		return true
	})
	return out, err
}

func init() { openapi3filter.RegisterBodyDecoder("text/event-stream", decodeSSE) }

// coverage records which documented operation answered which statuses, so
// TestMain can fail when one the document promises was never seen.
type coverage struct {
	mu   sync.Mutex
	seen map[string]map[int]bool
}

var covered = &coverage{seen: map[string]map[int]bool{}}

func (c *coverage) add(op string, status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[op] == nil {
		c.seen[op] = map[int]bool{}
	}
	c.seen[op][status] = true
}

// notExercised are documented responses no test provokes, and why.
var notExercised = map[string]string{
	"500": "an internal failure of the store or the library",
}

// missing lists documented responses no test saw.
func (c *coverage) missing(doc *openapi3.T) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			key := method + " " + path
			for code := range op.Responses.Map() {
				n, err := strconv.Atoi(code)
				if err != nil || c.seen[key][n] || notExercised[code] != "" || notExercised[key+" "+code] != "" {
					continue
				}
				out = append(out, key+" "+code)
			}
		}
	}
	sort.Strings(out)
	return out
}

// TestMain fails the package when a full run of its tests never saw a
// response the document describes: every endpoint is exercised with its
// success and each error status it can return.
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && flag.Lookup("test.run").Value.String() == "" && !testing.Short() {
		loader := openapi3.NewLoader()
		doc, err := loader.LoadFromData(server.OpenAPI)
		if err != nil {
			fmt.Fprintln(os.Stderr, "load the OpenAPI document:", err)
			os.Exit(1)
		}
		if miss := covered.missing(doc); len(miss) > 0 {
			fmt.Fprintf(os.Stderr, "documented responses no test exercised:\n  %s\n", strings.Join(miss, "\n  "))
			code = 1
		}
	}
	os.Exit(code)
}

// waitRun polls GET /runs/{id} until the run is no longer queued or running.
func (h *harness) waitRun(id, token string) map[string]any {
	h.t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		var run map[string]any
		h.do(call{method: "GET", path: "/api/v1/runs/" + id, token: token}, 200).decode(h.t, &run)
		switch run["status"] {
		case "queued", store.StatusRunning:
		default:
			return run
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("hang guard: run %s is still %s", id, run["status"])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stream is a server-sent event stream being read.
type stream struct {
	c      call
	events chan sseEvent
	done   chan struct{}
	resp   response // complete once done is closed
	err    error
	cancel context.CancelFunc
}

// stream opens an event stream (which must answer 200) and reads it in the
// background; finish checks the whole exchange against the document.
func (h *harness) stream(c call) *stream {
	h.t.Helper()
	req, _, err := c.request(h.base)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	h.t.Cleanup(cancel)
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		h.t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		h.check(c, nil, response{status: resp.StatusCode, header: resp.Header, body: body})
		h.t.Fatalf("%s %s: status %d: %s", c.method, c.path, resp.StatusCode, body)
	}
	s := &stream{c: c, events: make(chan sseEvent, 1024), done: make(chan struct{}), cancel: cancel,
		resp: response{status: resp.StatusCode, header: resp.Header}}
	go func() {
		defer close(s.done)
		defer resp.Body.Close()
		var buf bytes.Buffer
		s.err = readSSE(io.TeeReader(resp.Body, &buf), func(ev sseEvent) bool { s.events <- ev; return true })
		close(s.events)
		s.resp.body = buf.Bytes()
	}()
	return s
}

// next is the stream's next event; ok is false at its end.
func (s *stream) next(t *testing.T) (sseEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-s.events:
		return ev, ok
	case <-time.After(hangGuard):
		t.Fatalf("hang guard: no event on %s", s.c.path)
		return sseEvent{}, false
	}
}

// rest reads the stream to its end, checks the exchange against the
// document, and returns the events not read yet.
func (s *stream) rest(h *harness) []sseEvent {
	h.t.Helper()
	var out []sseEvent
	for {
		ev, ok := s.next(h.t)
		if !ok {
			break
		}
		out = append(out, ev)
	}
	waitFor(h.t, "the end of the event stream", s.done)
	if s.err != nil {
		h.t.Fatalf("read %s: %v", s.c.path, s.err)
	}
	h.check(s.c, nil, s.resp)
	return out
}

// eventData decodes an event's data.
func eventData(t *testing.T, ev sseEvent) engine.Event {
	t.Helper()
	var e engine.Event
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		t.Fatalf("event %d: %v: %s", ev.ID, err, ev.Data)
	}
	return e
}

func dumpAny(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
