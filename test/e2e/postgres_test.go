package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"knit.dev/knit/internal/testtools/pgtest"
)

// TestPostgresStoreKeepsSecretsAndItsDSNPrivate runs knit on a PostgreSQL
// store (a throwaway cluster whose superuser has a password): the CLI with
// KNIT_STORE_DSN, the server with --store-dsn-file. The password never
// shows in the server's log, /metrics, the tools' environment or argv, or an
// error; the sensitive output never shows in a dump of the database or any
// file of the data dir; and the records really are in PostgreSQL.
func TestPostgresStoreKeepsSecretsAndItsDSNPrivate(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	c := pgtest.Start(t)
	dsn := c.DB(t)
	secret := "pgsecret-" + randomHex(t)
	w.env = append(without(w.env, "KNIT_STORE_DSN="), "KNIT_STORE_DSN="+dsn)
	// The secret comes from outside the environment file, which is
	// stored as written.
	w.write(map[string]string{"vault.json": `{"token": "` + secret + `"}`, "env.yaml": `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: pg}
spec:
  teamName: qa
  envName: pg
  autoApprove: true
  components:
    - name: vault
      type: script
      outputs: [{name: token, sensitive: true}]
      script: {apply: "cat ` + w.path("vault.json") + `"}
    - name: app
      type: script
      variables: [{name: token, valueFrom: vault.token}]
      script: {apply: "env | sort > ` + w.path("seen.env") + `; tr '\\0' '\\n' < /proc/$$/cmdline > ` + w.path("seen.argv") + `"}
`})
	w.ok("apply", "-f", "env.yaml")
	if _, err := os.Stat(filepath.Join(w.dataDir, "knit.db")); err == nil {
		t.Error("the data dir has a SQLite store: the records did not go to PostgreSQL")
	}
	tools := w.read("seen.env") + w.read("seen.argv")
	if strings.Contains(tools, c.Password) || strings.Contains(tools, dsn) {
		t.Errorf("a tool saw the store's connection string:\n%s", tools)
	}

	// The server, on the same database through a DSN file, serves what
	// the CLI recorded.
	token := strings.TrimSpace(w.ok("token", "create", "root", "--role", "admin").stdout)
	dsnFile := w.path("store.dsn")
	if err := os.WriteFile(dsnFile, []byte(dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.env = without(w.env, "KNIT_STORE_DSN=")
	s := w.startServerWithToken(token, "--store-dsn-file", dsnFile)
	if e, code := s.env("qa/pg"); code != http.StatusOK || e.Status != "provisioned" {
		t.Fatalf("GET qa/pg from the server on PostgreSQL: %d %+v", code, e)
	}
	metrics := s.get("/metrics")
	if !strings.Contains(metrics, "knit_") {
		t.Fatalf("/metrics has no knit metrics:\n%s", metrics)
	}
	for what, text := range map[string]string{"/metrics": metrics, "the server's log": s.log.String()} {
		if strings.Contains(text, c.Password) {
			t.Errorf("%s shows the store's password:\n%s", what, text)
		}
	}
	if !strings.Contains(s.log.String(), pgtest.DBName(t, dsn)) {
		t.Errorf("the server's log does not say which database it uses:\n%s", s.log)
	}

	// A wrong password fails with an error that does not quote it.
	bad := strings.Replace(dsn, c.Password, "wrong-"+c.Password[:8], 1)
	r := w.knitWith([]string{"KNIT_STORE_DSN=" + bad}, "status")
	if r.code == 0 || strings.Contains(r.stdout+r.stderr, "wrong-") {
		t.Errorf("knit status with a wrong password: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The secret is nowhere in clear: not in the database, not on disk.
	dump := c.Dump(t, pgtest.DBName(t, dsn))
	if !strings.Contains(string(dump), "qa/pg") {
		t.Fatal("the dump does not hold the environment: the test looks in the wrong database")
	}
	// pg_dump writes bytea as hex: look for the value in both forms.
	if strings.Contains(string(dump), secret) || strings.Contains(string(dump), hex.EncodeToString([]byte(secret))) {
		t.Error("pg_dump of the store holds the sensitive output in clear")
	}
	filepath.WalkDir(w.dataDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return err
		}
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), secret) {
			t.Errorf("%s holds the sensitive output in clear", p)
		}
		return nil
	})
}

