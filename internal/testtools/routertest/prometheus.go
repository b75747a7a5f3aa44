package routertest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// Prometheus is the example's Prometheus
// (examples/canary-nginx/modules/prometheus/prometheus.sh), scraping every
// second the apps of its Run.
type Prometheus struct {
	// URL is http://127.0.0.1:PORT.
	URL string
}

// Prometheus starts Prometheus, data in a folder of its own, and returns
// once it is ready.
func (r *Run) Prometheus(t testing.TB) *Prometheus {
	t.Helper()
	state := r.folder(t, "prometheus")
	r.script(t, "canary-nginx/modules/prometheus/prometheus.sh", []string{"STATE=" + state, "TARGETS=" + r.Targets()}, "start")
	return &Prometheus{URL: "http://" + readAddr(t, state)}
}

// Query runs an instant PromQL query and returns the value of its first
// sample; ok is false when the result is empty.
func (p *Prometheus) Query(ctx context.Context, query string) (value float64, ok bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL+"/api/v1/query?query="+url.QueryEscape(query), nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, false, fmt.Errorf("query %s: %w", query, err)
	}
	if body.Status != "success" {
		return 0, false, fmt.Errorf("query %s: %s", query, body.Error)
	}
	if len(body.Data.Result) == 0 {
		return 0, false, nil
	}
	s, _ := body.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil, err
}

// Await queries until the query has a value that cond accepts and returns
// it, failing t after a generous deadline (scrapes are a second apart;
// the machine may be loaded).
func (p *Prometheus) Await(t testing.TB, query string, cond func(float64) bool) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var last string
	for {
		v, ok, err := p.Query(ctx, query)
		switch {
		case err != nil:
			last = err.Error()
		case ok && cond(v):
			return v
		case ok:
			last = fmt.Sprintf("value %v", v)
		default:
			last = "no data"
		}
		select {
		case <-ctx.Done():
			t.Fatalf("prometheus: %s: %s", query, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
