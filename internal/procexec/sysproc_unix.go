//go:build unix && !linux

package procexec

import "syscall"

// sysProcAttr puts the command in a new process group. There is no
// parent-death signal here: if knit is killed outright, the command is orphaned.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
