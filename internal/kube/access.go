package kube

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"knit.dev/knit/internal/spec"
)

// RESTConfig builds the access to the cluster of component c from its
// kubeconfig block (nil: the default kubeconfig, $KUBECONFIG or
// ~/.kube/config) and its inputs, which carry the values of the block's
// valueFrom parts under spec's reserved Input* names. Nothing is written to
// disk, so a kubeconfig from an upstream output stays in memory.
func RESTConfig(env *spec.Environment, k *spec.Kubeconfig, in map[string]any) (*rest.Config, error) {
	cfg, _, err := Access(env, k, in)
	return cfg, err
}

// Access is RESTConfig, and the name of the kubeconfig context it used
// ("" for access from server, ca and token).
func Access(env *spec.Environment, k *spec.Kubeconfig, in map[string]any) (*rest.Config, string, error) {
	overrides := &clientcmd.ConfigOverrides{}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	switch {
	case k == nil:
	case k.ValueFrom != "":
		raw, err := inputString(in, spec.InputKubeconfig, "kubeconfig.valueFrom "+string(k.ValueFrom))
		if err != nil {
			return nil, "", err
		}
		cfg, err := clientcmd.Load([]byte(raw))
		if err != nil {
			// The parse error may quote the content: do not pass it on.
			return nil, "", fmt.Errorf("kubeconfig from %s is not a kubeconfig (its content is not shown: it may hold credentials)", k.ValueFrom)
		}
		overrides.CurrentContext = k.Context
		return build(clientcmd.NewNonInteractiveClientConfig(*cfg, k.Context, overrides, nil), k.Context)
	case k.Server != nil:
		cfg, err := partsConfig(k, in)
		return cfg, "", err
	case k.FromEnv != "":
		// The variable's value is not shown: it is the user's.
		v := os.Getenv(k.FromEnv)
		if v == "" {
			return nil, "", fmt.Errorf("kubeconfig.fromEnv: $%s is not set in the environment of knit's Kubernetes runner (a name other than KUBECONFIG reaches it only when knit serve --tool-env names it)", k.FromEnv)
		}
		rules = &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(v)}
		if err := readable("$"+k.FromEnv, rules.Precedence...); err != nil {
			return nil, "", err
		}
		overrides.CurrentContext = k.Context
	default:
		if k.Path != "" {
			p, err := KubeconfigPath(env, k.Path)
			if err != nil {
				return nil, "", err
			}
			if err := readable("path "+k.Path, p); err != nil {
				return nil, "", err
			}
			rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: p}
		}
		overrides.CurrentContext = k.Context
	}
	return build(clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides), overrides.CurrentContext)
}

// KubeconfigPath resolves a kubeconfig block's path: ~/ is the home
// folder, a relative path is read from the environment's folder. It may
// lead anywhere the user can read: a kubeconfig holds credentials, which
// belong beside the user, not in the environment's sources.
func KubeconfigPath(env *spec.Environment, p string) (string, error) {
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("kubeconfig.path %s: %w", p, err)
		}
		return filepath.Join(home, rest), nil
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p), nil
	}
	return filepath.Join(env.Dir, p), nil
}

// readable checks that the kubeconfig files named what are kubeconfigs,
// one at least present. Parse errors may quote a file's content, and a
// path may lead anywhere: they are not passed on.
func readable(what string, paths ...string) error {
	found := false
	for _, p := range paths {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		found = true
		if _, err := os.ReadFile(p); err != nil {
			return fmt.Errorf("kubeconfig %s: %w", what, err)
		}
		if _, err := clientcmd.LoadFromFile(p); err != nil {
			return fmt.Errorf("kubeconfig %s: %s is not a kubeconfig (its content is not shown: it may hold credentials)", what, p)
		}
	}
	if !found {
		return fmt.Errorf("kubeconfig %s: no such file", what)
	}
	return nil
}

