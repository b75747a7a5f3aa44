package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/spec"
)

const kubeconfigDoc = `apiVersion: v1
kind: Config
clusters:
- {name: a, cluster: {server: "https://a.example:6443"}}
- {name: b, cluster: {server: "https://b.example:6443"}}
users:
- {name: u, user: {token: %s}}
contexts:
- {name: dev, context: {cluster: a, user: u}}
- {name: prod, context: {cluster: b, user: u}}
current-context: dev
`

// A kubeconfig is credentials, not sources: it may live outside the
// environment's folder, or be named by $KUBECONFIG; its content never
// appears in an error.
func TestKubeconfigAnywhereOrFromEnv(t *testing.T) {
	env := &spec.Environment{Dir: t.TempDir()}
	home := t.TempDir()
	kc := filepath.Join(home, "config")
	if err := os.WriteFile(kc, []byte(strings.Replace(kubeconfigDoc, "%s", "tok-1", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, kctx, err := Access(env, &spec.Kubeconfig{Path: kc}, nil)
	if err != nil || cfg.Host != "https://a.example:6443" || kctx != "dev" {
		t.Fatalf("path outside the folder: %v %q %v", cfg, kctx, err)
	}
	t.Setenv("KUBECONFIG", kc)
	cfg, kctx, err = Access(env, &spec.Kubeconfig{FromEnv: "KUBECONFIG", Context: "prod"}, nil)
	if err != nil || cfg.Host != "https://b.example:6443" || kctx != "prod" {
		t.Fatalf("fromEnv: %v %q %v", cfg, kctx, err)
	}
	if got := Target(cfg, kctx); got != "context prod (https://b.example:6443)" {
		t.Errorf("target %q", got)
	}

	// The cluster, not the credentials, is the identity.
	dev, _ := Identity(env, &spec.Kubeconfig{Path: kc}, nil)
	prod, _ := Identity(env, &spec.Kubeconfig{Path: kc, Context: "prod"}, nil)
	if err := os.WriteFile(kc, []byte(strings.Replace(kubeconfigDoc, "%s", "tok-2", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	again, _ := Identity(env, &spec.Kubeconfig{Path: kc}, nil)
	if dev == "" || dev == prod || dev != again {
		t.Errorf("identities: dev %q, prod %q, dev with another token %q", dev, prod, again)
	}

	secret := filepath.Join(home, "secret")
	if err := os.WriteFile(secret, []byte("password: [s3cr3t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, k := range []*spec.Kubeconfig{{Path: secret}, {Path: filepath.Join(home, "none")}} {
		if _, _, err := Access(env, k, nil); err == nil || strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("%s: %v", k.Path, err)
		}
	}
	t.Setenv("KUBECONFIG", "")
	if _, _, err := Access(env, &spec.Kubeconfig{FromEnv: "KUBECONFIG"}, nil); err == nil || !strings.Contains(err.Error(), "$KUBECONFIG is not set") {
		t.Errorf("fromEnv unset: %v", err)
	}
}
