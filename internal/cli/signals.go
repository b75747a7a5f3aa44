package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"knit.dev/knit/internal/procexec"
)

// ExitInterrupted is the exit code of a knit ended by a signal it could
// not end gracefully within StopGrace (or by a second signal).
const ExitInterrupted = 130

// StopGrace is how long a knit command has to end after SIGINT or
// SIGTERM: its tools get SIGINT at once and SIGKILL to their process
// group procexec.Grace later; what is left is for recording the run as
// interrupted and releasing its lock.
const StopGrace = procexec.Grace + 5*time.Second

// Main runs knit with args, as the knit command does, and returns its exit
// code. The first SIGINT or SIGTERM cancels the command's context: running
// tools are interrupted and the run is recorded interrupted. A second
// signal, or a command still running StopGrace after the first (stuck on
// a question at the terminal, a store that does not answer), ends knit at
// once with ExitInterrupted: the next run of the environment takes over
// the lock of a knit that is gone and records its run interrupted.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return MainWith(args, stdin, stdout, stderr, nil)
}

// MainWith is Main for a binary that adds kube (knit-kube: see Kube).
func MainWith(args []string, stdin io.Reader, stdout, stderr io.Writer, kube *Kube) int {
	if len(args) == 1 && args[0] == watchdogCommand {
		return serveWatchdog(stdin, stderr)
	}
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	return runStoppable(sig, StopGrace, stderr, os.Exit, func(ctx context.Context) int {
		d := &deps{stdin: stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv, watchdog: &selfWatchdog{args: kube.self()}, kube: kube, args: args, ownProcess: true}
		defer d.watchdog.close()
		return run(ctx, d, args)
	})
}

// runStoppable runs cmd with a context cancelled by the first signal on
// sig; exit is called with ExitInterrupted on a second signal, or when cmd
// has not returned grace after the first.
func runStoppable(sig <-chan os.Signal, grace time.Duration, stderr io.Writer, exit func(int), cmd func(context.Context) int) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sig:
		case <-done:
			return
		}
		cancel()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case s := <-sig:
			fmt.Fprintf(stderr, "knit: %v again: exiting at once\n", s)
		case <-t.C:
			fmt.Fprintf(stderr, "knit: still running %s after the interrupt: exiting; the next run records this one interrupted\n", grace)
		case <-done:
			return
		}
		exit(ExitInterrupted)
	}()
	return cmd(ctx)
}
