package kube

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

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
	overrides := &clientcmd.ConfigOverrides{}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	switch {
	case k == nil:
	case k.ValueFrom != "":
		raw, err := inputString(in, spec.InputKubeconfig, "kubeconfig.valueFrom "+k.ValueFrom)
		if err != nil {
			return nil, err
		}
		cfg, err := clientcmd.Load([]byte(raw))
		if err != nil {
			// The parse error may quote the content: do not pass it on.
			return nil, fmt.Errorf("kubeconfig from %s is not a kubeconfig (its content is not shown: it may hold credentials)", k.ValueFrom)
		}
		overrides.CurrentContext = k.Context
		return clientcmd.NewNonInteractiveClientConfig(*cfg, k.Context, overrides, nil).ClientConfig()
	case k.Server != nil:
		return partsConfig(k, in)
	default:
		if k.Path != "" {
			p, err := env.LocalPath(k.Path)
			if err != nil {
				return nil, err
			}
			rules = &clientcmd.ClientConfigLoadingRules{ExplicitPath: p}
		}
		overrides.CurrentContext = k.Context
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
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
