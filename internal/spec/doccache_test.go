package spec

import (
	"bytes"
	"strings"
	"testing"
)

// TestADocCacheParsesATemplateOnceAndEachEnvironmentGetsItsOwnCopy: two
// environments of one template, with other parameters, load through one
// DocCache as they load without it; the template's anchors and aliases
// still resolve, and neither's substitution shows in the other.
func TestADocCacheParsesATemplateOnceAndEachEnvironmentGetsItsOwnCopy(t *testing.T) {
	tpl := strings.Replace(webStack, "    - name: net\n      type: terraform\n      module: {source: ../modules/app}\n",
		"    - name: net\n      type: terraform\n      module: &mod {source: ../modules/app}\n    - name: edge\n      type: terraform\n      module: *mod\n", 1)
	dir := repo(t, map[string]string{"templates/web-stack.yaml": tpl, "modules/app/main.tf": modApp,
		"envs/dev.yaml":  devEnv(`{tier: dev, size: 2}`, ""),
		"envs/prod.yaml": strings.Replace(devEnv(`{tier: prod, size: 5}`, ""), "envName: dev", "envName: prod", 1)})
	cache := NewDocCache()
	for _, name := range []string{"dev", "prod", "dev"} {
		plain, pd := LoadWith(dir+"/envs/"+name+".yaml", Options{RepoRoot: true})
		cached, cd := LoadWith(dir+"/envs/"+name+".yaml", Options{RepoRoot: true, Docs: cache})
		if pd.HasErrors() || cd.HasErrors() {
			t.Fatalf("%s: %s / %s", name, pd, cd)
		}
		a, err := jsonOf(plain)
		if err != nil {
			t.Fatal(err)
		}
		b, err := jsonOf(cached)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s through the cache:\n%s\nwithout:\n%s", name, b, a)
		}
		if want := map[string]string{"dev": "app-dev", "prod": "app-prod"}[name]; !bytes.Contains(b, []byte(want)) || len(cached.Spec.Components) != 3 {
			t.Errorf("%s: %d components, label %q not in\n%s", name, len(cached.Spec.Components), want, b)
		}
	}
	if len(cache.docs) != 1 {
		t.Errorf("the cache holds %d documents, want the one template", len(cache.docs))
	}
}
