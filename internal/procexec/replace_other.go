//go:build !unix

package procexec

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
)

// Replace runs the program at path with argv (argv[0] included), this
// process's streams and environment, and exits with its status: without
// exec(2), the nearest to becoming it. It returns only when the program
// cannot be started.
func Replace(path string, argv []string) error {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		os.Exit(0)
	case errors.As(err, &ee):
		os.Exit(ee.ExitCode())
	}
	return fmt.Errorf("run %s: %w", path, err)
}
