package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

// Sample is one measured process.
type Sample struct {
	Wall time.Duration
	// MaxRSS is the peak resident set size in bytes, as wait4 reports it:
	// the process's own, or a waited-for child's if that was larger.
	MaxRSS int64
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
	err := cmd.Run()
	s := Sample{Wall: time.Since(start), Stdout: stdout.Bytes()}
	if cmd.ProcessState != nil {
		s.MaxRSS = maxRSS(cmd.ProcessState)
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
