package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"knit.dev/knit/internal/knit"
	"knit.dev/knit/internal/view"
)

func newTokenCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke the API tokens of knit serve",
		Long: `Tokens let people and CI call knit serve. A token has a role: viewer
(read), operator (runs and approvals) or admin (tokens, unlocking, revealing
secrets), and may be limited to teams. Only a hash is stored: the secret is
printed once, on the last line of knit token create's output.`,
	}
	var role, output string
	var teams []string
	create := &cobra.Command{
		Use:   "create NAME --role viewer|operator|admin [--team T]...",
		Short: "Create a token and print its secret once, on the last line",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withKnit(cmd.Context(), "text", func(k *knit.Knit) error {
				secret, t, err := knit.NewCreateToken(k, args[0], role, teams, d.actor()).Run(cmd.Context())
				if err != nil {
					return err
				}
				scope := "every team"
				if len(t.Teams) > 0 {
					scope = "teams " + strings.Join(t.Teams, ", ")
				}
				fmt.Fprintf(d.stderr, "token %s: %s of %s; store it now, it cannot be shown again\n", t.Name, t.Role, scope)
				fmt.Fprintln(d.stdout, secret)
				return nil
			})
		},
	}
	create.Flags().StringVar(&role, "role", "", "viewer, operator or admin")
	create.Flags().StringArrayVar(&teams, "team", nil, "limit the token to this team's environments (repeatable)")
	_ = create.MarkFlagRequired("role")
	list := &cobra.Command{
		Use:   "list",
		Short: "List tokens (names, roles, teams; never secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return d.withKnit(cmd.Context(), output, func(k *knit.Knit) error {
				ts, err := knit.NewRecords(k).Tokens(cmd.Context())
				if err != nil {
					return err
				}
				return render(d.stdout, output, ts, printTokens)
			})
		},
	}
	outputFlag(list, &output)
	revoke := &cobra.Command{
		Use:   "revoke NAME",
		Short: "Revoke a token at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return d.withKnit(cmd.Context(), "text", func(k *knit.Knit) error {
				if err := knit.NewRevokeToken(k, args[0], d.actor()).Run(cmd.Context()); err != nil {
					return err
				}
				fmt.Fprintf(d.stderr, "token %s revoked\n", args[0])
				return nil
			})
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func printTokens(w io.Writer, ts []view.Token) {
	fmt.Fprintf(w, "%-24s %-9s %-24s %-8s %s\n", "NAME", "ROLE", "TEAMS", "STATE", "CREATED")
	for _, t := range ts {
		teams, state := "*", "live"
		if len(t.Teams) > 0 {
			teams = strings.Join(t.Teams, ",")
		}
		if !t.RevokedAt.IsZero() {
			state = "revoked"
		}
		fmt.Fprintf(w, "%-24s %-9s %-24s %-8s %s by %s\n", t.Name, t.Role, teams, state, ago(t.CreatedAt)+" ago", orDash(t.CreatedBy))
	}
}
