//go:build !linux

package procexec

import (
	"errors"
	"os/exec"
)

// confine cannot confine here (Sandbox.Check fails first, so knit serve
// runs no preview's code): a command that gets here does not start.
func confine(cmd *exec.Cmd, _ *Sandbox) {
	cmd.Err = errors.New("a sandbox needs Linux")
}
