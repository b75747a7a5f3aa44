package spec

import (
	"reflect"
	"strings"
	"testing"
)

func TestKubeconfigValidation(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{
			"valueFrom a declared output, inherited from the environment",
			strings.Replace(header, "  components:", "  kubeconfig: {valueFrom: cluster.kubeconfig}\n  components:", 1) +
				`    - {name: cluster, type: script, script: {apply: x}, outputs: [{name: kubeconfig, sensitive: true}]}
    - {name: web, type: helm, chart: {path: ./charts/web}}
`,
			nil,
		},
		{
			"one way only, parts need value or valueFrom",
			header + `    - {name: cluster, type: script, script: {apply: x}, outputs: [{name: endpoint}]}
    - name: web
      type: helm
      chart: {path: ./charts/web}
      kubeconfig: {path: ./k8s/deploy.yaml, valueFrom: cluster.endpoint}
    - name: k8s
      type: manifests
      manifests: {path: ./k8s}
      kubeconfig: {server: {valueFrom: cluster.endpointt}, ca: {}, token: {value: abc}, context: x}
`,
			[]string{
				`12:7 spec.components[1].kubeconfig: set one of: path, fromEnv, valueFrom, or server with ca and token`,
				`16:29 spec.components[2].kubeconfig.server.valueFrom: component "cluster" does not declare output "endpointt"`,
				`16:60 spec.components[2].kubeconfig.ca: set value or valueFrom`,
				`warning 16:76 spec.components[2].kubeconfig.token.value: a token written in the file is readable by anyone who can read the file`,
				`16:89 spec.components[2].kubeconfig.context: context goes with path, fromEnv or valueFrom, not with server`,
			},
		},
		{
			// A kubeconfig is credentials, not sources: it may live
			// outside the environment's folder, or be named by $KUBECONFIG.
			"path anywhere, fromEnv a kubeconfig variable",
			header + `    - {name: a, type: helm, chart: {path: ./charts/web}, kubeconfig: {path: /etc/knit/kubeconfig}}
    - {name: b, type: helm, chart: {path: ./charts/web}, kubeconfig: {path: ~/.kube/config, context: dev}}
    - {name: c, type: manifests, manifests: {path: ./k8s}, kubeconfig: {fromEnv: KUBECONFIG, context: dev}}
    - {name: d, type: manifests, manifests: {path: ./k8s}, kubeconfig: {fromEnv: AWS_SECRET_ACCESS_KEY}}
    - {name: e, type: manifests, manifests: {path: ./k8s}, kubeconfig: {fromEnv: KUBECONFIG, path: ./k}}
`,
			[]string{
				`11:73 spec.components[3].kubeconfig.fromEnv: "AWS_SECRET_ACCESS_KEY" is not a kubeconfig variable`,
				`12:60 spec.components[4].kubeconfig: set one of: path, fromEnv, valueFrom, or server with ca and token`,
			},
		},
		{
			"kubeconfig is for kubernetes components, and knit.dev/v1",
			header + `    - {name: a, type: script, script: {apply: x}, kubeconfig: {context: kind}}
`,
			[]string{`8:51 spec.components[0].kubeconfig: kubeconfig is only for helm and manifests components`},
		},
		{
			"outputs of helm and manifests",
			header + `    - name: web
      type: helm
      chart: {path: ./charts/web}
      outputs: [{name: revision}, {name: url}, {name: ip, from: "Service/web:.spec.clusterIP"}, {name: bad, from: "Service:x"}]
    - name: k8s
      type: manifests
      manifests: {path: ./k8s}
      outputs: [{name: plain}]
      variables: [{name: "@kubeconfig", value: x}]
`,
			[]string{
				`11:35 spec.components[0].outputs[1]: helm output "url" needs from: (a field of a live object)`,
				`11:109 spec.components[0].outputs[3].from: "Service" is not Kind/name or Kind/namespace/name`,
				`15:17 spec.components[1].outputs[0]: manifests output "plain" needs from: (a field of a live object)`,
				`16:20 spec.components[1].variables[0].name: "@kubeconfig" is not a valid variable name`,
			},
		},
		{
			"chart sources",
			header + `    - {name: a, type: helm, chart: {path: ./charts/web, repo: "https://charts.example.com", name: web}}
    - {name: b, type: helm, chart: {git: "https://example.com/charts.git", ref: v1, path: ../up}}
    - {name: c, type: helm, chart: {repo: "git@github.com:helm/examples.git", name: x, ref: v1, timeout: soon}}
`,
			[]string{
				`8:29 spec.components[0].chart: set one chart source: path (local), git (with ref and path), or repo (with name)`,
				`9:85 spec.components[1].chart.path: path "../up" must stay inside the repository`,
				`10:37 spec.components[2].chart.repo: "git@github.com:helm/examples.git" is not a chart repository URL`,
				`10:88 spec.components[2].chart.ref: ref is only for a chart from git`,
				`10:97 spec.components[2].chart.timeout: "soon" is not a duration`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ds := parse(t, tt.src)
			wantDiags(t, ds, tt.want)
		})
	}
}

