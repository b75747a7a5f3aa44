package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// groupSampler watches the process list for processes whose environment
// holds a marker (a script component's input: every process of the tool's
// group inherits it) and remembers the most process groups it ever saw
// running the tool at once.
type groupSampler struct {
	marker []byte
	stop   chan struct{}
	done   chan struct{}

	mu     sync.Mutex
	most   int
	groups map[int]bool // every group seen
}

func sampleGroups(marker string) *groupSampler {
	g := &groupSampler{marker: []byte(marker), stop: make(chan struct{}), done: make(chan struct{}), groups: map[int]bool{}}
	go func() {
		defer close(g.done)
		for {
			now := g.sample()
			g.mu.Lock()
			g.most = max(g.most, len(now))
			for pg := range now {
				g.groups[pg] = true
			}
			g.mu.Unlock()
			select {
			case <-g.stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return g
}

// sample returns the groups of the live (not zombie) processes with the marker.
func (g *groupSampler) sample() map[int]bool {
	out := map[int]bool{}
	names, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range names {
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil || !bytes.Contains(env, g.marker) {
			continue
		}
		if pg, ok := liveGroup(dir); ok {
			out[pg] = true
		}
	}
	return out
}

// liveGroup returns the process group of the process whose /proc folder is
// dir, unless it is gone or a zombie.
func liveGroup(dir string) (int, bool) {
	stat, err := os.ReadFile(filepath.Join(dir, "stat"))
	i := bytes.LastIndexByte(stat, ')')
	if err != nil || i < 0 {
		return 0, false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 3 || f[0] == "Z" {
		return 0, false
	}
	pg, err := strconv.Atoi(f[2])
	return pg, err == nil
}

// now returns the groups running the tool at this moment.
func (g *groupSampler) now() map[int]bool { return g.sample() }

func (g *groupSampler) finish() (most int, seen int) {
	close(g.stop)
	<-g.done
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.most, len(g.groups)
}

// longScriptEnv is environment qa/name with one script component that runs
// for about ten seconds, ignores SIGINT (the signal the kernel sends it
// when knit dies), carries marker in its environment (sampleGroups finds
// it), and logs its start and end to events.
func longScriptEnv(name, marker, events string) string {
	return `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: ` + name + `}
spec:
  teamName: qa
  envName: ` + name + `
  autoApprove: true
  components:
    - name: job
      type: script
      variables: [{name: marker, value: ` + marker + `}]
      script:
        apply: >-
          trap '' INT;
          echo "start $$" >> ` + events + `;
          n=0; while [ $n -lt 40 ]; do sleep 0.25; n=$((n+1)); done;
          echo "end $$" >> ` + events + `;
          echo '{}'
`
}

// TestServerKilledMidScriptEndsTheOldToolBeforeRunningItAgain: kill -9 of
// knit serve while a long script runs leaves the script running (it
// ignores the SIGINT the kernel sends when knit dies). The restarted server
// ends that process group before it applies the component again: at no
// moment do two copies run, and only the second copy finishes.
func TestServerKilledMidScriptEndsTheOldToolBeforeRunningItAgain(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	events := w.path("events.log")
	marker := fmt.Sprintf("knit-e2e-%d", time.Now().UnixNano())
	env := longScriptEnv("long", marker, events)
	repo := newGitRepo(t, map[string]string{"envs/long.yaml": env})
	args := []string{"--git-url", "file://" + repo.bare, "--git-path", "envs/", "--git-poll", "200ms"}
	sampler := sampleGroups("KNIT_VAR_MARKER=" + marker)
	s := w.startServer(args...)
	var first map[int]bool
	s.eventually("the script runs", func() bool { first = sampler.now(); return len(first) == 1 })
	w.waitToolRecorded("qa/long")
	if err := s.cmd.Process.Kill(); err != nil { // kill -9, mid-apply
		t.Fatal(err)
	}
	s.cmd.Wait()
	if now := sampler.now(); len(now) != 1 {
		t.Fatalf("after kill -9 of the server the script's groups are %v, want the one left running (%v)", now, first)
	}

	s2 := w.startServerWithToken(s.token, args...)
	s2.eventually("the environment is reconciled to completion", func() bool {
		e, _ := s2.env("qa/long")
		return e.Status == "provisioned"
	})
	most, seen := sampler.finish()
	for pg := range first {
		if len(sampler.sample()) != 0 || groupAlive(pg) {
			t.Errorf("the first script's process group %d is still there", pg)
		}
	}
	if most != 1 || seen != 2 {
		t.Errorf("copies of the script at once: at most %d (want 1); groups that ran it: %d (want 2)\nserver log:\n%s", most, seen, s2.log)
	}
	log, _ := os.ReadFile(events)
	if starts, ends := strings.Count(string(log), "start "), strings.Count(string(log), "end "); starts != 2 || ends != 1 {
		t.Errorf("the script started %d times and finished %d times, want 2 and 1:\n%s", starts, ends, log)
	}
}

// waitToolRecorded waits until knit has recorded a tool of env as
// running. The tool starts a moment before its record is written: a knit
// killed in that moment leaves a tool no later run knows of, which is not
// what the tests that kill knit mid-tool look at (and, on a loaded
// machine, they hit that moment).
func (w *world) waitToolRecorded(env string) {
	w.t.Helper()
	st := w.openStore()
	waitFor(w.t, 2*time.Minute, func() bool {
		ps, err := st.ListToolProcesses(context.Background(), env)
		return err == nil && len(ps) > 0
	})
}

// groupAlive reports whether a live process of group pgid is left.
func groupAlive(pgid int) bool {
	names, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range names {
		if pg, ok := liveGroup(dir); ok && pg == pgid {
			return true
		}
	}
	return false
}

// hangingReceiver accepts connections on loopback and reads requests but
// never answers; got receives a value for each connection that sent bytes.
func hangingReceiver(t *testing.T) (url string, got <-chan struct{}) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan struct{}, 100)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				buf := make([]byte, 64<<10)
				if n, _ := c.Read(buf); n > 0 {
					ch <- struct{}{}
				}
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String() + "/hook", ch
}

// notifyConfig writes a knit serve config with one webhook sink "ops".
func (w *world) notifyConfig(name, url string) string {
	w.write(map[string]string{"hook-secret": "s3cret\n", name: `notifications:
  - {name: ops, kind: webhook, url: "` + url + `", secretFile: ` + w.path("hook-secret") + `}
`})
	return w.path(name)
}

// TestShutdownWithAHangingReceiverIsBoundedAndTheEventSurvives: SIGTERM
// while a notification receiver hangs ends knit serve within 10 s (one
// short flush, no retry schedule), and the next server, with a receiver
// that answers, delivers the event.
func TestShutdownWithAHangingReceiverIsBoundedAndTheEventSurvives(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	env := `apiVersion: knit.dev/v1
kind: Environment
metadata: {name: notified}
spec:
  teamName: qa
  envName: notified
  autoApprove: true
  components:
    - {name: job, type: script, script: {apply: "echo '{}'"}}
`
	repo := newGitRepo(t, map[string]string{"envs/notified.yaml": env})
	args := []string{"--git-url", "file://" + repo.bare, "--git-path", "envs/", "--git-poll", "200ms"}
	hangURL, hung := hangingReceiver(t)
	s := w.startServer(append(args, "--config", w.notifyConfig("hang.yaml", hangURL))...)
	select {
	case <-hung: // the run's event is being delivered, and hangs
	case <-time.After(2 * time.Minute):
		t.Fatalf("the receiver got no event\nserver log:\n%s", s.log)
	}
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("knit serve after SIGTERM: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("knit serve still runs 10 s after SIGTERM with a hanging receiver\nserver log:\n%s", s.log)
	}

	var mu sync.Mutex
	var bodies []map[string]any
	working := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		var b map[string]any
		_ = json.NewDecoder(r.Body).Decode(&b)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
	}))
	t.Cleanup(working.Close)
	s2 := w.startServerWithToken(s.token, append(args, "--config", w.notifyConfig("working.yaml", working.URL+"/hook"))...)
	s2.eventually("the kept event is delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(bodies) > 0
	})
	mu.Lock()
	defer mu.Unlock()
	b := bodies[0]
	if b["kind"] != "run.succeeded" || b["env"] != "qa/notified" || b["seq"] != 1.0 {
		t.Errorf("after the restart the receiver got %v, want run.succeeded of qa/notified, seq 1", b)
	}
}

