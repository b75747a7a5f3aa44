package spec

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// HealthPolicy is the environment's own health (knit.dev/v1 only): checks
// of the whole environment, and when the server re-checks them.
type HealthPolicy struct {
	// Schedule is when knit serve re-checks health ("@every 5m" or cron).
	Schedule string        `json:"schedule,omitempty"`
	Checks   []HealthCheck `json:"checks,omitempty"`
}

// HealthCheck is one check of a component's or the environment's health
// (knit.dev/v1 only). Exactly one of HTTP, Command, Prometheus and
// Kubernetes is set.
// It takes Count measurements Interval apart, each bounded by Timeout; the
// verdict follows Argo Rollouts' analysis (see package health).
type HealthCheck struct {
	Name       string           `json:"name"`
	HTTP       *HTTPCheck       `json:"http,omitempty"`
	Command    string           `json:"command,omitempty"`
	Prometheus *PrometheusCheck `json:"prometheus,omitempty"`
	Kubernetes *KubernetesCheck `json:"kubernetes,omitempty"`
	// Interval, Timeout: Go durations (1s, 2m); empty: the defaults.
	Interval string `json:"interval,omitempty"`
	Timeout  string `json:"timeout,omitempty"`
	// Count is how many measurements decide (default 1). FailureLimit and
	// InconclusiveLimit are how many failed and inconclusive measurements
	// are tolerated (default 0); ConsecutiveErrorLimit how many errors in
	// a row (a timeout, a refused connection) (default 4).
	Count                 *int `json:"count,omitempty"`
	FailureLimit          *int `json:"failureLimit,omitempty"`
	InconclusiveLimit     *int `json:"inconclusiveLimit,omitempty"`
	ConsecutiveErrorLimit *int `json:"consecutiveErrorLimit,omitempty"`
}

// HTTPCheck measures an HTTP(S) endpoint: healthy when it answers
// ExpectStatus (default 200) and, when set, its body matches BodyRegex.
// TLS certificates are verified unless InsecureSkipVerify says otherwise.
type HTTPCheck struct {
	URL                StringValue `json:"url"`
	ExpectStatus       int         `json:"expectStatus,omitempty"`
	BodyRegex          string      `json:"bodyRegex,omitempty"`
	InsecureSkipVerify bool        `json:"insecureSkipVerify,omitempty"`
}

// PrometheusCheck runs the PromQL Query against the Prometheus HTTP API at
// URL; healthy when Condition ("result < 0.01") holds for its value.
type PrometheusCheck struct {
	URL       StringValue `json:"url"`
	Query     string      `json:"query"`
	Condition string      `json:"condition"`
}

// KubernetesCheck is healthy when the workloads its helm or manifests
// component owns (the release's objects, the manifests' inventory) are
// ready: Deployments available, StatefulSets and DaemonSets ready, Jobs
// complete. Objects, when set, narrows it to those workloads, each written
// Kind/name (in the component's namespace) or Kind/namespace/name; every
// one must be an object of the component.
type KubernetesCheck struct {
	Objects []string `json:"objects,omitempty"`
}

// WorkloadKinds are the kinds a kubernetes check judges.
var WorkloadKinds = []string{"Deployment", "StatefulSet", "DaemonSet", "Job"}

// ParseWorkload splits a kubernetes check's object, Kind/name or
// Kind/namespace/name, saying what is wrong with it when it is not one.
func ParseWorkload(s string) (kind, namespace, name string, problem string) {
	parts := strings.Split(s, "/")
	switch len(parts) {
	case 2:
		kind, name = parts[0], parts[1]
	case 3:
		kind, namespace, name = parts[0], parts[1], parts[2]
	default:
		return "", "", "", "not Kind/name or Kind/namespace/name"
	}
	switch {
	case !contains(WorkloadKinds, kind):
		return "", "", "", fmt.Sprintf("kind %s is not one of %s", quote(kind), strings.Join(WorkloadKinds, ", "))
	case len(parts) == 3 && (!k8sName.MatchString(namespace) || strings.Contains(namespace, ".") || len(namespace) > 63):
		return "", "", "", fmt.Sprintf("%s is not a namespace name", quote(namespace))
	case !k8sName.MatchString(name) || len(name) > 253:
		return "", "", "", fmt.Sprintf("%s is not an object name", quote(name))
	}
	return kind, namespace, name, ""
}

