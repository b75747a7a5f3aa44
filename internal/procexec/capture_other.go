//go:build !linux

package procexec

import "os/exec"

// captured is nothing here: commands keep the pipes os/exec gives them,
// which hand output on as it is printed.
type captured struct{ err error }

func capture(*exec.Cmd) (*captured, error) { return &captured{}, nil }
func (*captured) deliver() int64           { return 0 }
func (*captured) close()                   {}
