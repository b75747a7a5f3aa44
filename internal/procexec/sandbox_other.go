//go:build !linux

package procexec

import (
	"errors"
	"os"
	"os/exec"
)

const noFollow = 0

func owner(os.FileInfo) (uid, links int, ok bool) { return 0, 0, false }

// confine cannot confine here (Sandbox.Check fails first, so knit serve
// runs no preview's code): a command that gets here does not start.
func confine(cmd *exec.Cmd, _ *Sandbox) {
	cmd.Err = errors.New("a sandbox needs Linux")
}
