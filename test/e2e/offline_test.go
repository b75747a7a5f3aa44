package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProviderMirrorWorksWithNoNetwork runs `tofu init && tofu apply` of a
// module using hashicorp/local from make tools' mirror with the network cut
// off: inside a new network namespace (unshare -n) where the kernel allows
// it, else with every proxy variable pointing at a closed loopback port.
func TestProviderMirrorWorksWithNoNetwork(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.write(map[string]string{"mod/main.tf": `
terraform {
  required_providers {
    local = { source = "hashicorp/local", version = "1.4.0" }
  }
}
resource "local_file" "hello" {
  filename = "${path.module}/hello.txt"
  content  = "offline"
}
`})
	script := "set -e; tofu init -input=false -no-color && tofu apply -auto-approve -input=false -no-color"
	env := append(os.Environ(),
		"TF_CLI_CONFIG_FILE="+filepath.Join(repo, ".tools", "tofurc"),
		"PATH="+filepath.Dir(tofuBin)+":"+os.Getenv("PATH"),
		"HOME="+w.dir, "CHECKPOINT_DISABLE=1")
	var cmd *exec.Cmd
	if exec.Command("unshare", "-n", "true").Run() == nil {
		cmd = exec.Command("unshare", "-n", "sh", "-c", script)
		t.Log("network cut off with unshare -n")
	} else {
		cmd = exec.Command("sh", "-c", script)
		for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"} {
			env = append(env, v+"=http://127.0.0.1:9")
		}
		t.Log("unshare -n not permitted here: proxies point at a closed port instead")
	}
	cmd.Dir, cmd.Env = w.path("mod"), env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("offline init+apply failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "Apply complete! Resources: 1 added") {
		t.Errorf("unexpected output:\n%s", out)
	}
	if got := w.read("mod/hello.txt"); got != "offline" {
		t.Errorf("hello.txt = %q", got)
	}
}
