package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// Sample is one measured process.
type Sample struct {
	Wall time.Duration
	// MaxRSS is the peak resident set size in bytes, as wait4 reports it:
	// the process's own, or a waited-for child's if that was larger.
	MaxRSS int64
	// SelfRSS is the process's own peak resident set size (VmHWM), sampled
	// from /proc while it runs; 0 where /proc is missing. Unlike MaxRSS it
	// never counts a child, so it is knit's own memory without the tools'.
	SelfRSS int64
	// CPU is the user and system time of the process and of the children
	// it waited for (for knit: the tools it ran).
	CPU    time.Duration
	Stdout []byte
}

// Exec runs a command with extra environment variables and measures it.
// An exit code other than 0 or one listed in okCodes is an error carrying
// the command's output.
func Exec(ctx context.Context, env []string, okCodes []int, name string, args ...string) (Sample, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Start()
	var self int64
	if err == nil {
		stop := make(chan struct{})
		polled := make(chan int64)
		go func() { polled <- pollHWM(cmd.Process.Pid, stop) }()
		err = cmd.Wait()
		close(stop)
		self = <-polled
	}
	s := Sample{Wall: time.Since(start), Stdout: stdout.Bytes(), SelfRSS: self}
	if cmd.ProcessState != nil {
		s.MaxRSS = maxRSS(cmd.ProcessState)
		s.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		for _, c := range okCodes {
			if ee.ExitCode() == c {
				return s, nil
			}
		}
	}
	if err != nil {
		return s, fmt.Errorf("%s %v: %w\n%s%s", name, args, err, lastLines(stdout.Bytes(), 20), lastLines(stderr.Bytes(), 20))
	}
	return s, nil
}

func lastLines(b []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return append(bytes.Join(lines, []byte("\n")), '\n')
}

// pollHWM reads pid's VmHWM (its own peak resident set) every 10 ms until
// stop is closed and returns the largest value seen, in bytes. The last
// reading before the process exits is close to its true peak.
func pollHWM(pid int, stop <-chan struct{}) int64 {
	path := fmt.Sprintf("/proc/%d/status", pid)
	var peak int64
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if data, err := os.ReadFile(path); err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
					var kb int64
					if _, err := fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb); err == nil {
						peak = max(peak, kb*1024)
					}
				}
			}
		}
		select {
		case <-stop:
			return peak
		case <-t.C:
		}
	}
}
