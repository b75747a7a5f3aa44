package procexec

import "syscall"

// sysProcAttr puts the command in a new process group and, should knit be
// killed outright, has the kernel interrupt the command rather than orphan it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGINT}
}
