package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/spec"
	"knit.dev/knit/internal/view"
)

func newTTLCmd(d *deps) *cobra.Command {
	var output, extend string
	cmd := &cobra.Command{
		Use:   "ttl ENV",
		Short: "Show an ephemeral environment's expiry (spec.ttl), or move it later with --extend",
		Long: `An environment with spec.ttl is torn down by knit serve once its expiry passes
(its first apply plus the ttl). knit ttl ENV shows the expiry; --extend 24h moves it
24 hours later (an expiry already past: 24 hours from now). On a server (--server)
extending needs an operator token of the environment's team; it is audited.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var by time.Duration
			if extend != "" {
				var err error
				if by, err = spec.ParseTTL(extend); err != nil {
					return fmt.Errorf("--extend: %w; write a duration such as 24h", err)
				}
			}
			return d.withBackend(cmd.Context(), output, func(b backend) error {
				if by > 0 {
					x, err := b.ExtendTTL(cmd.Context(), args[0], by, d.actor())
					if err != nil {
						return err
					}
					return render(d.stdout, output, x, printExpiry)
				}
				v, err := b.Environment(cmd.Context(), args[0])
				if err != nil {
					return err
				}
				if v.ExpiresAt.IsZero() {
					return fmt.Errorf("%s has no expiry: set spec.ttl (e.g. ttl: 72h) in its file and apply it", v.ID)
				}
				return render(d.stdout, output, view.Expiry{Env: v.ID, ExpiresAt: v.ExpiresAt}, printExpiry)
			})
		},
	}
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&extend, "extend", "", "move the expiry this much later (e.g. 24h)")
	return cmd
}

func printExpiry(w io.Writer, x view.Expiry) {
	fmt.Fprintf(w, "%s expires at %s (%s)\n", x.Env, x.ExpiresAt.Local().Format(time.DateTime), until(x.ExpiresAt))
}

// until says how far off t is: "in 3h", or "expired 2m ago".
func until(t time.Time) string {
	if time.Until(t) <= 0 {
		return "expired " + ago(t) + " ago"
	}
	return "in " + (time.Until(t) + time.Second - 1).Truncate(time.Second).String()
}