func TestKubeconfigValueFromIsAnInputAndAnEdge(t *testing.T) {
	env := mustParse(t, strings.Replace(header, "  components:", "  kubeconfig: {valueFrom: cluster.kubeconfig}\n  components:", 1)+
		`    - {name: cluster, type: script, script: {apply: x}, outputs: [{name: kubeconfig, sensitive: true}, {name: token}]}
    - {name: web, type: helm, chart: {path: ./charts/web}, variables: [{name: image.tag, value: v2}]}
    - {name: k8s, type: manifests, manifests: {path: ./k8s}, kubeconfig: {server: {value: "https://127.0.0.1:6443"}, token: {valueFrom: cluster.token}}}
`)
	web := env.Component("web")
	want := []Variable{{Name: "image.tag", Value: "v2"}, {Name: InputKubeconfig, ValueFrom: "cluster.kubeconfig"}}
	if got := web.InputVariables(); !reflect.DeepEqual(got, want) {
		t.Errorf("web inputs = %#v, want %#v", got, want)
	}
	if got := env.Dependencies(web); !reflect.DeepEqual(got, []string{"cluster"}) {
		t.Errorf("web depends on %v, want [cluster]", got)
	}
	k8s := env.Component("k8s")
	if got := k8s.InputVariables(); !reflect.DeepEqual(got, []Variable{{Name: InputKubeconfigToken, ValueFrom: "cluster.token"}}) {
		t.Errorf("k8s inputs = %#v", got)
	}
	if env.Component("cluster").Kubeconfig != nil {
		t.Error("a script component inherited the environment's kubeconfig")
	}
	if got := env.Namespace(web); got != "shop-dev" {
		t.Errorf("default namespace = %q, want shop-dev", got)
	}
	if got := web.ReleaseName(); got != "web" {
		t.Errorf("release = %q, want web", got)
	}
}

func TestParseObjectField(t *testing.T) {
	f, err := ParseObjectField(`Deployment.apps/prod/web:.spec.template.spec.containers[0].image`)
	if err != nil {
		t.Fatal(err)
	}
	want := ObjectField{Kind: "Deployment.apps", Namespace: "prod", Name: "web", Text: ".spec.template.spec.containers[0].image",
		Path: []PathElem{{Key: "spec"}, {Key: "template"}, {Key: "spec"}, {Key: "containers"}, {Index: 0}, {Key: "image"}}}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("got %#v\nwant %#v", f, want)
	}
	f, err = ParseObjectField(`ConfigMap/settings:.data["app.url"]`)
	if err != nil || f.Namespace != "" || !reflect.DeepEqual(f.Path, []PathElem{{Key: "data"}, {Key: "app.url"}}) {
		t.Errorf("got %#v, %v", f, err)
	}
	for _, bad := range []string{"Service/web", "Service/web:", "Service/web:spec", "/web:.a", "Service/web:.a..b"} {
		if _, err := ParseObjectField(bad); err == nil {
			t.Errorf("ParseObjectField(%q) accepted", bad)
		}
	}
}
