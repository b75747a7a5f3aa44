package health

import (
	"errors"
	"testing"
	"time"

	"knit.dev/knit/internal/spec"
)

func TestFromSpec(t *testing.T) {
	three, one := 3, 1
	resolve := func(ref string) (string, error) {
		if ref == "app.url" {
			return "http://127.0.0.1:8080", nil
		}
		return "", errors.New("no such output")
	}
	c, err := FromSpec(spec.HealthCheck{Name: "h", HTTP: &spec.HTTPCheck{URL: spec.StringValue{ValueFrom: "app.url"}, BodyRegex: "ok"},
		Interval: "2s", Count: &three, FailureLimit: &one}, Env{Resolve: resolve})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Probe.(*HTTP)
	if h.URL != "http://127.0.0.1:8080" || h.ExpectStatus != 200 || h.BodyRegex.String() != "ok" || h.InsecureSkipVerify {
		t.Errorf("probe %+v", h)
	}
	want := Limits{Count: 3, FailureLimit: 1, ConsecutiveErrorLimit: spec.DefaultConsecutiveErrorLimit}
	if c.Interval != 2*time.Second || c.Timeout != spec.DefaultHealthTimeout || c.Limits != want {
		t.Errorf("check %+v", c)
	}
	if _, err := FromSpec(spec.HealthCheck{Name: "h", HTTP: &spec.HTTPCheck{URL: spec.StringValue{ValueFrom: "app.nope"}}}, Env{Resolve: resolve}); err == nil {
		t.Error("an output that cannot be read must fail the check's set-up")
	}
	c, err = FromSpec(spec.HealthCheck{Name: "p", Prometheus: &spec.PrometheusCheck{URL: spec.StringValue{Value: "http://p"}, Query: "up", Condition: "result >= 1"}}, Env{})
	if err != nil || c.Probe.(*Prometheus).Condition != (Condition{Op: ">=", Number: 1}) || c.Limits.Count != 1 {
		t.Errorf("prometheus: %+v %v", c, err)
	}
	c, err = FromSpec(spec.HealthCheck{Name: "c", Command: "true"}, Env{Dir: "/w", Vars: []string{"A=b"}})
	if cmd, ok := c.Probe.(*Command); err != nil || !ok || cmd.Dir != "/w" || cmd.Env[0] != "A=b" {
		t.Errorf("command: %+v %v", c, err)
	}
}
