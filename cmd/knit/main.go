// Command knit is an Environment-as-Code control plane: it provisions,
// reconciles and tears down whole environments declared in one YAML file.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"knit.dev/knit/internal/cli"
)

func main() {
	os.Exit(run())
}

func run() int {
	// The first SIGINT/SIGTERM cancels ctx so the running tool is interrupted
	// gracefully; stop() restores default handling, so a second signal kills.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	defer stop()
	return cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}
