package spec

import (
	"reflect"
	"strings"
	"testing"
)

// app is a script component with a url output, for checks to read.
const app = "    - name: app\n      type: script\n      script: {apply: x}\n      outputs: [{name: url}]\n"

func TestHealthChecksParse(t *testing.T) {
	env := mustParse(t, header+app+`      health:
        - name: http-ok
          http: {url: "http://127.0.0.1:8080/healthz", expectStatus: 200, bodyRegex: "ok"}
          interval: 1s
          count: 3
          failureLimit: 1
          timeout: 2s
        - name: from-output
          http: {url: {valueFrom: app.url}, insecureSkipVerify: true}
        - name: cmd
          command: test -f ready
          count: 3
          inconclusiveLimit: 2
          consecutiveErrorLimit: 0
  health:
    schedule: "@every 5m"
    checks:
      - name: errors
        prometheus: {url: "http://127.0.0.1:9090", query: "sum(rate(errors[5m]))", condition: "result < 0.01"}
`)
	h := env.Component("app").Health
	if len(h) != 3 {
		t.Fatalf("checks: %+v", h)
	}
	if h[0].HTTP.URL.Value != "http://127.0.0.1:8080/healthz" || h[0].HTTP.ExpectStatus != 200 || h[0].HTTP.BodyRegex != "ok" ||
		h[0].Interval != "1s" || *h[0].Count != 3 || *h[0].FailureLimit != 1 || h[0].Timeout != "2s" {
		t.Errorf("http check: %+v %+v", h[0], h[0].HTTP)
	}
	if h[1].HTTP.URL.ValueFrom != "app.url" || !h[1].HTTP.InsecureSkipVerify || h[1].HTTP.URL.Value != "" {
		t.Errorf("valueFrom check: %+v", h[1].HTTP)
	}
	if h[2].Command != "test -f ready" || *h[2].InconclusiveLimit != 2 || *h[2].ConsecutiveErrorLimit != 0 {
		t.Errorf("command check: %+v", h[2])
	}
	eh := env.Spec.Health
	if eh == nil || eh.Schedule != "@every 5m" || len(eh.Checks) != 1 || eh.Checks[0].Prometheus.Condition != "result < 0.01" {
		t.Errorf("environment health: %+v", eh)
	}
	// A check reading an output does not make the component depend on itself.
	if deps := env.Dependencies(env.Component("app")); len(deps) != 0 {
		t.Errorf("dependencies: %v", deps)
	}
}

// Each case is one mistake; every one is reported at its line.
func TestHealthChecksValidate(t *testing.T) {
	check := func(lines ...string) string {
		return header + app + "      health:\n" + strings.Join(lines, "\n") + "\n"
	}
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"no kind", check("        - name: a"),
			[]string{`13:11 spec.components[0].health[0]: a health check needs one of: http, command, prometheus, kubernetes`}},
		{"two kinds", check(`        - {name: a, command: "true", http: {url: "http://x"}}`),
			[]string{`13:11 spec.components[0].health[0]: set one of http, command, prometheus, kubernetes, not several`}},
		{"missing name", check(`        - {command: "true"}`),
			[]string{`13:11 spec.components[0].health[0].name: missing required field`}},
		{"same name twice", check(`        - {name: a, command: "true"}`, `        - {name: a, command: "true"}`),
			[]string{`14:12 spec.components[0].health[1].name: health check "a" is declared twice`}},
		{"bad url and status and regex", check(`        - name: a`, `          http: {url: "ftp://x", expectStatus: 42, bodyRegex: "("}`),
			[]string{
				`14:18 spec.components[0].health[0].http.url: "ftp://x" is not an http or https URL`,
				`14:34 spec.components[0].health[0].http.expectStatus: 42 is not an HTTP status`,
				`14:52 spec.components[0].health[0].http.bodyRegex: not a regular expression: error parsing regexp: missing closing ): ` + "`(`",
			}},
		{"url missing", check(`        - {name: a, http: {expectStatus: 200}}`),
			[]string{`13:21 spec.components[0].health[0].http.url: missing required field`}},
		{"valueFrom of an undeclared output", check(`        - {name: a, http: {url: {valueFrom: app.nope}}}`),
			[]string{`13:34 spec.components[0].health[0].http.url.valueFrom: component "app" does not declare output "nope"`}},
		{"bad durations and limits", check(`        - name: a`, `          command: "true"`, `          interval: 5`, `          timeout: -1s`,
			`          count: 0`, `          failureLimit: -1`, `          inconclusiveLimit: x`),
			[]string{
				`15:11 spec.components[0].health[0].interval: "5" is not a duration`,
				`16:11 spec.components[0].health[0].timeout: "-1s" must be more than zero`,
				`17:11 spec.components[0].health[0].count: 0 is out of range`,
				`18:11 spec.components[0].health[0].failureLimit: -1 is out of range`,
				`19:30 spec.components[0].health[0].inconclusiveLimit: expected a whole number, found "x"`,
			}},
		{"a check that cannot fail", check(`        - name: a`, `          command: "true"`, `          failureLimit: 5`,
			`        - {name: b, command: "true", count: 3, inconclusiveLimit: 3}`, `        - {name: c, command: "true", count: 3, failureLimit: 2}`),
			[]string{
				`15:11 spec.components[0].health[0].failureLimit: failureLimit 5 is not below count 1: every measurement may fail and the check still succeed, so it can never fail`,
				`16:48 spec.components[0].health[1].inconclusiveLimit: inconclusiveLimit 3 is not below count 3: every measurement may fail and the check still succeed, so it can never fail`,
			}},
		{"prometheus condition", check(`        - name: a`, `          prometheus: {url: "http://p:9090", query: "up", condition: "result ~ 1"}`),
			[]string{`14:59 spec.components[0].health[0].prometheus.condition: "result ~ 1" is not a condition`}},
		{"prometheus missing query", check(`        - name: a`, `          prometheus: {url: "http://p:9090", condition: "result > 0"}`),
			[]string{`14:11 spec.components[0].health[0].prometheus.query: missing required field`}},
		{"unknown field", check(`        - {name: a, command: "true", intervall: 1s}`),
			[]string{`13:38 spec.components[0].health[0].intervall: unknown field "intervall"`}},
		{"cloudknit files have no health", strings.Replace(check(`        - {name: a, command: "true"}`), APIVersionKnit, APIVersionCloudKnit, 1),
			[]string{`9:7 spec.components[0].type: unsupported component type "script"`, `12:7 spec.components[0].health: health needs apiVersion: knit.dev/v1`}},
		{"environment schedule", header + app + "  health: {schedule: \"@every nope\"}\n",
			[]string{`12:12 spec.health.schedule: @every: "nope" is not a duration such as 30m or 1h30m`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := parse(t, tt.src)
			wantDiags(t, ds, tt.want)
		})
	}
}