// build makes the rest.Config of cc and names the context it used: kctx
// when one was asked for, else the kubeconfig's current context.
func build(cc clientcmd.ClientConfig, kctx string) (*rest.Config, string, error) {
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	if kctx != "" {
		return cfg, kctx, nil
	}
	raw, err := cc.RawConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, raw.CurrentContext, nil
}

// Target says which cluster cfg reaches, for people: the kubeconfig
// context used, if any, and the API server's URL.
func Target(cfg *rest.Config, kubeContext string) string {
	if kubeContext == "" {
		return cfg.Host
	}
	return fmt.Sprintf("context %s (%s)", kubeContext, cfg.Host)
}

// Identity names the cluster that a component's kubeconfig block and
// inputs reach (see RESTConfig), for fingerprints: its API server's URL
// and a digest of the CA it trusts (no secret). Another cluster (another
// server or CA) means another identity, so the objects are planned again,
// as creates there. Credentials are left out: a new token for the same
// cluster changes nothing.
func Identity(env *spec.Environment, k *spec.Kubeconfig, in map[string]any) (string, error) {
	cfg, err := RESTConfig(env, k, in)
	if err != nil {
		return "", err
	}
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		b, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return "", fmt.Errorf("kubeconfig: the cluster's CA: %w", err)
		}
		ca = b
	}
	sum := sha256.Sum256(ca)
	return cfg.Host + " ca:" + hex.EncodeToString(sum[:8]), nil
}

// partsConfig builds access from server, CA and token.
func partsConfig(k *spec.Kubeconfig, in map[string]any) (*rest.Config, error) {
	part := func(kv *spec.KubeValue, input, what string) (string, error) {
		if kv == nil {
			return "", nil
		}
		if kv.ValueFrom == "" {
			return kv.Value, nil
		}
		return inputString(in, input, fmt.Sprintf("kubeconfig.%s.valueFrom %s", what, kv.ValueFrom))
	}
	server, err := part(k.Server, spec.InputKubeconfigServer, "server")
	if err != nil {
		return nil, err
	}
	ca, err := part(k.CA, spec.InputKubeconfigCA, "ca")
	if err != nil {
		return nil, err
	}
	token, err := part(k.Token, spec.InputKubeconfigToken, "token")
	if err != nil {
		return nil, err
	}
	cfg := &rest.Config{Host: server, BearerToken: token}
	if ca != "" {
		cfg.CAData = pemData(ca)
	}
	// Validate as clientcmd would, without a file.
	api := clientcmdapi.NewConfig()
	api.Clusters["c"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cfg.CAData}
	api.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	api.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	api.CurrentContext = "c"
	if err := clientcmd.Validate(*api); err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

// pemData accepts a CA as PEM or as base64 of PEM (as kubeconfigs and most
// cloud outputs carry it).
func pemData(s string) []byte {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "-----BEGIN") {
		return []byte(s + "\n")
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil {
		return b
	}
	return []byte(s)
}

func inputString(in map[string]any, name, what string) (string, error) {
	v, ok := in[name]
	if !ok {
		return "", fmt.Errorf("%s: the value has not been resolved (apply the producer first)", what)
	}
	s, ok := v.(string)
	if !ok || s == "" {
		return "", errors.New(what + ": not a non-empty string")
	}
	return s, nil
}

// Bounded is cfg whose every request ends by ctx's deadline, when it has
// one: client-go's discovery and Helm's release storage make requests
// without a context, which a cancelled ctx would not stop.
func Bounded(ctx context.Context, cfg *rest.Config) *rest.Config {
	d, ok := ctx.Deadline()
	if !ok {
		return cfg
	}
	cfg = rest.CopyConfig(cfg)
	if left := time.Until(d); left > 0 && (cfg.Timeout == 0 || left < cfg.Timeout) {
		cfg.Timeout = left
	} else if left <= 0 {
		cfg.Timeout = time.Nanosecond
	}
	return cfg
}
