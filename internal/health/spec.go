package health

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"knit.dev/knit/internal/spec"
)

// Env is what a check of a component needs from where it runs.
type Env struct {
	// Resolve reads an output named by a valueFrom (component.output).
	Resolve func(valueFrom string) (string, error)
	// Dir is the component's work dir, Vars the tool environment a
	// command check runs with (KEY=VALUE), Secrets values never to show.
	Dir     string
	Vars    []string
	Secrets []string
	// Mask, when set, is the caller's masking rule for evidence, covering
	// Secrets and Vars' values (the engine's); nil: Mask with both.
	Mask func(string) string
	// Workloads, when set, looks at the workloads the component owns (a
	// helm or manifests component's): what a kubernetes check measures.
	Workloads func(ctx context.Context, objects []string) (Workloads, error)
	// NoWorkloads, when Workloads is nil, says why (the component's
	// cluster access could not be built, its runner cannot look).
	NoWorkloads error
}

// FromSpec turns a validated spec check into a Check, reading the outputs
// its URL names. The error says which check and why.
func FromSpec(h spec.HealthCheck, env Env) (Check, error) {
	c := Check{
		Name:     h.Name,
		Interval: duration(h.Interval, spec.DefaultHealthInterval),
		Timeout:  duration(h.Timeout, spec.DefaultHealthTimeout),
		Limits: Limits{
			Count:                 orDefault(h.Count, spec.DefaultHealthCount),
			FailureLimit:          orDefault(h.FailureLimit, 0),
			InconclusiveLimit:     orDefault(h.InconclusiveLimit, 0),
			ConsecutiveErrorLimit: orDefault(h.ConsecutiveErrorLimit, spec.DefaultConsecutiveErrorLimit),
		},
	}
	var err error
	switch {
	case h.HTTP != nil:
		p := &HTTP{ExpectStatus: h.HTTP.ExpectStatus, InsecureSkipVerify: h.HTTP.InsecureSkipVerify}
		if p.ExpectStatus == 0 {
			p.ExpectStatus = spec.DefaultHealthExpectStatus
		}
		if h.HTTP.BodyRegex != "" {
			if p.BodyRegex, err = regexp.Compile(h.HTTP.BodyRegex); err != nil {
				return Check{}, fmt.Errorf("health check %s: bodyRegex: %w", h.Name, err)
			}
		}
		p.URL, err = value(h.HTTP.URL, env)
		p.Sensitive = secret(p.URL, env.Secrets)
		c.Probe = p
	case h.Prometheus != nil:
		p := &Prometheus{Query: h.Prometheus.Query}
		if p.Condition, err = ParseCondition(h.Prometheus.Condition); err != nil {
			return Check{}, fmt.Errorf("health check %s: %w", h.Name, err)
		}
		p.URL, err = value(h.Prometheus.URL, env)
		p.Sensitive = secret(p.URL, env.Secrets)
		c.Probe = p
	case h.Kubernetes != nil:
		if env.Workloads == nil {
			why := env.NoWorkloads
			if why == nil {
				why = errors.New("only a helm or manifests component's workloads can be checked")
			}
			return Check{}, fmt.Errorf("health check %s: %w", h.Name, why)
		}
		c.Probe = &Kubernetes{Objects: h.Kubernetes.Objects, Look: env.Workloads, Mask: env.Mask}
	case h.Command != "":
		c.Probe = &Command{Run: h.Command, Dir: env.Dir, Env: env.Vars, Secrets: env.Secrets, Mask: env.Mask}
	default:
		return Check{}, fmt.Errorf("health check %s: no http, command, prometheus or kubernetes", h.Name)
	}
	if err != nil {
		return Check{}, fmt.Errorf("health check %s: url: %w", h.Name, err)
	}
	return c, nil
}

func value(v spec.StringValue, env Env) (string, error) {
	if v.ValueFrom == "" {
		return v.Value, nil
	}
	if env.Resolve == nil {
		return "", fmt.Errorf("%s: outputs are not available here", v.ValueFrom)
	}
	return env.Resolve(string(v.ValueFrom))
}

// secret reports whether v is one of secrets.
func secret(v string, secrets []string) bool {
	for _, s := range secrets {
		if v != "" && s == v {
			return true
		}
	}
	return false
}

func duration(s string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return d
	}
	return def
}

func orDefault(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}
