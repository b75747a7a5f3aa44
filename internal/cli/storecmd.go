package cli

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"
)

func newStoreCmd(d *deps) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Manage where knit keeps its records",
	}
	var to string
	migrate := &cobra.Command{
		Use:   "migrate --to postgres://user@host:5432/db",
		Short: "Copy the SQLite store of the data dir into a new PostgreSQL store",
		Long: `knit store migrate copies everything the SQLite store in the data dir holds
(environments and revisions, runs and component runs, component states and
outputs, approvals, change sets, the audit trail, tokens and settings) into an
empty PostgreSQL database, in one transaction, and checks that every table
holds as many rows as the SQLite store's; on any difference nothing is
copied. The tables it does not copy are listed with why: the run queue's
(River's, knit_run_events, knit_river_clients: a SQLite store's queue lived
in knit serve's memory), the locks (none is held with knit stopped) and the
migrations' record. Sensitive outputs are sealed again with the data dir's knit.key: give
every replica that key. Stop knit serve first. The target is --to, else
--store-dsn-file, else KNIT_STORE_DSN (these keep a password out of argv).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to != "" {
				d.global.store = to
			}
			dsn, err := d.storeDSN()
			if err != nil {
				return err
			}
			if dsn == "" {
				return fmt.Errorf("no target: pass --to postgres://…, --store-dsn-file, or set KNIT_STORE_DSN")
			}
			dir, err := d.dataDir()
			if err != nil {
				return err
			}
			counts, skipped, err := migrateStore(cmd.Context(), dir, dsn)
			if err != nil {
				return err
			}
			tables := make([]string, 0, len(counts))
			for t := range counts {
				tables = append(tables, t)
			}
			sort.Strings(tables)
			for _, t := range tables {
				fmt.Fprintf(d.stdout, "%-20s %d\n", t, counts[t])
			}
			for _, t := range skipped {
				fmt.Fprintf(d.stdout, "%-20s not copied: %s\n", t[0], t[1])
			}
			fmt.Fprintf(d.stderr, "copied the store in %s into %s; every table's count matches\n", dir, storeName(dsn))
			return nil
		},
	}
	migrate.Flags().StringVar(&to, "to", "", "the PostgreSQL store to copy into (a new, empty database)")
	cmd.AddCommand(migrate)
	return cmd
}
