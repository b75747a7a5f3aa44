package kubecli_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/cli"
	"knit.dev/knit/internal/kubecli"
)

// TestControllerCommandRefusesBadFlags: knit controller says what is wrong
// with a flag, or with the cluster access, before it starts anything.
func TestControllerCommandRefusesBadFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-kubeconfig")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"controller", "--log-format", "xml"}, `--log-format "xml": use text or json`},
		{[]string{"controller", "--interval", "0s"}, "--interval 0s: give a positive duration"},
		{[]string{"controller", "--kubeconfig", missing}, "cluster access: "},
		{[]string{"controller", "--team-for-namespace", "a=", "--kubeconfig", missing}, "--team-for-namespace a=: give namespace=team"},
		{[]string{"controller", "--default-team", "qa/prod", "--kubeconfig", missing}, `--default-team "qa/prod": give a team name`},
		{[]string{"controller", "install-crds", "--kubeconfig", missing}, "pass --kubeconfig"},
	} {
		var stdout, stderr bytes.Buffer
		code := cli.RunWith(context.Background(), append(tc.args, "--data-dir", t.TempDir()), strings.NewReader(""), &stdout, &stderr, kubecli.Kube())
		if code == 0 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("knit %s: exit %d, stderr %q, want %q", strings.Join(tc.args, " "), code, stderr.String(), tc.want)
		}
	}
}

// TestKnitWithoutKubeSaysWhereTheControllerRuns: the CLI without Kube (knit's
// own binary, run in a caller's process) does no controller work itself.
func TestKnitWithoutKubeSaysWhereTheControllerRuns(t *testing.T) {
	for _, args := range [][]string{{"controller"}, {"controller", "install-crds"}} {
		var stdout, stderr bytes.Buffer
		code := cli.Run(context.Background(), append(args, "--data-dir", t.TempDir()), strings.NewReader(""), &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), "knit controller runs in knit-kube") {
			t.Errorf("knit %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr.String())
		}
	}
}
