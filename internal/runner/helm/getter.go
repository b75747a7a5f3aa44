package helm

import (
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// getter hands Helm an in-memory rest.Config: no kubeconfig file is written.
type getter struct {
	cfg *rest.Config
	ns  string
}

func (g *getter) ToRESTConfig() (*rest.Config, error) { return rest.CopyConfig(g.cfg), nil }

func (g *getter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(g.cfg)
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(dc), nil
}

func (g *getter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(dc), dc, nil), nil
}

func (g *getter) ToRawKubeConfigLoader() clientcmd.ClientConfig { return clientConfig{g} }

// clientConfig answers Helm's questions about the namespace and config.
type clientConfig struct{ g *getter }

func (c clientConfig) RawConfig() (clientcmdapi.Config, error) { return *clientcmdapi.NewConfig(), nil }
func (c clientConfig) ClientConfig() (*rest.Config, error)     { return c.g.ToRESTConfig() }
func (c clientConfig) Namespace() (string, bool, error)        { return c.g.ns, true, nil }
func (c clientConfig) ConfigAccess() clientcmd.ConfigAccess {
	return clientcmd.NewDefaultClientConfigLoadingRules()
}
