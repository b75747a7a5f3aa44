package manifests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"knit.dev/knit/internal/kube"
)

var kustomizationFiles = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}

// render reads the objects at path: one file, a folder of .yaml/.yml/.json
// files (sorted by name, not recursive), or a folder with a kustomization,
// built with kustomize. Every ${var.NAME} in the text is replaced before
// the YAML is read, as envsubst would: strings as they are, other values
// as JSON, so `replicas: ${var.n}` is a number and `"${var.n}"` a string.
func render(path string, in map[string]any) ([]*unstructured.Unstructured, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	switch {
	case !st.IsDir():
		return readFile(path, in)
	case isKustomization(path):
		k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
		rm, err := k.Run(filesys.MakeFsOnDisk(), path)
		if err != nil {
			return nil, fmt.Errorf("kustomize build %s: %w", path, err)
		}
		y, err := rm.AsYaml()
		if err != nil {
			return nil, err
		}
		if y, err = substitute(y, in); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return kube.Decode(y, path)
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || (ext != ".yaml" && ext != ".yml" && ext != ".json") {
			continue
		}
		o, err := readFile(filepath.Join(path, e.Name()), in)
		if err != nil {
			return nil, err
		}
		objs = append(objs, o...)
	}
	return objs, nil
}

func isKustomization(dir string) bool {
	for _, f := range kustomizationFiles {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return true
		}
	}
	return false
}

func readFile(p string, in map[string]any) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, err
	}
	if b, err = substitute(b, in); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return kube.Decode(b, p)
}

var varRef = regexp.MustCompile(`\$\{var\.([A-Za-z_][A-Za-z0-9_-]*)\}`)

// substitute replaces every ${var.NAME} in text.
func substitute(text []byte, in map[string]any) ([]byte, error) {
	var err error
	out := varRef.ReplaceAllFunc(text, func(ref []byte) []byte {
		name := string(varRef.FindSubmatch(ref)[1])
		val, ok := in[name]
		if !ok {
			if err == nil {
				err = unknownVar(name, in)
			}
			return ref
		}
		if s, ok := val.(string); ok {
			return []byte(s)
		}
		b, _ := json.Marshal(val)
		return b
	})
	return out, err
}

func unknownVar(name string, in map[string]any) error {
	var names []string
	for k := range in {
		if !strings.HasPrefix(k, "@") {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return fmt.Errorf("${var.%s}: no variable %q (variables: %s)", name, name, strings.Join(names, ", "))
}