// k8sName is a DNS-1123 name (a namespace's is a label: no dots, at most 63).
var k8sName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// StringValue is a string written as a literal, or as {valueFrom:
// component.output} read from an output once the component is applied.
type StringValue struct {
	Value     string    `json:"value,omitempty"`
	ValueFrom ValueFrom `json:"valueFrom,omitempty"`
}

// Health check defaults, as Argo Rollouts has them where it has one.
const (
	DefaultHealthInterval        = 10 * time.Second
	DefaultHealthTimeout         = 10 * time.Second
	DefaultHealthCount           = 1
	DefaultConsecutiveErrorLimit = 4
	DefaultHealthExpectStatus    = 200
	maxHealthCount               = 1000
	maxHealthInterval            = 24 * time.Hour
)

// ConditionRe is the form of a prometheus condition: result, a comparison,
// a number.
var ConditionRe = regexp.MustCompile(`^\s*result\s*(<=|>=|==|!=|<|>)\s*([-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?)\s*$`)

func (d *decoder) healthPolicy(dst **HealthPolicy) field {
	return func(v *yaml.Node, path string) {
		h := &HealthPolicy{}
		*dst = h
		d.mapping(v, path, false, map[string]field{"schedule": d.str(&h.Schedule), "checks": d.healthChecks(&h.Checks)})
	}
}

func (d *decoder) healthChecks(dst *[]HealthCheck) field {
	return func(v *yaml.Node, path string) {
		d.sequence(v, path, func(_ int, item *yaml.Node, p string) {
			var h HealthCheck
			d.mapping(item, p, false, map[string]field{
				"name": d.str(&h.Name), "command": d.str(&h.Command),
				"http": func(v *yaml.Node, p string) {
					h.HTTP = &HTTPCheck{}
					c := h.HTTP
					d.mapping(v, p, false, map[string]field{
						"url": d.stringValue(&c.URL), "expectStatus": d.integer(&c.ExpectStatus),
						"bodyRegex": d.str(&c.BodyRegex), "insecureSkipVerify": d.boolean(&c.InsecureSkipVerify),
					})
				},
				"prometheus": func(v *yaml.Node, p string) {
					h.Prometheus = &PrometheusCheck{}
					c := h.Prometheus
					d.mapping(v, p, false, map[string]field{
						"url": d.stringValue(&c.URL), "query": d.str(&c.Query), "condition": d.str(&c.Condition),
					})
				},
				"kubernetes": func(v *yaml.Node, p string) {
					h.Kubernetes = &KubernetesCheck{}
					d.mapping(v, p, false, map[string]field{"objects": d.strList(&h.Kubernetes.Objects)})
				},
				"interval": d.str(&h.Interval), "timeout": d.str(&h.Timeout),
				"count": d.optInt(&h.Count), "failureLimit": d.optInt(&h.FailureLimit),
				"inconclusiveLimit": d.optInt(&h.InconclusiveLimit), "consecutiveErrorLimit": d.optInt(&h.ConsecutiveErrorLimit),
			})
			*dst = append(*dst, h)
		})
	}
}

// stringValue decodes a literal string or a {valueFrom} mapping.
func (d *decoder) stringValue(dst *StringValue) field {
	return func(v *yaml.Node, path string) {
		if n := resolve(v); n != nil && n.Kind == yaml.MappingNode {
			d.mapping(n, path, false, map[string]field{"valueFrom": d.valueFromField(&dst.ValueFrom)})
			return
		}
		d.str(&dst.Value)(v, path)
	}
}

func (d *decoder) optInt(dst **int) field {
	return func(v *yaml.Node, path string) {
		var i int
		before := len(d.diags)
		d.integer(&i)(v, path)
		if len(d.diags) == before {
			*dst = &i
		}
	}
}