// get reads path from the server with the admin token.
func (s *server) get(path string) string {
	s.t.Helper()
	req, _ := http.NewRequest("GET", s.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

// without is env less the variables starting with prefix.
func without(env []string, prefix string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestStoreMigrateCopiesSQLiteIntoPostgres: an environment applied on the
// SQLite store, copied by knit store migrate, is served from PostgreSQL
// with its history, outputs (a sensitive one still sealed) and tokens; a
// second migrate into the same database is refused.
func TestStoreMigrateCopiesSQLiteIntoPostgres(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.env = without(w.env, "KNIT_STORE_DSN=") // the source is SQLite
	c := pgtest.Start(t)
	dsn := c.DB(t)
	secret := "migsecret-" + randomHex(t)
	w.write(map[string]string{"vault.json": `{"token": "` + secret + `", "host": "db.internal"}`, "env.yaml": `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: mig}
spec:
  teamName: qa
  envName: mig
  autoApprove: true
  components:
    - name: vault
      type: script
      outputs: [{name: token, sensitive: true}, {name: host}]
      script: {apply: "cat ` + w.path("vault.json") + `"}
`})
	w.ok("apply", "-f", "env.yaml")
	token := strings.TrimSpace(w.ok("token", "create", "root", "--role", "admin").stdout)
	before := w.ok("history", "qa/mig").stdout

	dsnFile := w.path("store.dsn")
	if err := os.WriteFile(dsnFile, []byte(dsn), 0o600); err != nil {
		t.Fatal(err)
	}
	r := w.ok("store", "migrate", "--store-dsn-file", dsnFile)
	for _, table := range []string{"environments", "revisions", "runs", "component_runs", "outputs", "tokens", "audit_events"} {
		if !strings.Contains(r.stdout, table) {
			t.Errorf("knit store migrate does not report %s:\n%s", table, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, c.Password) {
		t.Errorf("knit store migrate shows the password:\n%s%s", r.stdout, r.stderr)
	}
	if again := w.knit("store", "migrate", "--store-dsn-file", dsnFile); again.code == 0 || !strings.Contains(again.stderr, "already holds records") {
		t.Errorf("a second migrate: exit %d\n%s", again.code, again.stderr)
	}

	// The SQLite file goes; PostgreSQL answers the same.
	if err := os.Rename(filepath.Join(w.dataDir, "knit.db"), filepath.Join(w.dataDir, "old.db")); err != nil {
		t.Fatal(err)
	}
	w.env = append(w.env, "KNIT_STORE_DSN="+dsn)
	if after := w.ok("history", "qa/mig").stdout; after != before {
		t.Errorf("history after the move:\n%s\nbefore:\n%s", after, before)
	}
	s := w.startServerWithToken(token) // the SQLite store's token works
	if e, code := s.env("qa/mig"); code != http.StatusOK || e.Status != "provisioned" {
		t.Fatalf("GET qa/mig after the move: %d %+v", code, e)
	}
	if out := w.ok("output", "qa/mig").stdout; !strings.Contains(out, "db.internal") || strings.Contains(out, secret) {
		t.Errorf("knit output after the move:\n%s", out)
	}
	dump := string(c.Dump(t, pgtest.DBName(t, dsn)))
	if strings.Contains(dump, secret) || strings.Contains(dump, hex.EncodeToString([]byte(secret))) {
		t.Error("the copied sensitive output is in clear in the database")
	}
}

// TestStoreMigrateSaysWhichTablesItDoesNotCopy is issue 36: knit store
// migrate names the tables it leaves as the store's migrations made them,
// the River run queue's among them, each with why.
func TestStoreMigrateSaysWhichTablesItDoesNotCopy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.env = without(w.env, "KNIT_STORE_DSN=") // the source is SQLite
	w.ok("token", "create", "root", "--role", "admin")
	dsnFile := w.path("store.dsn")
	if err := os.WriteFile(dsnFile, []byte(pgtest.Start(t).DB(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	r := w.ok("store", "migrate", "--store-dsn-file", dsnFile)
	for _, table := range []string{"knit_run_events", "knit_river_clients", "river_*", "locks", "schema_migrations"} {
		found := false
		for line := range strings.Lines(r.stdout) {
			if f := strings.Fields(line); len(f) > 2 && f[0] == table && f[1] == "not" && f[2] == "copied:" {
				found = true
			}
		}
		if !found {
			t.Errorf("knit store migrate does not say it leaves %s uncopied, and why:\n%s", table, r.stdout)
		}
	}
}
