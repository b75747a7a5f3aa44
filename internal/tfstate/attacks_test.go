package tfstate_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"knit.dev/knit/internal/runner"
	"knit.dev/knit/internal/runner/terraform"
	"knit.dev/knit/internal/store"
	"knit.dev/knit/internal/store/sqlite"
	"knit.dev/knit/internal/testtools/pgtest"
	"knit.dev/knit/internal/tfstate"
)

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlite.Open(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// testRun is the run the tests' grants are for; holdEnv gives it the
// environment's lock.
const testRun = "run-a"

// holdEnv has run hold team/prod's lock.
func holdEnv(t *testing.T, st store.Store, run string) {
	t.Helper()
	if _, err := st.AcquireLock(t.Context(), store.Lock{Env: "team/prod", RunID: run}, time.Hour, func(store.Lock) bool { return true }); err != nil {
		t.Fatal(err)
	}
}

// call makes one request of the protocol to srv for key with testRun's
// write grant, or the password pass when set.
func call(t *testing.T, srv *tfstate.Server, method, key, pass, query string, body []byte) (int, string) {
	t.Helper()
	g := srv.Grant(key, testRun, true)
	if pass == "" {
		pass = g["TF_HTTP_PASSWORD"]
	}
	return send(t, srv, method, key, g["TF_HTTP_USERNAME"], pass, query, body)
}

// send makes one request of the protocol with the credentials user, pass.
func send(t *testing.T, srv *tfstate.Server, method, key, user, pass, query string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.Addr()+"/state/"+key+query, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.SetBasicAuth(user, pass)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func lockBody(id string) []byte {
	return []byte(`{"ID":"` + id + `","Operation":"OperationTypeApply","Who":"a@replica-a"}`)
}

// TestProtocolRefusals: what the server refuses, on each store, changing
// nothing: no password, another state's password, a write or unlock by
// another lock than the holder's (423, naming the holder), a state above
// the limit (413, saying so), a write cut off mid-body (a tool killed
// while sending), and lock info without an ID.
func TestProtocolRefusals(t *testing.T) {
	for name, open := range map[string]func(t *testing.T) store.Store{
		"sqlite":   openSQLite,
		"postgres": func(t *testing.T) store.Store { return openPG(t, pgtest.Start(t).DB(t)) },
	} {
		t.Run(name, func(t *testing.T) {
			st := open(t)
			srv, err := tfstate.Start(st)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			srv.MaxState = 1 << 20
			holdEnv(t, st, testRun)
			const key = "team/prod/db"
			v1 := []byte(`{"serial":1}`)
			putLocked(t, srv, key, v1)
			if code, _ := call(t, srv, "GET", key, "wrong", "", nil); code != 401 {
				t.Errorf("GET with a wrong password: %d, want 401", code)
			}
			other := srv.Grant("team/prod/other", testRun, true)["TF_HTTP_PASSWORD"]
			if code, _ := call(t, srv, "POST", key, other, "", []byte("x")); code != 401 {
				t.Errorf("a write with another state's password: %d, want 401", code)
			}
			if code, body := call(t, srv, "LOCK", key, "", "", lockBody("lock-a")); code != 200 {
				t.Fatalf("LOCK: %d %s", code, body)
			}
			if code, body := call(t, srv, "LOCK", key, "", "", lockBody("lock-b")); code != http.StatusLocked || !strings.Contains(body, "lock-a") {
				t.Errorf("a second LOCK: %d %s, want 423 naming lock-a", code, body)
			}
			if code, body := call(t, srv, "POST", key, "", "?ID=lock-b", []byte(`{"serial":2}`)); code != http.StatusLocked || !strings.Contains(body, "replica-a") {
				t.Errorf("a write by another lock: %d %s, want 423 naming the holder", code, body)
			}
			if code, _ := call(t, srv, "UNLOCK", key, "", "", lockBody("lock-b")); code != http.StatusLocked {
				t.Errorf("UNLOCK with a wrong lock ID: %d, want 423", code)
			}
			if code, _ := call(t, srv, "LOCK", key, "", "", []byte(`{"Who":"x"}`)); code != 400 {
				t.Errorf("LOCK without an ID: %d, want 400", code)
			}
			if code, body := call(t, srv, "POST", key, "", "?ID=lock-a", bytes.Repeat([]byte("x"), 2<<20)); code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "limit") {
				t.Errorf("a state above the limit: %d %s, want 413 saying so", code, body)
			}
			cutOff(t, srv, key, "lock-a")
			if data, l, err := st.TFState(t.Context(), key); err != nil || !bytes.Equal(data, v1) || l.ID != "lock-a" {
				t.Errorf("after the refusals: state %q lock %q, %v; want %q locked by lock-a", data, l.ID, err, v1)
			}
			if code, _ := call(t, srv, "UNLOCK", key, "", "", lockBody("lock-a")); code != 200 {
				t.Errorf("UNLOCK by the holder: %d", code)
			}
			if code, body := call(t, srv, "GET", key, "", "", nil); code != 200 || body != string(v1) {
				t.Errorf("GET: %d %q", code, body)
			}
		})
	}
}

// cutOff sends a write of a large state by the lock's holder and closes
// the connection halfway through the body, as a tool killed mid-write
// would: the server stores nothing of it.
func cutOff(t *testing.T, srv *tfstate.Server, key, lockID string) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.Addr(), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", srv.Addr()+"/state/"+key+"?ID="+lockID, nil)
	g := srv.Grant(key, testRun, true)
	req.SetBasicAuth(g["TF_HTTP_USERNAME"], g["TF_HTTP_PASSWORD"])
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\nContent-Length: 100000\r\n\r\n", req.URL.RequestURI(), req.Header.Get("Authorization"))
	conn.Write(bytes.Repeat([]byte("y"), 50000))
	conn.Close()
	// The server has read what there was once a request after it is served.
	if code, _ := call(t, srv, "GET", key, "", "", nil); code != 200 {
		t.Errorf("GET after a cut-off write: %d", code)
	}
}

