//go:build unix

package procexec

import (
	"bufio"
	"io"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Monotonic is the system's monotonic clock (CLOCK_MONOTONIC): the same in
// every process of the machine, and running on while a process is stopped.
func Monotonic() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) // never fails for this clock
	return time.Duration(ts.Nano())
}

// watchdogWorks says whether StartWatchdog starts one here.
const watchdogWorks = true

func watchdogAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// watchPoll is how often the watchdog looks at its deadlines.
const watchPoll = 50 * time.Millisecond

// watchedRun is what the watchdog knows of one run.
type watchedRun struct {
	deadline, grace time.Duration
	groups          map[int]bool
}

// watch is the watchdog's state.
type watch struct {
	mu    sync.Mutex
	runs  map[string]*watchedRun
	group map[int]string        // pgid → its run
	dying map[int]time.Duration // pgid → when it gets SIGKILL
	eof   bool
}

// ServeWatchdog is the watchdog process (see Watchdog): it reads the
// protocol from r and enforces the deadlines until r ends and none is
// left. SIGINT and SIGTERM do not stop it.
func ServeWatchdog(r io.Reader) error {
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	w := &watch{runs: map[string]*watchedRun{}, group: map[int]string{}, dying: map[int]time.Duration{}}
	go w.read(r)
	for {
		time.Sleep(watchPoll)
		if w.enforce(Monotonic()) {
			return nil
		}
	}
}

func (w *watch) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		w.apply(strings.Fields(sc.Text()))
	}
	w.mu.Lock()
	w.eof = true
	w.mu.Unlock()
}

// apply takes one message in.
func (w *watch) apply(f []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	num := func(i int) int64 {
		if i >= len(f) {
			return -1
		}
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
	switch {
	case len(f) == 4 && f[0] == "lease" && num(2) >= 0 && num(3) >= 0:
		wr := w.run(f[1])
		wr.deadline, wr.grace = time.Duration(num(2)), time.Duration(num(3))
	case len(f) == 3 && f[0] == "group" && num(2) > 0:
		pgid := int(num(2))
		w.run(f[1]).groups[pgid] = true
		w.group[pgid] = f[1]
	case len(f) == 2 && f[0] == "ended" && num(1) > 0:
		pgid := int(num(1))
		if wr := w.runs[w.group[pgid]]; wr != nil {
			delete(wr.groups, pgid)
		}
		delete(w.group, pgid)
	case len(f) == 2 && f[0] == "release":
		if wr := w.runs[f[1]]; wr != nil && len(wr.groups) == 0 {
			delete(w.runs, f[1])
		}
	}
}

// run is the record of run, made when first named. A run named before its
// lease has none: its tools are left alone until it has one.
func (w *watch) run(run string) *watchedRun {
	wr := w.runs[run]
	if wr == nil {
		wr = &watchedRun{deadline: -1, groups: map[int]bool{}}
		w.runs[run] = wr
	}
	return wr
}

// enforce interrupts the groups of runs whose deadline has passed and kills
// those whose grace is over; it reports whether the watchdog may exit.
func (w *watch) enforce(now time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	// A run past its deadline stays known until released: a tool it
	// starts after that is ended at once.
	for _, wr := range w.runs {
		if wr.deadline < 0 || now < wr.deadline {
			continue
		}
		for pgid := range wr.groups {
			_ = syscall.Kill(-pgid, syscall.SIGINT)
			w.dying[pgid] = now + wr.grace
			delete(w.group, pgid)
			delete(wr.groups, pgid)
		}
	}
	for pgid, at := range w.dying {
		switch {
		case !signalable(-pgid):
			delete(w.dying, pgid)
		case now >= at:
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			delete(w.dying, pgid)
		}
	}
	if !w.eof || len(w.dying) > 0 {
		return false
	}
	for _, wr := range w.runs {
		if len(wr.groups) > 0 && wr.deadline >= 0 {
			return false
		}
	}
	return true
}
