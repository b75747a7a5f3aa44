package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The store's connection string comes from --store, else the file
// --store-dsn-file names, else KNIT_STORE_DSN; knit.yaml's store keys fill
// in for flags not given; a value that is not a PostgreSQL URL is an error
// that names where it came from and never quotes it.
func TestStoreDSN(t *testing.T) {
	file := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(file, []byte("postgres://u:fromfile@h/db\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"KNIT_STORE_DSN": "postgres://u:fromenv@h/db"}
	cases := []struct {
		name            string
		flag, flagFile  string
		env             map[string]string
		cfg             serveConfig
		want, wantError string
	}{
		{name: "none: SQLite"},
		{name: "env", env: env, want: "postgres://u:fromenv@h/db"},
		{name: "file over env", flagFile: file, env: env, want: "postgres://u:fromfile@h/db"},
		{name: "flag over env", flag: "postgresql://u:flag@h/db", env: env, want: "postgresql://u:flag@h/db"},
		{name: "config file", cfg: serveConfig{StoreDSNFile: file}, want: "postgres://u:fromfile@h/db"},
		{name: "flag over config file", flag: "postgres://u:flag@h/db", cfg: serveConfig{Store: "postgres://u:cfg@h/db"}, want: "postgres://u:flag@h/db"},
		{name: "both flags", flag: "postgres://h/db", flagFile: file, wantError: "both name the store"},
		{name: "not postgres", env: map[string]string{"KNIT_STORE_DSN": "mysql://u:hunter2@h/db"}, wantError: "KNIT_STORE_DSN: the store must be a PostgreSQL URL"},
		{name: "missing file", flagFile: file + ".none", wantError: "--store-dsn-file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &deps{getenv: func(k string) string { return c.env[k] }}
			d.global.store, d.global.storeDSNFile = c.flag, c.flagFile
			d.useStoreOf(c.cfg)
			got, err := d.storeDSN()
			switch {
			case c.wantError != "":
				if err == nil || !strings.Contains(err.Error(), c.wantError) || strings.Contains(err.Error(), "hunter2") {
					t.Errorf("err = %v, want one saying %q and no password", err, c.wantError)
				}
			case err != nil || got != c.want:
				t.Errorf("storeDSN = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}