// TestADeadKnitsLockIsTakenOver: a state lock taken through a knit
// process of this machine that is gone (killed with its tools; a new run
// ended what they left) is taken over by the next tool's LOCK; a lock of a
// live process, or of another machine, is not.
func TestADeadKnitsLockIsTakenOver(t *testing.T) {
	st := openSQLite(t)
	srv, err := tfstate.Start(st)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	holdEnv(t, st, testRun)
	const key = "team/prod/db"
	for _, tc := range []struct {
		holder store.TFLock
		taken  bool
	}{
		{store.TFLock{ID: "live", Host: host, PID: os.Getppid()}, false},
		{store.TFLock{ID: "elsewhere", Host: "other-" + host, PID: dead.Process.Pid}, false},
		{store.TFLock{ID: "dead", Host: host, PID: dead.Process.Pid}, true},
	} {
		must(t, st.LockTFState(t.Context(), key, tc.holder, nil))
		code, body := call(t, srv, "LOCK", key, "", "", lockBody("next"))
		if taken := code == 200; taken != tc.taken {
			t.Errorf("LOCK over %s's lock: %d %s; taken %v, want %v", tc.holder.ID, code, body, taken, tc.taken)
		}
		_, l, _ := st.TFState(t.Context(), key)
		must(t, st.UnlockTFState(t.Context(), key, l.ID))
	}
}

