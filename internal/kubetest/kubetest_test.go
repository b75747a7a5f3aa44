package kubetest

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMain(m *testing.M) { Main(m) }

func TestClusterServesTokenAndKubeconfig(t *testing.T) {
	c := Start(t)
	ns := c.Namespace(t)
	if _, err := c.Client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{}); err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	st, err := os.Stat(c.KubeconfigPath)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("kubeconfig file: %v, mode %v", err, st.Mode())
	}
	out, err := exec.Command(c.Kubectl, "--kubeconfig", c.KubeconfigPath, "get", "namespace", ns, "-o", "name").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "namespace/"+ns {
		t.Fatalf("kubectl get namespace: %v: %s", err, out)
	}
	if c2 := Start(t); c2 != c {
		t.Error("a second Start started another server")
	}
}
