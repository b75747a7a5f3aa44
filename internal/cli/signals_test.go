package cli

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestACommandThatIgnoresTheInterruptIsEndedAfterTheGrace: whatever a
// command is stuck on, a signal ends knit: the command's context is
// cancelled at once, and knit exits when it is still running after the
// grace.
func TestACommandThatIgnoresTheInterruptIsEndedAfterTheGrace(t *testing.T) {
	sig := make(chan os.Signal, 1)
	exited := make(chan int, 1)
	canceled := make(chan struct{})
	var stderr strings.Builder
	go runStoppable(sig, time.Millisecond, &stderr, func(code int) { exited <- code }, func(ctx context.Context) int {
		sig <- syscall.SIGTERM
		<-ctx.Done()
		close(canceled)
		select {} // stuck, as a store that never answers
	})
	<-canceled
	if code := <-exited; code != ExitInterrupted {
		t.Fatalf("exit %d, want %d", code, ExitInterrupted)
	}
}

func TestASecondSignalEndsKnitAtOnce(t *testing.T) {
	sig := make(chan os.Signal, 2)
	exited := make(chan int, 1)
	var stderr strings.Builder
	go runStoppable(sig, time.Hour, &stderr, func(code int) { exited <- code }, func(ctx context.Context) int {
		sig <- syscall.SIGINT
		<-ctx.Done()
		sig <- syscall.SIGINT
		select {}
	})
	if code := <-exited; code != ExitInterrupted {
		t.Fatalf("exit %d", code)
	}
}

func TestACommandThatEndsInTimeKeepsItsExitCode(t *testing.T) {
	sig := make(chan os.Signal, 1)
	code := runStoppable(sig, time.Hour, &strings.Builder{}, func(int) { t.Error("exit called") }, func(ctx context.Context) int {
		sig <- syscall.SIGTERM
		<-ctx.Done()
		return ExitFailure
	})
	if code != ExitFailure {
		t.Fatalf("exit %d", code)
	}
}