// health checks the environment's health policy and every component's checks.
func (v *validator) health() {
	if h := v.env.Spec.Health; h != nil {
		if v.knitOnly("spec.health", "health") {
			v.schedule("spec.health.schedule", h.Schedule)
			v.healthChecks("spec.health.checks", h.Checks, nil)
		}
	}
	for i, c := range v.env.Spec.Components {
		p := fmt.Sprintf("spec.components[%d].health", i)
		if len(c.Health) > 0 && v.knitOnly(p, "health") {
			v.healthChecks(p, c.Health, c)
		}
	}
}

// knitOnly reports whether the file may use the knit.dev/v1 field what at
// path, reporting it when not.
func (v *validator) knitOnly(path, what string) bool {
	if v.env.APIVersion == APIVersionKnit {
		return true
	}
	v.err(path, "", what+" needs apiVersion: "+APIVersionKnit, "change apiVersion to "+APIVersionKnit)
	return false
}

// healthChecks checks the checks at path: owner's, or the environment's
// when owner is nil.
func (v *validator) healthChecks(path string, checks []HealthCheck, owner *Component) {
	seen := map[string]bool{}
	for i := range checks {
		h := &checks[i]
		p := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case h.Name == "":
			v.missing(p, "name", "")
		case checkName(h.Name) != "":
			v.err(p+".name", "", checkName(h.Name), nameHint)
		case seen[h.Name]:
			v.err(p+".name", "", fmt.Sprintf("health check %q is declared twice", h.Name), "give each check its own name")
		}
		seen[h.Name] = true
		v.healthKind(p, h)
		v.kubernetesCheck(p, h.Kubernetes, owner)
		v.duration(p+".interval", h.Interval, maxHealthInterval)
		v.duration(p+".timeout", h.Timeout, maxHealthInterval)
		v.limit(p+".count", h.Count, 1, maxHealthCount)
		v.limit(p+".failureLimit", h.FailureLimit, 0, maxHealthCount)
		v.limit(p+".inconclusiveLimit", h.InconclusiveLimit, 0, maxHealthCount)
		v.limit(p+".consecutiveErrorLimit", h.ConsecutiveErrorLimit, 0, maxHealthCount)
		v.canFail(p, h)
	}
}

// canFail refuses a check that tolerates as many failed (or
// inconclusive) measurements as it takes: every measurement could fail
// and the verdict still be Successful, so a rollout never rolls back.
func (v *validator) canFail(p string, h *HealthCheck) {
	count := 1
	if h.Count != nil {
		count = *h.Count
	}
	for _, l := range []struct {
		field string
		limit *int
	}{{"failureLimit", h.FailureLimit}, {"inconclusiveLimit", h.InconclusiveLimit}} {
		field, limit := l.field, l.limit
		if limit != nil && *limit >= count && count > 0 {
			v.err(p+"."+field, "", fmt.Sprintf("%s %d is not below count %d: every measurement may fail and the check still succeed, so it can never fail", field, *limit, count),
				fmt.Sprintf("take more measurements (count: %d) or tolerate fewer (%s: %d)", *limit+1, field, max(count-1, 0)))
		}
	}
}

