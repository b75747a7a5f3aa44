// Command knit is an Environment-as-Code control plane: it provisions,
// reconciles and tears down whole environments declared in one YAML file.
package main

import (
	"os"

	"knit.dev/knit/internal/cli"
)

func main() {
	// cli.Main handles SIGINT and SIGTERM: the tools are interrupted, the
	// run recorded, and knit ends within cli.StopGrace whatever it does.
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
