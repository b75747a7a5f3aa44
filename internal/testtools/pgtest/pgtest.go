// Package pgtest starts throwaway PostgreSQL clusters for tests: Debian's
// postgresql binaries (initdb, pg_ctl), a cluster in a temporary folder
// owned by an unprivileged user, listening on a random loopback port with
// its unix socket inside that folder, stopped and removed when the test
// ends. Each test takes a database of its own from Cluster.DB. Import it
// from _test files only.
//
// Missing binaries skip the test with a message naming `make tools`, except
// when CI=true or KNIT_REQUIRE_TOOLS=1 (as `make test` sets): then they
// fail it, as package testtools does for the other tools.
package pgtest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"knit.dev/knit/internal/testtools"
)

// Superuser is the cluster's superuser; its password is random per cluster.
const Superuser = "knit"

// Cluster is a running PostgreSQL cluster of one test.
type Cluster struct {
	// Dir holds the cluster's data (Dir/data) and its unix socket.
	Dir  string
	Port int
	// Password is the superuser's, required on the TCP port.
	Password string
	bin      string
	cred     *syscall.Credential
	opts     string // the server options it was started with
	dbs      atomic.Int64
}

// BinDir finds the folder of Debian's postgresql binaries: the newest
// /usr/lib/postgresql/*/bin holding initdb, else the folder of an initdb on
// PATH. It returns "" when there is none.
func BinDir() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "pg_ctl")) {
			return d
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if d := filepath.Dir(p); isExec(filepath.Join(d, "pg_ctl")) {
			return d
		}
	}
	return ""
}

// version is the major version in /usr/lib/postgresql/N/bin.
func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// Start starts a cluster for t and stops it when t ends. It skips (or, when
// tools are required, fails) t when the binaries are missing. Run as root,
// the cluster runs as the postgres user (initdb refuses root).
func Start(t testing.TB) *Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping a test that runs PostgreSQL")
	}
	bin := BinDir()
	if bin == "" {
		msg := "PostgreSQL (initdb, pg_ctl) not found: run make tools (it installs Debian's postgresql package)"
		if testtools.Required() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	c := &Cluster{bin: bin}
	dir, err := os.MkdirTemp("", "knit-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c.Dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		c.cred = postgresUser(t)
		if err := os.Chown(dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	c.Password = testtools.RandomHex(t)
	pwfile := filepath.Join(dir, "pwfile")
	if err := os.WriteFile(pwfile, []byte(c.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.chown(t, pwfile)
	// Trust on the socket (only the cluster's user reaches its folder);
	// a password on the TCP port, as a real server asks.
	c.run(t, "initdb", "-D", c.data(), "-U", Superuser, "--pwfile", pwfile, "-A", "trust", "--auth-host=scram-sha-256",
		"--no-sync", "-E", "UTF8", "--locale=C")
	os.Remove(pwfile)
	// A port taken between the probe and the start fails pg_ctl: try again.
	for attempt := 0; ; attempt++ {
		c.Port = testtools.FreePort(t)
		opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200",
			c.Port, dir)
		out, err := c.cmd("pg_ctl", "-D", c.data(), "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "120", "start").CombinedOutput()
		if err == nil {
			c.opts = opts
			break
		}
		if attempt == 2 {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
		}
	}
	t.Cleanup(func() {
		if out, err := c.cmd("pg_ctl", "-D", c.data(), "-m", "immediate", "-w", "stop").CombinedOutput(); err != nil {
			t.Errorf("pg_ctl stop: %v\n%s", err, out)
		}
	})
	return c
}

// Stop stops the cluster (an outage: every connection is cut), as
// pg_ctl stop -m fast does; StartAgain ends it.
func (c *Cluster) Stop(t testing.TB) {
	t.Helper()
	if out, err := c.cmd("pg_ctl", "-D", c.data(), "-m", "fast", "-w", "stop").CombinedOutput(); err != nil {
		t.Fatalf("pg_ctl stop: %v\n%s", err, out)
	}
}

// StartAgain starts a stopped cluster on its port.
func (c *Cluster) StartAgain(t testing.TB) {
	t.Helper()
	if out, err := c.cmd("pg_ctl", "-D", c.data(), "-o", c.opts, "-l", filepath.Join(c.Dir, "log"), "-w", "-t", "120", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(c.Dir, "log"))
		t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
	}
}

// DB creates a database for t and returns its DSN (a postgres:// URL with
// the superuser's password), dropping the database when t ends.
func (c *Cluster) DB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("knit_%d", c.dbs.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	return c.DSN(name)
}

// DSN is the URL of database db on the cluster's TCP port.
func (c *Cluster) DSN(db string) string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(Superuser, c.Password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port)), Path: "/" + db, RawQuery: "sslmode=disable"}
	return u.String()
}

// Dump is pg_dump's plain-text dump of database db, for tests that look
// for what must never be stored in clear.
func (c *Cluster) Dump(t testing.TB, db string) []byte {
	t.Helper()
	cmd := c.cmd("pg_dump", "-h", c.Dir, "-p", strconv.Itoa(c.Port), "-U", Superuser, "--no-owner", db)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pg_dump %s: %v", db, err)
	}
	return out
}

// DBName is the database a DSN made by DB names.
func DBName(t testing.TB, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

func (c *Cluster) data() string { return filepath.Join(c.Dir, "data") }

// cmd is the binary name of the cluster's folder, run as the cluster's user.
func (c *Cluster) cmd(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Dir = c.Dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C", "TZ=UTC", "PGPASSFILE=/dev/null", "HOME=" + c.Dir}
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	return cmd
}

func (c *Cluster) run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := c.cmd(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
}

func (c *Cluster) chown(t testing.TB, p string) {
	t.Helper()
	if c.cred == nil {
		return
	}
	if err := os.Chown(p, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
		t.Fatal(err)
	}
}

// postgresUser is the credential of the postgres user (Debian's package
// creates it), for a test run as root.
func postgresUser(t testing.TB) *syscall.Credential {
	t.Helper()
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root, and no postgres user to run PostgreSQL as (initdb refuses root): %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}