// healthKind checks that exactly one kind of check is set, and that kind.
func (v *validator) healthKind(p string, h *HealthCheck) {
	kinds := 0
	for _, set := range []bool{h.HTTP != nil, h.Command != "", h.Prometheus != nil, h.Kubernetes != nil} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds == 0 && !v.undecodable(p):
		v.err(p, "", "a health check needs one of: http, command, prometheus, kubernetes", `e.g. http: {url: "http://127.0.0.1:8080/healthz"}`)
	case kinds > 1:
		v.err(p, "", "set one of http, command, prometheus, kubernetes, not several", "split them into checks of their own")
	}
	if c := h.HTTP; c != nil {
		v.checkURL(p+".http.url", c.URL)
		if c.ExpectStatus != 0 && (c.ExpectStatus < 100 || c.ExpectStatus > 599) {
			v.err(p+".http.expectStatus", "", fmt.Sprintf("%d is not an HTTP status", c.ExpectStatus), "a number from 100 to 599, e.g. 200")
		}
		if c.BodyRegex != "" {
			if _, err := regexp.Compile(c.BodyRegex); err != nil {
				v.err(p+".http.bodyRegex", "", "not a regular expression: "+err.Error(), "Go (RE2) syntax")
			}
		}
	}
	if c := h.Prometheus; c != nil {
		v.checkURL(p+".prometheus.url", c.URL)
		if strings.TrimSpace(c.Query) == "" {
			v.missing(p+".prometheus", "query", "a PromQL query whose result is one number")
		}
		switch {
		case c.Condition == "":
			v.missing(p+".prometheus", "condition", `e.g. condition: "result < 0.01"`)
		case !ConditionRe.MatchString(c.Condition):
			v.err(p+".prometheus.condition", "", fmt.Sprintf("%s is not a condition", quote(c.Condition)),
				`write result, a comparison (<, <=, >, >=, ==, !=) and a number, e.g. "result < 0.01"`)
		}
	}
}

// kubernetesCheck checks a kubernetes check: on a helm or manifests
// component only (the environment owns no objects), naming workloads by
// kind, namespace and name, each once.
func (v *validator) kubernetesCheck(p string, k *KubernetesCheck, owner *Component) {
	if k == nil {
		return
	}
	if owner == nil || !owner.IsKubernetes() {
		v.err(p+".kubernetes", "", "a kubernetes check belongs to a helm or manifests component: it judges the workloads that component owns",
			"move it to the helm or manifests component whose workloads it should judge")
		return
	}
	seen := map[string]bool{}
	for i, o := range k.Objects {
		op := fmt.Sprintf("%s.kubernetes.objects[%d]", p, i)
		if _, _, _, problem := ParseWorkload(o); problem != "" {
			v.err(op, "", fmt.Sprintf("%s: %s", quote(o), problem), "e.g. Deployment/web or Deployment/shop/web (kinds: "+strings.Join(WorkloadKinds, ", ")+")")
			continue
		}
		if seen[o] {
			v.err(op, "", fmt.Sprintf("%s is named twice", quote(o)), "")
		}
		seen[o] = true
	}
}

// checkURL checks a literal http(s) URL, or a valueFrom reference (any
// component's output, the check's own component included: checks run
// after the apply).
func (v *validator) checkURL(p string, u StringValue) {
	switch {
	case u.Value != "" && u.ValueFrom != "":
		v.err(p, "", "set a URL or valueFrom, not both", "")
	case u.ValueFrom != "":
		v.valueFrom(p+".valueFrom", u.ValueFrom, nil)
	case u.Value == "":
		v.missing(p, "", `e.g. url: "http://127.0.0.1:8080/healthz", or url: {valueFrom: app.url}`)
	default:
		if pu, err := url.Parse(u.Value); err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			v.err(p, "", fmt.Sprintf("%s is not an http or https URL", quote(u.Value)), `e.g. "https://app.example.com/healthz"`)
		}
	}
}

// duration checks a Go duration field: positive and at most max.
func (v *validator) duration(p, s string, max time.Duration) {
	if s == "" {
		return
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		v.err(p, "", fmt.Sprintf("%s is not a duration", quote(s)), "e.g. 500ms, 10s, 2m")
	case d <= 0:
		v.err(p, "", fmt.Sprintf("%s must be more than zero", quote(s)), "e.g. 10s")
	case d > max:
		v.err(p, "", fmt.Sprintf("%s is longer than %s", quote(s), max), "")
	}
}

// limit checks an optional whole number against [min, max].
func (v *validator) limit(p string, n *int, min, max int) {
	if n != nil && (*n < min || *n > max) {
		v.err(p, "", fmt.Sprintf("%d is out of range", *n), fmt.Sprintf("a whole number from %d to %d", min, max))
	}
}
