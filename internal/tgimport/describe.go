package tgimport

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"

	"knit.dev/knit/internal/procexec"
)

// Describe runs knit-terragrunt (the executable at bin) on dir and reads
// what it prints. The program gets an environment of its own: no
// variables of knit's but where to put scratch files, so nothing the
// tree's configuration reads through get_env comes from the importer.
func Describe(ctx context.Context, bin, dir string) (*Description, error) {
	cmd := procexec.Command(ctx, bin, "describe", dir)
	cmd.Env = describeEnv(os.Getenv)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := procexec.Run(ctx, cmd); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = err.Error()
		}
		return nil, fmt.Errorf("read the Terragrunt tree %s: %s", dir, strings.TrimPrefix(msg, "knit-terragrunt: "))
	}
	return Decode(out.Bytes())
}

func describeEnv(getenv func(string) string) []string {
	var env []string
	for _, name := range []string{"TMPDIR", "HOME"} {
		if v := getenv(name); v != "" {
			env = append(env, name+"="+v)
		}
	}
	return env
}

// Locate finds knit-terragrunt: beside the knit binary, then on PATH.
func Locate() (string, error) {
	return procexec.Locate("knit-terragrunt", "knit import terragrunt reads Terragrunt trees with it")
}
