package health

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// promServer answers the Prometheus query API with the answer the test
// sets, and records the queries it was asked.
type promServer struct {
	*httptest.Server
	mu      sync.Mutex
	answer  string
	queries []string
}

func newPromServer(t *testing.T, prefix string) *promServer {
	p := &promServer{}
	mux := http.NewServeMux()
	mux.HandleFunc(prefix+"/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.queries = append(p.queries, r.URL.Query().Get("query"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, p.answer)
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

func (p *promServer) set(answer string) { p.mu.Lock(); p.answer = answer; p.mu.Unlock() }

func vector(value string) string {
	return `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"job":"app"},"value":[1700000000.5,"` + value + `"]}]}}`
}

func TestPrometheusCheck(t *testing.T) {
	srv := newPromServer(t, "/prom")
	cond, err := ParseCondition("result < 0.01")
	if err != nil {
		t.Fatal(err)
	}
	const q = `sum(rate(http_errors_total{job="app"}[5m])) / sum(rate(http_requests_total{job="app"}[5m]))`
	p := &Prometheus{URL: srv.URL + "/prom/", Query: q, Condition: cond}
	tests := []struct {
		name    string
		answer  string
		phase   Phase
		value   float64
		message string
	}{
		{"below the threshold", vector("0.005"), PhaseSuccessful, 0.005, "result 0.005 of query " + q + ": result < 0.01 holds"},
		{"above the threshold", vector("0.25"), PhaseFailed, 0.25, "result 0.25 of query " + q + ": result < 0.01 does not hold"},
		{"a scalar", `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"0.001"]}}`, PhaseSuccessful, 0.001, ""},
		{"NaN", vector("NaN"), PhaseInconclusive, 0, "result is NaN"},
		{"no series", `{"status":"success","data":{"resultType":"vector","result":[]}}`, PhaseError, 0, "the query gave 0 series; it must give one number"},
		{"two series", `{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"]},{"value":[1,"2"]}]}}`, PhaseError, 0, "the query gave 2 series; it must give one number"},
		{"an API error", `{"status":"error","errorType":"bad_data","error":"parse error at char 5"}`, PhaseError, 0, "query failed: bad_data: parse error at char 5"},
		{"not JSON", `<html>`, PhaseError, 0, ""},
		{"a matrix", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, PhaseError, 0, "the query gave a matrix; it must give one number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.set(tt.answer)
			m := measure(t, p, time.Minute)
			if m.Phase != tt.phase || (tt.message != "" && m.Message != tt.message) {
				t.Errorf("got %+v", m)
			}
			if tt.phase == PhaseSuccessful || tt.phase == PhaseFailed {
				if m.Value == nil || *m.Value != tt.value {
					t.Errorf("value %v, want %v", m.Value, tt.value)
				}
			}
		})
	}
	if srv.queries[0] != q {
		t.Errorf("query sent %q, want %q", srv.queries[0], q)
	}
}

// A check over a rising error rate fails once failures exceed the limit,
// with the value it saw as evidence.
func TestPrometheusCheckVerdict(t *testing.T) {
	srv := newPromServer(t, "")
	srv.set(vector("0.5"))
	cond, _ := ParseCondition("result <= 0.01")
	res, err := Run(context.Background(), newFakeClock(), Check{Name: "errors", Probe: &Prometheus{URL: srv.URL, Query: "up", Condition: cond},
		Interval: time.Minute, Timeout: time.Minute, Limits: Limits{Count: 3, FailureLimit: 1, ConsecutiveErrorLimit: 4}})
	if err != nil || res.Verdict != Failed || len(res.Measurements) != 2 || *res.Last().Value != 0.5 {
		t.Errorf("got %+v, %v", res, err)
	}
}

func TestParseCondition(t *testing.T) {
	for s, x := range map[string]float64{"result < 1": 0.5, "result<=1": 1, " result > -2.5 ": 0, "result >= 1e-3": 0.001, "result == 3": 3, "result != 3": 4} {
		c, err := ParseCondition(s)
		if err != nil || !c.Holds(x) {
			t.Errorf("%q on %v: %+v %v", s, x, c, err)
		}
	}
	for _, s := range []string{"", "result", "x < 1", "result ~ 1", "result < one", "result < 1; rm -rf /"} {
		if _, err := ParseCondition(s); err == nil || !strings.Contains(err.Error(), "not a condition") {
			t.Errorf("%q: %v", s, err)
		}
	}
}
