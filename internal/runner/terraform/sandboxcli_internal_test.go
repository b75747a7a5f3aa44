package terraform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A sandboxed tool's CLI config is the server's without its credentials
// (HCL and JSON), keeping everything else; a config holding credentials
// that other users may read is refused, since the sandbox's user could
// read it itself.
func TestSandboxCLIConfigHoldsNoCredentials(t *testing.T) {
	dir := t.TempDir()
	const token = "tok-sandbox-51e0-secret"
	hclText := "provider_installation {\n  filesystem_mirror {\n    path = \"/mirror\"\n  }\n}\ncredentials \"registry.example\" {\n  token = \"" + token + "\"\n}\ncredentials_helper \"knit\" {\n  args = []\n}\nplugin_cache_dir = \"/cache\"\n"
	jsonText := `{"provider_installation": {"direct": {}}, "credentials": {"registry.example": {"token": "` + token + `"}}}`
	for name, text := range map[string]string{"tofurc": hclText, "tofurc.json": jsonText} {
		src := filepath.Join(dir, name)
		if err := os.WriteFile(src, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		wd := t.TempDir()
		p, err := sandboxCLIConfig(src, wd)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(got), token) || strings.Contains(string(got), "credentials") || !strings.Contains(string(got), "provider_installation") {
			t.Errorf("%s: the sandbox's CLI config:\n%s", name, got)
		}
		if name == "tofurc" && (!strings.Contains(string(got), `path = "/mirror"`) || !strings.Contains(string(got), "plugin_cache_dir")) {
			t.Errorf("the sandbox's CLI config lost settings:\n%s", got)
		}
		if err := os.Chmod(src, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := sandboxCLIConfig(src, t.TempDir()); err == nil || !strings.Contains(err.Error(), "chmod 600") || strings.Contains(err.Error(), token) {
			t.Errorf("%s readable by others: %v", name, err)
		}
	}
}