// putLocked writes data as key's state as a tool does: LOCK, POST with
// the lock's ID, UNLOCK.
func putLocked(t *testing.T, srv *tfstate.Server, key string, data []byte) {
	t.Helper()
	if code, body := call(t, srv, "LOCK", key, "", "", lockBody("put")); code != 200 {
		t.Fatalf("LOCK to write: %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", key, "", "?ID=put", data); code != 200 {
		t.Fatalf("write of %d bytes: %d %s", len(data), code, body)
	}
	if code, body := call(t, srv, "UNLOCK", key, "", "", lockBody("put")); code != 200 {
		t.Fatalf("UNLOCK after the write: %d %s", code, body)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestHugeState: a 64 MiB state goes through the server and the store and
// back byte for byte.
func TestHugeState(t *testing.T) {
	st := openPG(t, pgtest.Start(t).DB(t))
	srv, err := tfstate.Start(st)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	holdEnv(t, st, testRun)
	const key = "team/prod/big"
	huge := append([]byte(`{"serial":1,"resources":[`), bytes.Repeat([]byte(`{"resource":"0123456789abcdef"},`), 2<<20)...) // 64 MiB
	huge = append(huge, `{}]}`...)
	putLocked(t, srv, key, huge)
	code, body := call(t, srv, "GET", key, "", "", nil)
	if code != 200 || body != string(huge) {
		t.Errorf("read back: %d, %d bytes (want %d)", code, len(body), len(huge))
	}
}

// blockingModule's apply holds the state lock inside a provisioner that
// waits for the file go; it first writes its tool's PID and started.
var blockingModule = map[string]string{
	"mod/main.tf": `
variable "password" {
  type      = string
  sensitive = true
}
variable "n" { type = number }
variable "dir" { type = string }
resource "terraform_data" "db" {
  input            = { password = var.password, n = var.n }
  triggers_replace = var.n
  provisioner "local-exec" {
    command = "echo $PPID > ${var.dir}/pid; touch ${var.dir}/started; while [ -d ${var.dir} ] && [ ! -f ${var.dir}/go ]; do sleep 0.1; done"
  }
}
`,
}

// waitFile waits for p to exist (the failure guard is generous: this is
// an event, not a duration under test).
func waitFile(t *testing.T, p string, done <-chan error) {
	t.Helper()
	deadline := time.After(5 * time.Minute)
	for {
		if _, err := os.Stat(p); err == nil {
			return
		}
		select {
		case err := <-done:
			t.Fatalf("the apply ended before %s appeared: %v", p, err)
		case <-deadline:
			t.Fatalf("%s never appeared", p)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// killTool kills (-9) the tool whose blockingModule provisioner wrote its
// PID into dir, and checks that the apply (done) failed.
func killTool(t *testing.T, dir string, done <-chan error) {
	t.Helper()
	pidText, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(pidText)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Fatal("A's apply succeeded though its tool was killed")
	}
}

// TestTwoAppliesOnOneState: while replica A's apply holds the component's
// state lock, replica B's apply of the same state fails with a clear
// error naming the holder and changes nothing; once A is done, B finds
// A's state. Then A's tool is killed (-9) while holding the lock: the
// state in the store stays whole (a JSON document the tool can read), and
// B is refused, naming the dead lock, until the lock is released by its ID
// (a wrong ID does not release it).
func TestTwoAppliesOnOneState(t *testing.T) {
	pg := pgtest.Start(t)
	dsn := pg.DB(t)
	env := environment(t, blockingModule)
	a := newReplica(t, openPG(t, dsn), env)
	b := newReplica(t, openPG(t, dsn), env)
	ctx := context.Background()
	dir := t.TempDir()
	in := func(n int) runner.Inputs { return runner.Inputs{"password": secret, "n": n, "dir": dir} }

	done := make(chan error, 1)
	go func() { _, _, err := a.r.PlanApply(ctx, a.c, in(1)); done <- err }()
	waitFile(t, filepath.Join(dir, "started"), done)
	_, _, err := b.r.PlanApply(ctx, b.c, in(1))
	var locked *terraform.StateLockedError
	if !errors.As(err, &locked) || !strings.Contains(err.Error(), "state is locked") {
		t.Fatalf("B's apply while A holds the lock: %v, want a StateLockedError\n%s", err, b.log)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("A's apply: %v\n%s", err, a.log)
	}
	p, err := b.r.Plan(ctx, b.c, in(1), runner.PlanOptions{})
	if err != nil || p.HasChanges() {
		t.Fatalf("B's plan after A's apply: %+v, %v; want no changes\n%s", p, err, b.log)
	}

	// kill -9 of A's tool mid-apply, lock held.
	for _, f := range []string{"go", "started", "pid"} {
		os.Remove(filepath.Join(dir, f))
	}
	t.Cleanup(func() { os.WriteFile(filepath.Join(dir, "go"), nil, 0o600) }) // ends the orphaned provisioner
	go func() { _, _, err := a.r.PlanApply(ctx, a.c, in(2)); done <- err }()
	waitFile(t, filepath.Join(dir, "started"), done)
	killTool(t, dir, done)
	data, l, err := a.st.TFState(ctx, "team/prod/db")
	if err != nil || !json.Valid(data) || l.ID == "" {
		t.Fatalf("state after the kill: %d bytes, valid JSON %v, lock %q, %v; want whole, locked", len(data), json.Valid(data), l.ID, err)
	}
	if _, _, err := b.r.PlanApply(ctx, b.c, in(2)); !errors.As(err, &locked) || locked.ID != l.ID || !strings.Contains(err.Error(), "knit's store") {
		t.Fatalf("B after A's tool died: %v, want the dead lock %s named, and where it is", err, l.ID)
	}
	var le *store.TFLockedError
	if err := b.st.UnlockTFState(ctx, "team/prod/db", "not-"+l.ID); !errors.As(err, &le) {
		t.Fatalf("unlock with a wrong ID: %v, want TFLockedError", err)
	}
	if err := b.st.UnlockTFState(ctx, "team/prod/db", l.ID); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "go"), nil, 0o600)
	if _, _, err := b.r.PlanApply(ctx, b.c, in(2)); err != nil {
		t.Fatalf("B once the dead lock is released: %v\n%s", err, b.log)
	}
}
