package procexec_test

import (
	"slices"
	"testing"

	"knit.dev/knit/internal/procexec"
)

func TestToolEnvPassesOnlyTheAllowlist(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp",
		"TF_LOG=debug", "AWS_PROFILE=dev", "GOOGLE_CREDENTIALS={}", "ARM_CLIENT_ID=id",
		"KUBECONFIG=/k", "SSH_AUTH_SOCK=/s",
		"EDITOR=vi", "DATABASE_URL=postgres://secret", "MY_TOOL_FLAG=1",
		"KNIT_TOKEN=t0k3n", "KNIT_VAR_WHO=inherited", "KNIT_TF_LOG=x",
		"no-equals-sign", "=hidden",
	}
	for _, tc := range []struct {
		name  string
		extra []string
		want  []string
	}{{
		name: "allowlist",
		want: []string{
			"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp",
			"TF_LOG=debug", "AWS_PROFILE=dev", "GOOGLE_CREDENTIALS={}", "ARM_CLIENT_ID=id",
			"KUBECONFIG=/k", "SSH_AUTH_SOCK=/s",
		},
	}, {
		name:  "extra names pass, KNIT_ ones never",
		extra: []string{"MY_TOOL_FLAG", "KNIT_TOKEN", "KNIT_VAR_WHO", "NOT_SET"},
		want: []string{
			"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8", "LC_ALL=C", "TMPDIR=/tmp",
			"TF_LOG=debug", "AWS_PROFILE=dev", "GOOGLE_CREDENTIALS={}", "ARM_CLIENT_ID=id",
			"KUBECONFIG=/k", "SSH_AUTH_SOCK=/s", "MY_TOOL_FLAG=1",
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got := procexec.ToolEnv(environ, tc.extra)
			if !slices.Equal(got, tc.want) {
				t.Errorf("ToolEnv =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestToolEnvReadsTheProcessEnvironmentWhenNil(t *testing.T) {
	t.Setenv("TF_IN_AUTOMATION", "1")
	t.Setenv("KNIT_TOKEN", "t0k3n")
	t.Setenv("UNLISTED_SECRET", "s")
	got := procexec.ToolEnv(nil, nil)
	if !slices.Contains(got, "TF_IN_AUTOMATION=1") {
		t.Errorf("TF_IN_AUTOMATION missing: %q", got)
	}
	for _, kv := range got {
		if kv == "KNIT_TOKEN=t0k3n" || kv == "UNLISTED_SECRET=s" {
			t.Errorf("%s passed", kv)
		}
	}
}
