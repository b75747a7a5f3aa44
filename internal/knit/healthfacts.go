package knit

import (
	"net/url"
	"strings"

	"knit.dev/knit/internal/spec"
)

// The facts of health checks and of the rollout policy: what verifies an
// apply and what follows a failed verification. A check's URL may carry
// a credential (user:password@, a token in the query) and a command may
// name one (a bearer header on a curl line): such a value is Masked, as a
// variable named like a credential is.

// rolloutFacts adds the environment's rollout policy and its own health
// checks with their schedule.
func rolloutFacts(f *facts, s spec.EnvSpec) {
	if r := s.Rollout; r != nil {
		f.add("rollout.onFailure", r.OnFailure)
		if r.AutoApprove {
			f.add("rollout.autoApprove", true)
		}
	}
	if h := s.Health; h != nil {
		f.add("health.schedule", h.Schedule)
		healthFacts(f, "health.checks", h.Checks)
	}
}

// healthFacts adds checks as fields under p, each by its name.
func healthFacts(f *facts, p string, checks []spec.HealthCheck) {
	for _, c := range checks {
		at := p + "." + c.Name
		if h := c.HTTP; h != nil {
			stringValueFact(f, at+".http.url", h.URL)
			f.add(at+".http.expectStatus", h.ExpectStatus)
			f.add(at+".http.bodyRegex", h.BodyRegex)
			if h.InsecureSkipVerify {
				f.add(at+".http.insecureSkipVerify", true)
			}
		}
		if c.Command != "" {
			f.put(at+".command", c.Command, secretText(c.Command))
		}
		if pr := c.Prometheus; pr != nil {
			stringValueFact(f, at+".prometheus.url", pr.URL)
			f.add(at+".prometheus.query", pr.Query)
			f.add(at+".prometheus.condition", pr.Condition)
		}
		if k := c.Kubernetes; k != nil {
			f.put(at+".kubernetes.objects", append([]string{}, k.Objects...), false)
		}
		f.add(at+".interval", c.Interval)
		f.add(at+".timeout", c.Timeout)
		for _, n := range []struct {
			name string
			v    *int
		}{{"count", c.Count}, {"failureLimit", c.FailureLimit}, {"inconclusiveLimit", c.InconclusiveLimit}, {"consecutiveErrorLimit", c.ConsecutiveErrorLimit}} {
			if n.v != nil {
				f.put(at+"."+n.name, *n.v, false)
			}
		}
	}
}

// stringValueFact adds a check's URL: a reference to an output as such,
// a literal masked when it carries a credential.
func stringValueFact(f *facts, field string, v spec.StringValue) {
	if v.ValueFrom != "" {
		f.add(field, map[string]any{"valueFrom": v.ValueFrom})
		return
	}
	f.put(field, v.Value, secretURL(v.Value))
}

// secretURL reports whether u carries a credential: a password in its
// user info, or a query parameter named like one.
func secretURL(u string) bool {
	p, err := url.Parse(u)
	if err != nil {
		return secretText(u) // unreadable: judged as text
	}
	if _, ok := p.User.Password(); ok {
		return true
	}
	for k := range p.Query() {
		if secretName(k) {
			return true
		}
	}
	return false
}

// secretText reports whether a line of text (a command) names a
// credential: a word of secretWords, an Authorization header or a bearer
// token.
func secretText(s string) bool {
	l := strings.ToLower(s)
	return secretName(l) || strings.Contains(l, "authorization") || strings.Contains(l, "bearer")
}