// A kubernetes check judges its own helm or manifests component's
// workloads: on any other component, or the environment, it is refused,
// as is an object that is not Kind/[namespace/]name of a workload kind.
func TestKubernetesCheckValidate(t *testing.T) {
	src := header + `    - name: web
      type: helm
      chart: {path: ./charts/web}
      health:
        - {name: ready, kubernetes: {}}
        - name: some
          kubernetes: {objects: [Deployment/web, StatefulSet/db/pg, Job/shop/migrate]}
    - name: k8s
      type: manifests
      manifests: {path: ./k8s}
      health:
        - name: bad
          kubernetes: {objects: [Service/web, Deployment, Deployment/Shop/web, Deployment/a/b/c, Job/x_y, Deployment/web, Deployment/web]}
` + app + `      health:
        - {name: k, kubernetes: {}}
  health:
    checks:
      - {name: env, kubernetes: {objects: [Deployment/web]}}
`
	_, ds := parse(t, src)
	wantDiags(t, ds, []string{
		`20:34 spec.components[1].health[0].kubernetes.objects[0]: "Service/web": kind "Service" is not one of Deployment, StatefulSet, DaemonSet, Job`,
		`20:47 spec.components[1].health[0].kubernetes.objects[1]: "Deployment": not Kind/name or Kind/namespace/name`,
		`20:59 spec.components[1].health[0].kubernetes.objects[2]: "Deployment/Shop/web": "Shop" is not a namespace name`,
		`20:80 spec.components[1].health[0].kubernetes.objects[3]: "Deployment/a/b/c": not Kind/name or Kind/namespace/name`,
		`20:98 spec.components[1].health[0].kubernetes.objects[4]: "Job/x_y": "x_y" is not an object name`,
		`20:123 spec.components[1].health[0].kubernetes.objects[6]: "Deployment/web" is named twice`,
		`26:21 spec.components[2].health[0].kubernetes: a kubernetes check belongs to a helm or manifests component: it judges the workloads that component owns`,
		`29:21 spec.health.checks[0].kubernetes: a kubernetes check belongs to a helm or manifests component: it judges the workloads that component owns`,
	})
}

func TestKubernetesCheckParse(t *testing.T) {
	env := mustParse(t, header+`    - name: web
      type: helm
      chart: {path: ./charts/web}
      health:
        - {name: ready, kubernetes: {}}
        - {name: some, kubernetes: {objects: [Deployment/web, Job/shop/migrate]}, count: 2}
`)
	h := env.Component("web").Health
	if len(h) != 2 || h[0].Kubernetes == nil || len(h[0].Kubernetes.Objects) != 0 ||
		!reflect.DeepEqual(h[1].Kubernetes.Objects, []string{"Deployment/web", "Job/shop/migrate"}) || *h[1].Count != 2 {
		t.Fatalf("checks: %+v", h)
	}
}
