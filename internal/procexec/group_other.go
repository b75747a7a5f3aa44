//go:build !unix

package procexec

import (
	"os"
	"syscall"
	"time"
)

// sysProcAttr has nothing to set where there are no process groups.
func sysProcAttr() *syscall.SysProcAttr { return nil }

// interruptGroup kills the command: without process groups and SIGINT
// there is no gentler signal to send.
func interruptGroup(p *os.Process) error { return p.Kill() }

// killGroupAfter has no group to kill; interruptGroup already killed the command.
func killGroupAfter(*os.Process, time.Duration) {}
