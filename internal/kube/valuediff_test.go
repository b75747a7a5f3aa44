package kube

import (
	"reflect"
	"testing"
)

func TestValueChanges(t *testing.T) {
	container := func(color string, port int64) map[string]any {
		return map[string]any{"name": "podinfo", "image": "podinfo:6.9.2",
			"env":   []any{map[string]any{"name": "PODINFO_UI_COLOR", "value": color}, map[string]any{"name": "LEVEL", "value": "info"}},
			"ports": []any{map[string]any{"containerPort": port, "name": "http"}}}
	}
	deploy := func(replicas int64, color string, port int64) map[string]any {
		return map[string]any{"spec": map[string]any{"replicas": replicas,
			"template": map[string]any{"spec": map[string]any{"containers": []any{container(color, port)}}}},
			"status": map[string]any{"replicas": replicas}}
	}
	for _, tc := range []struct {
		name string
		a, b map[string]any
		o    DiffOptions
		want []string
	}{
		{"merge keys name list entries, env shows its value", deploy(1, "#34577c", 9898), deploy(3, "#ff0000", 9898), DiffOptions{}, []string{
			"spec.replicas: 1 → 3", "spec.template.spec.containers[podinfo].env[PODINFO_UI_COLOR]: #34577c → #ff0000"}},
		{"ports are named by name first", deploy(1, "x", 9898), deploy(1, "x", 8080), DiffOptions{}, []string{
			"spec.template.spec.containers[podinfo].ports[http].containerPort: 9898 → 8080"}},
		{"a keyed entry added", map[string]any{"ports": []any{map[string]any{"port": int64(80)}}}, map[string]any{"ports": []any{map[string]any{"port": int64(80)}, map[string]any{"port": int64(443)}}}, DiffOptions{}, []string{
			`ports[443]: (none) → {"port":443}`}},
		{"a map gone names each removed key", map[string]any{"data": map[string]any{"k": "v", "e": ""}}, map[string]any{}, DiffOptions{}, []string{
			`data.e: "" → (none)`, "data.k: v → (none)"}},
		{"a Secret's data is always masked", map[string]any{"data": map[string]any{"pw": "YQ=="}}, map[string]any{"data": map[string]any{"pw": "Yg=="}},
			DiffOptions{Secret: true}, []string{"data.pw: (sensitive) → (sensitive)"}},
		{"a value holding a sensitive string is masked", map[string]any{"data": map[string]any{"url": "postgres://u:hunter2@db"}}, map[string]any{"data": map[string]any{"url": "postgres://u:other@db"}},
			DiffOptions{Sensitive: []string{"hunter2"}}, []string{"data.url: (sensitive) → (sensitive)"}},
		{"unkeyed lists compare by index", map[string]any{"args": []any{"a", "b"}}, map[string]any{"args": []any{"a", "c"}}, DiffOptions{}, []string{"args[1]: b → c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range ValueChanges(tc.a, tc.b, tc.o) {
				got = append(got, c.String())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}
