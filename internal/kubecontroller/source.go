package kubecontroller

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"knit.dev/knit/internal/spec"
)

// envFile is the environment file the controller writes for an Environment.
const envFile = "environment.yaml"

// load writes the Environment's folder under root afresh (the files of the
// ConfigMaps it names, and its spec as an environment file) and reads it
// as the CLI reads a file. A problem is returned as the parser's
// diagnostics (file:line, what, how to fix) or names the ConfigMap.
func load(ctx context.Context, reader client.Reader, root string, gv schema.GroupVersion, e *Environment) (*spec.Environment, error) {
	extra, body, err := splitSpec(e.Spec)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, gv.Group, e.Namespace, e.Name)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	for i, s := range extra.Sources {
		if err := writeConfigMap(ctx, reader, dir, e.Namespace, s); err != nil {
			return nil, fmt.Errorf("spec.sources[%d]: %w", i, err)
		}
	}
	meta := map[string]any{"name": e.Name, "namespace": e.Namespace}
	if len(e.Labels) > 0 {
		// The object's labels are the environment's, as in a file: the
		// policies that select by label (env: prod) judge its runs.
		meta["labels"] = e.Labels
	}
	doc := map[string]any{
		"apiVersion": gv.String(),
		"kind":       spec.KindEnvironment,
		"metadata":   meta,
		"spec":       body,
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, envFile)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, err
	}
	env, ds := spec.Load(path)
	if ds.HasErrors() {
		return nil, fmt.Errorf("%s", ds.String())
	}
	return env, nil
}

// splitSpec separates the controller's fields (SpecExtra) from the
// environment file's spec.
func splitSpec(s EnvironmentSpec) (SpecExtra, map[string]any, error) {
	body := make(map[string]any, len(s))
	for k, v := range s {
		body[k] = v
	}
	var extra SpecExtra
	if src, ok := body["sources"]; ok {
		delete(body, "sources")
		b, err := json.Marshal(map[string]any{"sources": src})
		if err != nil {
			return extra, nil, err
		}
		if err := json.Unmarshal(b, &extra); err != nil {
			return extra, nil, fmt.Errorf("spec.sources: %w (a list of {configMap: NAME, path: FOLDER})", err)
		}
	}
	return extra, body, nil
}

// writeConfigMap writes the keys of ConfigMap s.ConfigMap of namespace ns
// as files into dir/s.Path, which must stay inside dir.
func writeConfigMap(ctx context.Context, reader client.Reader, dir, ns string, s Source) error {
	if s.ConfigMap == "" {
		return fmt.Errorf("no configMap: name a ConfigMap of namespace %s", ns)
	}
	if s.Path != "" && !filepath.IsLocal(s.Path) {
		return fmt.Errorf("path %q leaves the environment's folder: give a relative path such as modules/file", s.Path)
	}
	var cm corev1.ConfigMap
	if err := reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: s.ConfigMap}, &cm); err != nil {
		return fmt.Errorf("ConfigMap %s/%s: %w", ns, s.ConfigMap, err)
	}
	to := filepath.Join(dir, s.Path)
	if err := os.MkdirAll(to, 0o700); err != nil {
		return err
	}
	files := map[string][]byte{}
	for k, v := range cm.Data {
		files[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		files[k] = v
	}
	for name, data := range files {
		if !filepath.IsLocal(name) {
			return fmt.Errorf("ConfigMap %s/%s: key %q is not a file name", ns, s.ConfigMap, name)
		}
		if err := os.WriteFile(filepath.Join(to, name), data, 0o600); err != nil {
			return err
		}
	}
	return nil
}
