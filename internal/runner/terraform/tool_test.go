package terraform

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestEnv: the tool gets knit's allowlist of the caller's environment,
// never the caller's TF_VAR_*, TF_LOG*, TF_DATA_DIR or KNIT_*, and knit's
// own settings.
func TestEnv(t *testing.T) {
	t.Setenv("TF_VAR_x", "1")
	t.Setenv("TF_CLI_ARGS_plan", "-destroy")
	t.Setenv("TF_LOG", "TRACE")
	t.Setenv("TF_DATA_DIR", "/elsewhere")
	t.Setenv("TF_KNIT_STATE_KEY", "inherited")
	t.Setenv("KNIT_TOKEN", "t0k3n")
	t.Setenv("UNLISTED", "x")
	t.Setenv("ALLOWED", "y")
	r := New(Binary{Path: "/bin/tofu", CLIConfig: "/etc/knit/tofurc"}, Options{DataDir: "/data", ExtraEnv: []string{"ALLOWED"}})
	env := r.env(map[string]string{"TF_VAR_secret": "s3cr3t"})
	for _, kv := range []string{
		"TF_CLI_CONFIG_FILE=/etc/knit/tofurc", "TF_PLUGIN_CACHE_DIR=/data/plugin-cache", "CHECKPOINT_DISABLE=1",
		"TF_IN_AUTOMATION=1", "TF_INPUT=0", "TF_VAR_secret=s3cr3t", "ALLOWED=y", "PATH=" + os.Getenv("PATH"),
	} {
		if !slices.Contains(env, kv) {
			t.Errorf("env lacks %s: %v", kv, env)
		}
	}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "TF_VAR_x", "TF_CLI_ARGS_plan", "TF_LOG", "TF_DATA_DIR", "TF_KNIT_STATE_KEY", "KNIT_TOKEN", "UNLISTED":
			t.Errorf("env keeps the caller's %s", kv)
		}
	}
}

func TestHCLLiteral(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   any
		want string
	}{
		{3, "3"},
		{2.5, "2.5"},
		{true, "true"},
		{nil, "null"},
		{[]any{"a", 1}, `["a", 1]`},
		{map[string]any{"b": "x", "a": []any{}}, `{"a" = [], "b" = "x"}`},
		{map[string]any{"t": "${var.x} %{if} \"q\" \\ \n"}, `{"t" = "$${var.x} %%{if} \"q\" \\ \n"}`},
		{map[string]any{"${k}": 1}, `{"$${k}" = 1}`},
	} {
		got, err := hclLiteral(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("hclLiteral(%#v) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}
