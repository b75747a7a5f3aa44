package procexec

import (
	"os"
	"strings"
)

// toolEnvNames are the variables every tool may see: what a process needs
// to run (PATH, HOME, locale, temp dir) and nothing that is knit's own.
var toolEnvNames = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "LANGUAGE": true, "TZ": true, "TMPDIR": true, "TERM": true,
	"SSL_CERT_FILE": true, "SSL_CERT_DIR": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true,
	"http_proxy": true, "https_proxy": true, "no_proxy": true,
	"KUBECONFIG": true, "XDG_CONFIG_HOME": true, "XDG_CACHE_HOME": true,
}

// toolEnvPrefixes are families of variables that configure tools and
// clouds: OpenTofu/Terraform, Helm, and the credentials of the usual providers.
var toolEnvPrefixes = []string{
	"LC_", "TF_", "AWS_", "GOOGLE_", "CLOUDSDK_", "ARM_", "AZURE_",
	"DIGITALOCEAN_", "HCLOUD_", "OCI_", "VAULT_", "CONSUL_", "GIT_", "SSH_AUTH_SOCK", "HELM_",
}

// ToolEnv returns the environment a tool runs with: the entries of environ
// (os.Environ() when nil) whose names are on the allowlist above or listed
// in extra (names a user allows in knit's config). KNIT_* variables never
// pass, even when listed: they hold knit's own settings and secrets.
func ToolEnv(environ []string, extra []string) []string {
	if environ == nil {
		environ = os.Environ()
	}
	allowed := make(map[string]bool, len(extra))
	for _, n := range extra {
		allowed[n] = true
	}
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || strings.HasPrefix(name, "KNIT_") {
			continue
		}
		if toolEnvNames[name] || allowed[name] || hasAnyPrefix(name, toolEnvPrefixes) {
			out = append(out, kv)
		}
	}
	return out
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
