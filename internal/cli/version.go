package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// Set at build time with -ldflags "-X knit.dev/knit/internal/cli.version=… -X …commit=…".
var (
	version = "dev"
	commit  = "unknown"
)

type versionView struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
	Tool    string `json:"tool"`
	ToolBin string `json:"toolPath,omitempty"`
	// ToolErr says why no tool was found when one was named (--tf-binary, KNIT_TF_BINARY).
	ToolErr string `json:"toolError,omitempty"`
	// KubeRunner is the knit-kube that runs helm and manifests components.
	KubeRunner    string `json:"kubeRunner,omitempty"`
	KubeRunnerErr string `json:"kubeRunnerError,omitempty"`
}

func newVersionCmd(d *deps) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print knit's version and the OpenTofu/Terraform it would use",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkOutput(output); err != nil {
				return err
			}
			v := versionView{Version: version, Commit: commit, Go: runtime.Version(), Tool: "not found"}
			locateTools(cmd.Context(), d, &v)
			if output == "json" {
				return writeJSON(d.stdout, v)
			}
			fmt.Fprintf(d.stdout, "knit %s (commit %s, %s)\n", v.Version, v.Commit, v.Go)
			switch {
			case v.ToolBin != "":
				fmt.Fprintf(d.stdout, "tool: %s (%s)\n", v.Tool, v.ToolBin)
			case v.ToolErr != "":
				fmt.Fprintf(d.stdout, "tool: no OpenTofu or Terraform: %s\n", v.ToolErr)
			default:
				fmt.Fprintln(d.stdout, "tool: no OpenTofu or Terraform found (make tools, or --tf-binary)")
			}
			if v.KubeRunner != "" {
				fmt.Fprintf(d.stdout, "helm and manifests: %s\n", v.KubeRunner)
			} else {
				fmt.Fprintf(d.stdout, "helm and manifests: %s\n", v.KubeRunnerErr)
			}
			return nil
		},
	}
	outputFlag(cmd, &output)
	return cmd
}