// TestCLIKilledMidScriptEndsTheOldToolBeforeRunningItAgain: the same
// recovery at the start of a CLI run: kill -9 of knit apply leaves the
// script running; the next knit apply of the environment ends it first.
func TestCLIKilledMidScriptEndsTheOldToolBeforeRunningItAgain(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	events := w.path("events.log")
	marker := fmt.Sprintf("knit-e2e-cli-%d", time.Now().UnixNano())
	w.write(map[string]string{"env.yaml": longScriptEnv("cli", marker, events)})
	sampler := sampleGroups("KNIT_VAR_MARKER=" + marker)
	cmd := exec.Command(knitBin, "apply", "-f", "env.yaml")
	cmd.Dir, cmd.Env = w.dir, w.env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Minute, func() bool { return len(sampler.now()) == 1 })
	w.waitToolRecorded("qa/cli")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	w.ok("apply", "-f", "env.yaml")
	most, seen := sampler.finish()
	if most != 1 || seen != 2 || len(sampler.sample()) != 0 {
		t.Errorf("copies of the script at once: at most %d (want 1); groups that ran it: %d (want 2); left: %v",
			most, seen, sampler.sample())
	}
	log, _ := os.ReadFile(events)
	if starts, ends := strings.Count(string(log), "start "), strings.Count(string(log), "end "); starts != 2 || ends != 1 {
		t.Errorf("the script started %d times and finished %d times, want 2 and 1:\n%s", starts, ends, log)
	}
}
