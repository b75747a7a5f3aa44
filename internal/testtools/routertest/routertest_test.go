package routertest

import (
	"context"
	"math"
	"net"
	"strings"
	"testing"
)

// TestAppAnswersItsVersionAndItsErrorRate: an app answers with its
// version, and one with a 20 % error rate answers exactly every fifth
// request 500.
func TestAppAnswersItsVersionAndItsErrorRate(t *testing.T) {
	r := NewRun(t)
	v1, v2 := r.App(t, "v1", 0), r.App(t, "v2", 20)
	if c := Send(t, v1.URL, 50); c.ByVersion["v1"] != 50 || c.ByStatus[200] != 50 {
		t.Errorf("v1: %+v", c)
	}
	if c := Send(t, v2.URL, 100); c.ByVersion["v2"] != 100 || c.ByStatus[500] != 20 || c.ByStatus[200] != 80 {
		t.Errorf("v2 at 20 %%: %+v", c)
	}
	v1.Stop(t)
	if c := Send(t, v1.URL, 1); c.Failed != 1 {
		t.Errorf("a stopped app still answers: %+v", c)
	}
}

// TestNginxRoutesByWeight: the router sends each weight's share to the
// canary (weighted round robin is exact over a hundred requests), and
// everything to the canary at 100.
func TestNginxRoutesByWeight(t *testing.T) {
	r := NewRun(t)
	v1, v2 := r.App(t, "v1", 0), r.App(t, "v2", 0)
	n := r.Nginx(t, v1.Addr, v2.Addr, 0)
	for _, w := range []int{0, 10, 50, 100} {
		n.Route(t, v1.Addr, v2.Addr, w)
		c := Send(t, n.URL, 200)
		if c.Total != 200 || c.Failed+c.Errors != 0 || math.Abs(c.Share("v2")-float64(w)) > 1 {
			t.Errorf("weight %d: v2 answered %.1f %% (%+v)", w, c.Share("v2"), c)
		}
	}
}

// TestNginxReloadUnderLoadFailsNoRequest: reloads with new weights while a
// load runs lose and fail no request, and the share follows each reload.
func TestNginxReloadUnderLoadFailsNoRequest(t *testing.T) {
	r := NewRun(t)
	v1, v2 := r.App(t, "v1", 0), r.App(t, "v2", 0)
	n := r.Nginx(t, v1.Addr, v2.Addr, 0)
	load := StartLoad(t, n.URL, LoadOptions{Workers: 4})
	for i, w := range []int{10, 50, 100, 0, 30, 100} {
		n.Route(t, v1.Addr, v2.Addr, w)
		mark := load.Mark()
		c := load.Await(t, mark, 200)
		if math.Abs(c.Share("v2")-float64(w)) > 5 {
			t.Errorf("reload %d to weight %d: v2 answered %.1f %% (%+v)", i, w, c.Share("v2"), c)
		}
	}
	if c := load.Stop(); c.Failed != 0 || c.Errors != 0 || c.Total < 1200 {
		t.Errorf("under reloads: %+v", c)
	}
}

// TestPrometheusScrapesTheApps: Prometheus finds the apps through the
// targets they register, and the error ratio of the failing one is what it
// answered.
func TestPrometheusScrapesTheApps(t *testing.T) {
	r := NewRun(t)
	p := r.Prometheus(t)
	v1, v2 := r.App(t, "v1", 0), r.App(t, "v2", 20)
	p.Await(t, `count(up{job="app"} == 1)`, func(v float64) bool { return v == 2 })
	Send(t, v1.URL, 50)
	Send(t, v2.URL, 100)
	q := `sum(haproxy_frontend_http_responses_total{component="v2",code="5xx"})`
	p.Await(t, q, func(v float64) bool { return v == 20 })
	q = `sum(haproxy_frontend_http_responses_total{version="v1",code="5xx"})`
	if v, ok, err := p.Query(context.Background(), q); err != nil || !ok || v != 0 {
		t.Errorf("%s = %v, %v, %v", q, v, ok, err)
	}
	if _, _, err := p.Query(context.Background(), "sum(("); err == nil || !strings.Contains(err.Error(), "parse") {
		t.Errorf("a bad query: %v", err)
	}
}

// TestAnAppWhosePortIsTakenMovesToAFreeOne: an instance started again
// takes its old port when it is free, and another when something else
// holds it (a parallel test, another process), and answers there.
func TestAnAppWhosePortIsTakenMovesToAFreeOne(t *testing.T) {
	r := NewRun(t)
	a := r.App(t, "v1", 0)
	first := a.Addr
	a.Start(t, 0)
	if a.Addr != first {
		t.Errorf("restarted on %s, not its free port %s", a.Addr, first)
	}
	a.Stop(t)
	ln, err := net.Listen("tcp", first)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	a.Start(t, 0)
	if a.Addr == first {
		t.Fatalf("started on %s, which another listener holds", first)
	}
	if c := Send(t, a.URL, 10); c.ByVersion["v1"] != 10 {
		t.Errorf("on its new port: %+v", c)
	}
}
