// Package procexec is the one place knit's own runners start processes:
// a process group per command, SIGINT on cancellation and SIGKILL only after
// a grace period, and death of the child when knit itself dies.
package procexec

import (
	"context"
	"os/exec"
	"syscall"
	"time"
)

// Grace is how long a cancelled command has to exit after SIGINT before it is killed.
const Grace = 10 * time.Second

// Command returns an exec.Cmd for name/args that, when ctx is cancelled,
// interrupts its whole process group and kills it only after Grace.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid: true,
		// If knit is killed outright, the tool is interrupted rather than orphaned.
		Pdeathsig: syscall.SIGINT,
	}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	}
	cmd.WaitDelay = Grace
	return cmd
}
