package health

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"knit.dev/knit/internal/spec"
)

func measure(t *testing.T, p Probe, timeout time.Duration) Measurement {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return p.Measure(ctx)
}

// endpoint serves a status and body the test sets, on loopback.
func endpoint(t *testing.T) (srv *httptest.Server, status *atomic.Int32, body *atomic.Value) {
	status, body = &atomic.Int32{}, &atomic.Value{}
	status.Store(200)
	body.Store("ok")
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(int(status.Load()))
		_, _ = w.Write([]byte(body.Load().(string)))
	}))
	t.Cleanup(srv.Close)
	return srv, status, body
}

func TestHTTPCheck(t *testing.T) {
	srv, status, body := endpoint(t)
	h := &HTTP{URL: srv.URL + "/healthz", ExpectStatus: 200, BodyRegex: regexp.MustCompile(`^ok$`)}

	if m := measure(t, h, time.Minute); m.Phase != PhaseSuccessful || m.StatusCode != 200 {
		t.Errorf("healthy endpoint: %+v", m)
	}
	status.Store(503)
	if m := measure(t, h, time.Minute); m.Phase != PhaseFailed || m.StatusCode != 503 || m.Message != "status 503, want 200" {
		t.Errorf("failing endpoint: %+v", m)
	}
	status.Store(200)
	body.Store("degraded")
	if m := measure(t, h, time.Minute); m.Phase != PhaseFailed || !strings.Contains(m.Message, `body does not match "^ok$"`) {
		t.Errorf("wrong body: %+v", m)
	}
}

// A check that fails at its second measurement is Failed, with the
// status it saw as evidence; one that keeps passing is Successful.
func TestHTTPCheckVerdicts(t *testing.T) {
	srv, status, _ := endpoint(t)
	check := Check{Name: "http-ok", Probe: &HTTP{URL: srv.URL, ExpectStatus: 200}, Interval: time.Second, Timeout: time.Minute,
		Limits: Limits{Count: 3, ConsecutiveErrorLimit: 4}}
	res, err := Run(context.Background(), newFakeClock(), check)
	if err != nil || res.Verdict != Successful || len(res.Measurements) != 3 {
		t.Fatalf("healthy: %+v %v", res, err)
	}
	status.Store(500)
	res, _ = Run(context.Background(), newFakeClock(), check)
	if res.Verdict != Failed || res.Last().StatusCode != 500 {
		t.Errorf("failing: %+v", res)
	}
}

// An endpoint that never answers times out: each measurement is an error
// and, past the error limit, the verdict is Inconclusive.
func TestHTTPCheckTimeoutIsInconclusive(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		<-r.Context().Done() // until the check gives up
	}))
	defer srv.Close()
	check := Check{Name: "slow", Probe: &HTTP{URL: srv.URL, ExpectStatus: 200}, Interval: time.Second, Timeout: 50 * time.Millisecond,
		Limits: Limits{Count: 1, ConsecutiveErrorLimit: 1}}
	res, err := Run(context.Background(), newFakeClock(), check)
	if err != nil || res.Verdict != Inconclusive || res.Reason != ReasonErrorLimit || len(res.Measurements) != 2 {
		t.Fatalf("got %+v, %v", res, err)
	}
	if m := res.Last(); m.Phase != PhaseError || m.Message != "timed out" {
		t.Errorf("measurement %+v", m)
	}
	if hits.Load() != 2 {
		t.Errorf("%d requests, want 2", hits.Load())
	}
}

// A refused connection is an error, and its message does not show the
// URL's credentials.
func TestHTTPCheckErrorHidesTheURL(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens: the connection is refused
	m := measure(t, &HTTP{URL: "http://user:hunter2pass@" + addr + "/?token=tok3n", ExpectStatus: 200}, time.Minute)
	if m.Phase != PhaseError || strings.Contains(m.Message, "hunter2pass") || strings.Contains(m.Message, "tok3n") || !strings.Contains(m.Message, "refused") {
		t.Errorf("got %+v", m)
	}
}

// A body that never ends is read up to MaxBody, not to the end.
func TestHTTPCheckBoundsTheBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 64<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	m := measure(t, &HTTP{URL: srv.URL, ExpectStatus: 200, BodyRegex: regexp.MustCompile("healthy")}, time.Minute)
	if m.Phase != PhaseFailed || m.StatusCode != 200 {
		t.Errorf("got %+v", m)
	}
}

// A redirect loop stops after MaxRedirects.
func TestHTTPCheckLimitsRedirects(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/again", http.StatusFound)
	}))
	defer srv.Close()
	m := measure(t, &HTTP{URL: srv.URL, ExpectStatus: 200}, time.Minute)
	if m.Phase != PhaseError || m.Message != "more than 3 redirects" || hits.Load() != MaxRedirects+1 {
		t.Errorf("got %+v after %d requests", m, hits.Load())
	}
}

// TLS is verified unless the check says insecureSkipVerify.
func TestHTTPCheckVerifiesTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	if m := measure(t, &HTTP{URL: srv.URL, ExpectStatus: 200}, time.Minute); m.Phase != PhaseError || !strings.Contains(m.Message, "certificate") {
		t.Errorf("unknown certificate: %+v", m)
	}
	if m := measure(t, &HTTP{URL: srv.URL, ExpectStatus: 200, InsecureSkipVerify: true}, time.Minute); m.Phase != PhaseSuccessful {
		t.Errorf("insecureSkipVerify: %+v", m)
	}
}

// A URL that is a secret (a sensitive output) shows no part of itself,
// host and port included: an error is told by its kind alone.
func TestHTTPCheckOfASecretURLTellsErrorsByKind(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	url := "http://127.0.0.1:" + port + "/private"
	c, err := FromSpec(spec.HealthCheck{Name: "s", HTTP: &spec.HTTPCheck{URL: spec.StringValue{ValueFrom: "db.url"}}},
		Env{Resolve: func(string) (string, error) { return url, nil }, Secrets: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	m := measure(t, c.Probe, time.Minute)
	if m.Phase != PhaseError || m.Message != "connection refused" || strings.Contains(m.Message, port) {
		t.Errorf("got %+v", m)
	}
	// The same URL, not secret, says what happened in full.
	if m := measure(t, &HTTP{URL: url, ExpectStatus: 200}, time.Minute); !strings.Contains(m.Message, port) {
		t.Errorf("not secret: %+v", m)
	}
}
