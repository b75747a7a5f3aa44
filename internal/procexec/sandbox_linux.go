package procexec

import (
	"os/exec"
	"syscall"
)

func confine(cmd *exec.Cmd, s *Sandbox) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = sysProcAttr()
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: s.UID, Gid: s.GID, Groups: []uint32{}}
}
