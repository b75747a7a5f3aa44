package procexec

import (
	"os"
	"os/exec"
	"syscall"
)

const noFollow = syscall.O_NOFOLLOW

// owner is info's owner and link count.
func owner(info os.FileInfo) (uid, links int, ok bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, false
	}
	return int(st.Uid), int(st.Nlink), true
}

func confine(cmd *exec.Cmd, s *Sandbox) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = sysProcAttr()
	}
	cmd.SysProcAttr.Credential = &syscall.Credential{Uid: s.UID, Gid: s.GID, Groups: []uint32{}}
}
