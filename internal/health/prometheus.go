package health

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"knit.dev/knit/internal/spec"
)

// Prometheus is a PromQL check: Query against the Prometheus HTTP API at
// URL must give one number for which Condition holds.
type Prometheus struct {
	URL       string
	Query     string
	Condition Condition
	// Sensitive says the URL is a secret: an error is told by its kind.
	Sensitive bool
}

// Condition is "result OP Number".
type Condition struct {
	Op     string // <, <=, >, >=, ==, !=
	Number float64
}

// ParseCondition parses "result < 0.01".
func ParseCondition(s string) (Condition, error) {
	m := spec.ConditionRe.FindStringSubmatch(s)
	if m == nil {
		return Condition{}, fmt.Errorf("%q is not a condition: write result, a comparison and a number, e.g. \"result < 0.01\"", s)
	}
	n, err := strconv.ParseFloat(m[2], 64)
	if err != nil {
		return Condition{}, fmt.Errorf("%q: %v", s, err)
	}
	return Condition{Op: m[1], Number: n}, nil
}

// Holds reports whether x satisfies the condition.
func (c Condition) Holds(x float64) bool {
	switch c.Op {
	case "<":
		return x < c.Number
	case "<=":
		return x <= c.Number
	case ">":
		return x > c.Number
	case ">=":
		return x >= c.Number
	case "==":
		return x == c.Number
	case "!=":
		return x != c.Number
	}
	return false
}

func (c Condition) String() string {
	return "result " + c.Op + " " + strconv.FormatFloat(c.Number, 'g', -1, 64)
}

// Measure runs the query once: the condition holding is Successful, not
// holding Failed, NaN Inconclusive; no answer, an API error or a result
// that is not one number is an Error. The message names the value and
// the query that gave it (the evidence a failed analysis is judged by).
func (p *Prometheus) Measure(ctx context.Context) Measurement {
	u, err := queryURL(p.URL, p.Query)
	if err != nil {
		return Measurement{Phase: PhaseError, Message: err.Error()}
	}
	body, status, err := get(ctx, u, false)
	if err != nil {
		msg := err.Error()
		if p.Sensitive {
			msg = errorKind(err)
		}
		return Measurement{Phase: PhaseError, Message: msg}
	}
	x, err := promValue(body)
	if err != nil {
		return Measurement{Phase: PhaseError, StatusCode: status, Message: err.Error()}
	}
	m := Measurement{Value: &x}
	switch {
	case math.IsNaN(x):
		m.Phase, m.Message = PhaseInconclusive, "result is NaN"
	case p.Condition.Holds(x):
		m.Phase, m.Message = PhaseSuccessful, fmt.Sprintf("result %g of query %s: %s holds", x, short(p.Query), p.Condition)
	default:
		m.Phase, m.Message = PhaseFailed, fmt.Sprintf("result %g of query %s: %s does not hold", x, short(p.Query), p.Condition)
	}
	return m
}

// queryURL is the instant query endpoint under base (which may have a
// path prefix, e.g. http://host/prometheus).
func queryURL(base, query string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("not an http or https URL")
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/api/v1/query"
	u.RawQuery = url.Values{"query": {query}}.Encode()
	return u.String(), nil
}

// promResponse is the Prometheus HTTP API's answer to an instant query.
type promResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Error     string `json:"error"`
	Data      struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// promValue reads the one number of a query's answer: a scalar, or a
// vector of one sample.
func promValue(body []byte) (float64, error) {
	var r promResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return 0, fmt.Errorf("not a Prometheus API answer: %v", err)
	}
	if r.Status != "success" {
		return 0, fmt.Errorf("query failed: %s: %s", r.ErrorType, short(r.Error))
	}
	var sample [2]json.RawMessage
	switch r.Data.ResultType {
	case "scalar":
		if err := json.Unmarshal(r.Data.Result, &sample); err != nil {
			return 0, fmt.Errorf("bad scalar: %v", err)
		}
	case "vector":
		var v []struct {
			Value [2]json.RawMessage `json:"value"`
		}
		if err := json.Unmarshal(r.Data.Result, &v); err != nil {
			return 0, fmt.Errorf("bad vector: %v", err)
		}
		if len(v) != 1 {
			return 0, fmt.Errorf("the query gave %d series; it must give one number", len(v))
		}
		sample = v[0].Value
	default:
		return 0, fmt.Errorf("the query gave a %s; it must give one number", short(r.Data.ResultType))
	}
	var s string
	if err := json.Unmarshal(sample[1], &s); err != nil {
		return 0, fmt.Errorf("bad sample value: %v", err)
	}
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("sample value %s is not a number", strconv.Quote(short(s)))
	}
	return x, nil
}

// short bounds a string from a server for a message.
func short(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
